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
    #[error("grammar too large: {what} exceeds the limit of {limit}")]
    LimitExceeded {
        /// Which budget.
        what: &'static str,
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
    /// A run-time budget of the lazily built automaton was exhausted (see [`Limits`](crate::Limits)).
    #[error("automaton too large: {what} exceeds the limit of {limit}")]
    LimitExceeded {
        /// Which budget.
        what: &'static str,
        /// Its value.
        limit: usize,
    },
}
