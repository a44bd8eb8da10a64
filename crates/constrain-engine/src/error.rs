//! Errors of grammar building, compilation and matching.

use thiserror::Error;

/// Why a grammar could not be built or compiled.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum GrammarError {
    /// A rule refers to a rule that has no definition.
    #[error("rule '{referenced_from}' refers to undefined rule '{name}'")]
    UndefinedRule {
        /// The missing rule.
        name: String,
        /// The rule that refers to it.
        referenced_from: String,
    },
    /// The start rule has no definition.
    #[error("the start rule '{name}' is not defined")]
    UndefinedStart {
        /// The start rule's name.
        name: String,
    },
    /// A rule was defined twice.
    #[error("rule '{name}' is defined twice")]
    DuplicateRule {
        /// The rule's name.
        name: String,
    },
    /// A rule id that does not belong to this builder.
    #[error("rule id {0} does not belong to this grammar")]
    UnknownRuleId(u32),
    /// A regular expression that does not parse.
    #[error("invalid regular expression {pattern:?}: {message}")]
    Regex {
        /// The pattern.
        pattern: String,
        /// What is wrong and where, as reported by the regex parser.
        message: String,
    },
    /// A construct the engine cannot enforce.
    #[error("unsupported: {what}")]
    Unsupported {
        /// What is unsupported, and where.
        what: String,
    },
    /// The grammar can never match anything.
    #[error("the grammar matches nothing: rule '{rule}' derives no finite string")]
    EmptyLanguage {
        /// The start rule.
        rule: String,
    },
    /// A compilation budget was exhausted (see [`Limits`](crate::Limits)).
    #[error("grammar too large: {budget} exceeds the limit of {limit}")]
    LimitExceeded {
        /// Which budget.
        budget: Budget,
        /// Its value.
        limit: usize,
    },
}

/// Why a matcher refused a token, bytes or an operation.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MatchError {
    /// The token is not allowed in the current state; the state is unchanged.
    #[error("token {token} is not allowed here")]
    TokenNotAllowed {
        /// The token id.
        token: u32,
    },
    /// The token id is outside the vocabulary.
    #[error("token {token} is outside the vocabulary of {vocab_size} ids")]
    UnknownToken {
        /// The token id.
        token: u32,
        /// The logits width.
        vocab_size: usize,
    },
    /// The bytes are not a valid continuation; the state is unchanged.
    #[error("bytes rejected at offset {offset}")]
    BytesRejected {
        /// Offset of the first byte that could not be consumed.
        offset: usize,
    },
    /// The matcher already reached the end of sequence.
    #[error("the sequence is already finished")]
    Finished,
    /// Rolling back more tokens than were accepted.
    #[error("cannot roll back {requested} tokens: only {available} were accepted")]
    RollbackTooFar {
        /// Tokens asked for.
        requested: usize,
        /// Tokens available.
        available: usize,
    },
    /// The mask buffer has the wrong length.
    #[error("mask buffer has {got} words, expected {expected}")]
    MaskLength {
        /// Words given.
        got: usize,
        /// Words needed: `ceil(logits_width / 32)`.
        expected: usize,
    },
    /// A terminal's automaton, built when first needed, could not be built.
    #[error("cannot build the automaton of terminal {pattern:?}: {message}")]
    Terminal {
        /// The terminal's regular expression.
        pattern: String,
        /// What went wrong.
        message: String,
    },
    /// The token budget is too small for the constraint to complete: the shortest completion
    /// from here takes more tokens than are left.
    #[error("this constraint needs at least {needed} tokens, but the budget is {budget}")]
    BudgetTooSmall {
        /// Tokens the output needs in all (those accepted so far and the fewest to complete).
        needed: usize,
        /// The budget.
        budget: usize,
    },
    /// A run-time budget of the lazily built automaton was exhausted (see
    /// [`Limits`](crate::Limits)).
    #[error("automaton too large: {budget} exceeds the limit of {limit}")]
    LimitExceeded {
        /// Which budget.
        budget: Budget,
        /// Its value.
        limit: usize,
    },
}

