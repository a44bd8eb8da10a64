//! Token vocabularies: for every token id, its exact bytes and its kind.
//!
//! Masks are over token ids but grammars speak bytes; a [`Vocabulary`] is the bridge.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod vocabulary;

pub use vocabulary::{TokenKind, VocabError, Vocabulary};
