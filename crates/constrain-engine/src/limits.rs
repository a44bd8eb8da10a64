//! Budgets that keep compilation and matching bounded in time and memory.

use std::time::{Duration, Instant};

use crate::error::{GrammarError, MatchError};

/// Nesting limit for parsed regular expressions.
pub(crate) const REGEX_NEST_LIMIT: u32 = 250;

/// Budgets of a compiled grammar. Exceeding one is an error, never a hang or an abort.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Heap bytes one terminal's NFA may use.
    pub max_terminal_nfa_bytes: usize,
    /// Heap bytes of all terminal NFAs together.
    pub max_total_nfa_bytes: usize,
    /// Size (rough NFA states) up to which a regular expression is inlined into one terminal;
    /// larger ones stay rules, so nested counted repetitions cannot blow up one automaton.
    pub max_inline_size: usize,
    /// Lexer automaton states (sets of NFA states) built lazily over the grammar's lifetime.
    pub max_lexer_states: usize,
    /// Parser rows (interned Earley sets) built lazily over the grammar's lifetime.
    pub max_rows: usize,
    /// Earley items in one row.
    pub max_items_per_row: usize,
    /// Matcher states (lexer and parser configurations) built lazily.
    pub max_states: usize,
    /// Bytes of cached token masks kept; older masks are dropped beyond it.
    pub mask_cache_bytes: usize,
    /// Rules and expression nodes of the lowered grammar (twice that once unordered items,
    /// [`Expr::Unordered`](crate::Expr::Unordered), are expanded as inputs reach them).
    pub max_grammar_size: usize,
    /// Wall-clock budget of [`CompiledGrammar::new`](crate::CompiledGrammar::new); `None` for
    /// no limit.
    pub max_compile_time: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_terminal_nfa_bytes: 64 << 20,
            max_total_nfa_bytes: 512 << 20,
            max_inline_size: 80_000,
            max_lexer_states: 200_000,
            max_rows: 500_000,
            max_items_per_row: 100_000,
            max_states: 2_000_000,
            mask_cache_bytes: 512 << 20,
            max_grammar_size: 2_000_000,
            max_compile_time: Some(Duration::from_secs(60)),
        }
    }
}

/// What a [`GrammarError::LimitExceeded`] (and the JSON Schema compiler's `TooComplex`) calls
/// the compile-time budget; its limit is in milliseconds.
pub const COMPILE_TIME: &str = "compile time (ms)";

/// When a compilation started and when it must give up.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    at: Option<Instant>,
    limit: Duration,
}

impl Deadline {
    pub(crate) fn after(limit: Option<Duration>) -> Deadline {
        Deadline {
            at: limit.map(|l| Instant::now() + l),
            limit: limit.unwrap_or(Duration::MAX),
        }
    }

    /// An error once the deadline has passed, for the lazily built parts.
    pub(crate) fn check_match(&self) -> Result<(), MatchError> {
        self.check().map_err(|_| MatchError::LimitExceeded {
            what: COMPILE_TIME,
            limit: usize::try_from(self.limit.as_millis()).unwrap_or(usize::MAX),
        })
    }

    /// An error once the deadline has passed.
    pub(crate) fn check(&self) -> Result<(), GrammarError> {
        match self.at {
            Some(at) if Instant::now() >= at => Err(GrammarError::LimitExceeded {
                what: COMPILE_TIME,
                limit: usize::try_from(self.limit.as_millis()).unwrap_or(usize::MAX),
            }),
            _ => Ok(()),
        }
    }
}