/// Which budget an error says was exceeded ([`GrammarError::LimitExceeded`],
/// [`MatchError::LimitExceeded`], and the front-ends' errors for the budgets of
/// [`Limits`](crate::Limits) they check): a value to match on, where a caller treats one budget
/// apart (a server that answers a compile-time overrun with its own advice).
///
/// Most budgets are a field of `Limits`, named by [`Budget::limit_name`] as
/// [`Limits::set`](crate::Limits::set) and `--limit NAME=VALUE` name them; a few are fixed
/// bounds of the engine. `Display` gives the words the error messages use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Budget {
    /// `Limits::max_source_bytes`.
    SourceBytes,
    /// `Limits::max_schema_depth`.
    SchemaDepth,
    /// `Limits::max_compile_time`; the error's limit is in milliseconds.
    CompileTime,
    /// `Limits::max_terminal_nfa_bytes`.
    TerminalNfaBytes,
    /// `Limits::max_total_nfa_bytes`.
    TotalNfaBytes,
    /// `Limits::max_inline_size`: a regular expression too large to inline that cannot be
    /// split into rules either.
    InlineSize,
    /// `Limits::max_lexer_states`.
    LexerStates,
    /// `Limits::max_rows`.
    Rows,
    /// `Limits::max_items_per_row`.
    ItemsPerRow,
    /// `Limits::max_states`.
    States,
    /// `Limits::max_grammar_size`, for the lowered grammar.
    GrammarSize,
    /// `Limits::max_grammar_size`, for the copies a counted repetition makes.
    RepetitionCount,
    /// Twice `Limits::max_grammar_size`, for the grammar once unordered items are expanded.
    ExpandedGrammarSize,
    /// Fixed: how deep [`Expr`](crate::Expr)s nest (the lowering recurses that deep).
    ExprNesting,
    /// Fixed: lexer states searched for one shortest completion.
    CompletionSearch,
    /// Fixed: NFA states times edges of a graph with edge bounds (counted states are numbered
    /// in 31 bits).
    CountedGraph,
}

impl Budget {
    /// The name of the `Limits` field that sets this budget (as `Limits::set` and
    /// `--limit NAME=VALUE` take it); `None` for the fixed bounds.
    ///
    /// ```
    /// use constrain_engine::{Budget, Limits};
    /// assert_eq!(Budget::CompileTime.limit_name(), Some("max_compile_time"));
    /// assert!(Limits::NAMES.iter().any(|(n, _)| Some(*n) == Budget::Rows.limit_name()));
    /// assert_eq!(Budget::ExprNesting.limit_name(), None);
    /// ```
    pub fn limit_name(self) -> Option<&'static str> {
        Some(match self {
            Budget::SourceBytes => "max_source_bytes",
            Budget::SchemaDepth => "max_schema_depth",
            Budget::CompileTime => "max_compile_time",
            Budget::TerminalNfaBytes => "max_terminal_nfa_bytes",
            Budget::TotalNfaBytes => "max_total_nfa_bytes",
            Budget::InlineSize => "max_inline_size",
            Budget::LexerStates => "max_lexer_states",
            Budget::Rows => "max_rows",
            Budget::ItemsPerRow => "max_items_per_row",
            Budget::States => "max_states",
            Budget::GrammarSize | Budget::RepetitionCount | Budget::ExpandedGrammarSize => {
                "max_grammar_size"
            }
            Budget::ExprNesting | Budget::CompletionSearch | Budget::CountedGraph => return None,
        })
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Budget::SourceBytes => "source text (bytes)",
            Budget::SchemaDepth => "nesting depth",
            Budget::CompileTime => "compile time (ms)",
            Budget::TerminalNfaBytes => "NFA size of one terminal (bytes)",
            Budget::TotalNfaBytes => "NFA size of all terminals (bytes)",
            Budget::InlineSize => "size of one regular expression (HIR nodes)",
            Budget::LexerStates => "lexer states",
            Budget::Rows => "parser rows",
            Budget::ItemsPerRow => "Earley items in one row",
            Budget::States => "matcher states",
            Budget::GrammarSize => "lowered grammar size",
            Budget::RepetitionCount => "repetition count",
            Budget::ExpandedGrammarSize => "grammar size with unordered items expanded",
            Budget::ExprNesting => "expression nesting",
            Budget::CompletionSearch => "lexer states searched for a shortest completion",
            Budget::CountedGraph => "NFA states times edges of a graph with edge bounds",
        })
    }
}
