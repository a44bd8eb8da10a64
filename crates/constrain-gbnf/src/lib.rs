//! GBNF (llama.cpp grammar) front-end

#![deny(missing_docs)]
