//! The constraint engine: grammars whose terminals are byte-level regular expressions, compiled
//! against a vocabulary into a lazily built automaton that knows, for every state, which tokens
//! are allowed.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod error;
mod grammar;
mod limits;

pub use error::{GrammarError, MatchError};
pub use grammar::{special_token_bytes, Expr, Grammar, GrammarBuilder, RuleId, SPECIAL_TOKEN_MARKER};
pub use limits::Limits;
