//! Budgets that keep compilation and matching bounded in time and memory.

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
    /// Rules and expression nodes of the lowered grammar.
    pub max_grammar_size: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_terminal_nfa_bytes: 64 << 20,
            max_total_nfa_bytes: 512 << 20,
            max_inline_size: 1_000_000,
            max_lexer_states: 200_000,
            max_rows: 500_000,
            max_items_per_row: 100_000,
            max_states: 2_000_000,
            mask_cache_bytes: 512 << 20,
            max_grammar_size: 2_000_000,
        }
    }
}
