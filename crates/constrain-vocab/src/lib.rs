//! Token vocabularies: for every token id, its exact bytes and its kind.
//!
//! Masks are over token ids but grammars speak bytes; a [`Vocabulary`] is the bridge.
//! A [`Tokenizer`] builds one from a Hugging Face `tokenizer.json` and also encodes text
//! the way the tokenizer does.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod encoder;
mod eos;
mod prefix;
mod spelling;
mod tokenizer;
mod tokenizer_json;
mod vocabulary;

pub use eos::WELL_KNOWN_END_TOKENS;
pub use spelling::TokenSpelling;
pub use tokenizer::Tokenizer;
pub use vocabulary::{TokenKind, VocabError, Vocabulary, MAX_TOKEN_ID};
