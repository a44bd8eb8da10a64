//! Grammar-constrained decoding: compile a JSON Schema, regex or GBNF grammar and sample valid output from any model's logits

#![deny(missing_docs)]
