//! Errors of GBNF parsing and grammar building, with the line and column they refer to.

use std::fmt;

use constrain_engine::GrammarError;
use thiserror::Error;

/// A position in the grammar text: 1-based line and column (columns count characters).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1, in characters.
    pub column: usize,
}

impl Location {
    /// The location of byte `offset` of `text` (clamped to the text's end).
    ///
    /// `\n`, `\r\n` and a lone `\r` each end a line, as they end a rule.
    pub(crate) fn of(text: &str, offset: usize) -> Location {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text.as_bytes()[..offset];
        let mut line = 1;
        let mut line_start = 0;
        for (i, &b) in before.iter().enumerate() {
            let ends_line = b == b'\n' || (b == b'\r' && before.get(i + 1) != Some(&b'\n'));
            if ends_line {
                line += 1;
                line_start = i + 1;
            }
        }
        let column = text[line_start..offset].chars().count() + 1;
        Location { line, column }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Why a GBNF grammar was rejected, and where.
///
/// Displays as `line:column: message`, e.g. `3:14: expected '::=' after rule name 'expr'`; errors
/// that concern the grammar as a whole (a missing root rule) have no location.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub struct GbnfError {
    kind: ErrorKind,
    location: Option<Location>,
}

impl GbnfError {
    pub(crate) fn at(kind: ErrorKind, location: Location) -> GbnfError {
        GbnfError {
            kind,
            location: Some(location),
        }
    }

    pub(crate) fn global(kind: ErrorKind) -> GbnfError {
        GbnfError {
            kind,
            location: None,
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Where, if the error concerns one place of the text.
    pub fn location(&self) -> Option<Location> {
        self.location
    }

    /// The line of [`GbnfError::location`].
    pub fn line(&self) -> Option<usize> {
        self.location.map(|l| l.line)
    }

    /// The column of [`GbnfError::location`].
    pub fn column(&self) -> Option<usize> {
        self.location.map(|l| l.column)
    }
}

impl fmt::Display for GbnfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.location {
            Some(location) => write!(f, "{location}: {}", self.kind),
            None => write!(f, "{}", self.kind),
        }
    }
}

/// The kinds of [`GbnfError`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A rule definition must start with a name (letters, digits and `-`).
    #[error("expected a rule name, found {found}{hint}")]
    ExpectedRuleName {
        /// What is there instead, quoted, or `end of input`.
        found: String,
        /// A suggestion, starting with `: ` (or empty).
        hint: &'static str,
    },
    /// A rule name must be followed by `::=` on the same line.
    #[error("expected '::=' after rule name '{rule}'")]
    ExpectedDefinition {
        /// The rule's name.
        rule: String,
    },
    /// Something that cannot continue the rule's body; a rule ends at a line break that is
    /// not inside parentheses.
    #[error("unexpected {found} in the definition of '{rule}'{hint}")]
    Unexpected {
        /// What was found, quoted.
        found: String,
        /// The rule being defined.
        rule: String,
        /// A suggestion, starting with `: ` (or empty).
        hint: &'static str,
    },
    /// A `"` literal without its closing quote.
    #[error("unterminated string literal")]
    UnterminatedLiteral,
    /// A `[` class without its closing bracket.
    #[error("unterminated character class")]
    UnterminatedClass,
    /// `[]` or `[^]`.
    #[error("empty character class")]
    EmptyClass,
    /// A range whose start is after its end, such as `[z-a]`.
    #[error("character range {from}-{to} is reversed")]
    ReversedRange {
        /// The start, as written (`U+XXXX`).
        from: String,
        /// The end, as written (`U+XXXX`).
        to: String,
    },
    /// A `(` without its `)`.
    #[error("'(' opened at {opened} is never closed")]
    UnclosedGroup {
        /// Where the group starts.
        opened: Location,
    },
    /// An escape sequence GBNF does not know.
    #[error("unknown escape sequence '\\{0}'")]
    UnknownEscape(char),
    /// `\x`, `\u` or `\U` without the right number of hex digits.
    #[error("'\\{escape}' needs exactly {digits} hex digits")]
    BadHexEscape {
        /// `x`, `u` or `U`.
        escape: char,
        /// How many digits it takes.
        digits: usize,
    },
    /// A code point that is not a Unicode scalar value (a surrogate, or above `U+10FFFF`).
    #[error("U+{0:04X} is not a Unicode scalar value")]
    InvalidCodePoint(u32),
    /// `*`, `+`, `?` or `{…}` with nothing before it to repeat.
    #[error("'{operator}' must follow the item it repeats")]
    NothingToRepeat {
        /// The operator.
        operator: char,
    },
    /// A malformed `{m}`, `{m,}`, `{m,n}` or `{,n}`.
    #[error("malformed repetition: {0}")]
    BadRepetition(&'static str),
    /// `{m,n}` with `n < m`.
    #[error("repetition {{{min},{max}}}: the maximum is below the minimum")]
    RepetitionBoundsReversed {
        /// The minimum.
        min: u32,
        /// The maximum.
        max: u32,
    },
    /// A repetition count that does not fit in 32 bits.
    #[error("repetition count {0} is too large")]
    RepetitionCountOverflow(String),
    /// More mandatory repetitions than llama.cpp allows (it expands them one by one).
    #[error("at least {count} repetitions required, more than the limit of {limit}")]
    TooManyRepetitions {
        /// The minimum asked for.
        count: u32,
        /// The limit.
        limit: u64,
    },
    /// Nested repetitions whose expansion would be too large (llama.cpp's measure: rules of
    /// the repeated item times the repetition count).
    #[error(
        "repetition too large: an item of {rules} rules repeated {times} times exceeds the limit of {limit}"
    )]
    RepetitionTooComplex {
        /// Rules the repeated item stands for.
        rules: u64,
        /// The repetition count that counts (the maximum, or the minimum when unbounded).
        times: u64,
        /// The limit.
        limit: u64,
    },
    /// A malformed token terminal.
    #[error("malformed token: {0}")]
    BadToken(&'static str),
    /// A named token `<name>` that the parser was not told about.
    #[error("unknown special token '<{0}>' (write token ids as <[id]>, or declare the name)")]
    UnknownTokenName(String),
    /// Groups and repetitions nested too deeply.
    #[error("nesting deeper than {limit} levels of groups and repetitions")]
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// A rule defined twice.
    #[error("rule '{rule}' is defined twice (first at {first})")]
    DuplicateRule {
        /// The rule.
        rule: String,
        /// Where it was first defined.
        first: Location,
    },
    /// A reference to a rule that has no definition.
    #[error("undefined rule '{0}'")]
    UndefinedRule(String),
    /// The text defines no rule at all.
    #[error("the grammar defines no rules")]
    NoRules,
    /// The root (start) rule is not defined.
    #[error("no rule named '{root}' to start from (defined: {defined})")]
    MissingRoot {
        /// The root asked for.
        root: String,
        /// The rules that are defined, comma-separated (the first few).
        defined: String,
    },
    /// A rule that can reach itself without consuming input; llama.cpp rejects such grammars.
    #[error("left recursion: {}", .0.join(" -> "))]
    LeftRecursion(Vec<String>),
    /// The grammar core refused the grammar.
    #[error(transparent)]
    Grammar(#[from] GrammarError),
}
