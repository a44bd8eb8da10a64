//! The constraint engine: grammars whose terminals are byte-level regular expressions, compiled
//! against a vocabulary into a lazily built automaton that knows, for every state, which tokens
//! are allowed.
//!
//! # Key types
//!
//! - [`Expr`], [`GrammarBuilder`], [`Grammar`]: the grammar core every front-end targets.
//! - [`TokenIndex`]: a vocabulary's token trie, built once per tokenizer.
//! - [`CompiledGrammar`]: a grammar bound to a token index; shared, `Send + Sync`.
//! - [`Matcher`]: one sequence's state: masks, accepting tokens, rollback, forced tokens.
//!
//! # Usage pattern
//!
//! Compile once, then per sequence: [`Matcher::fill_mask`] before each token, set the logits of
//! disallowed ids to `-inf`, sample, [`Matcher::accept_token`]; stop when
//! [`Matcher::is_finished`] or an end-of-sequence token was accepted.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod automaton;
mod bytes;
mod compiled;
mod completion;
mod discard;
mod error;
mod grammar;
mod inside_ends;
mod interner;
mod lexeme_masks;
mod lexer;
mod limits;
mod mask;
mod matcher;
mod parser;
mod terminal;
mod text_check;
mod text_run;
mod token_index;
mod transitions;

pub use bytes::{special_token_bytes, SPECIAL_TOKEN_MARKER};
pub use compiled::CompiledGrammar;
pub use completion::Completion;
pub use discard::{free_in_background, wait_for_background_frees};
pub use error::{Budget, GrammarError, MatchError};
pub use grammar::{
    Expr, Grammar, GrammarBuilder, GraphState, RegexGraph, RuleId, Unordered, UnorderedMember,
    MAX_EDGE_BOUND, MAX_EDGE_BOUND_WORK,
};
pub use limits::Limits;
pub use matcher::{fill_masks, Matcher};
pub use text_check::{BoundTextCheck, CheckState, TextCheck};
pub use token_index::TokenIndex;
