//! JSON Schema front-end: compiles schemas to the grammar core

#![deny(missing_docs)]
