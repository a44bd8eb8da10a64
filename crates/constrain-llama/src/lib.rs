//! llama.cpp backend: guaranteed-valid generation with a GGUF model

#![deny(missing_docs)]
