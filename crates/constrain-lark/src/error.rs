//! Errors of Lark parsing and grammar building, with the line and column they refer to.

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
    pub(crate) fn of(text: &str, offset: usize) -> Location {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = text[line_start..offset].chars().count() + 1;
        Location { line, column }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Why a Lark grammar was rejected, and where.
///
/// Displays as `line:column: message`, e.g. `3:9: undefined rule 'value'`; errors that concern
/// the grammar as a whole (no `start` rule, a budget of the grammar core) have no location.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub struct LarkError {
    kind: ErrorKind,
    location: Option<Location>,
}

impl LarkError {
    pub(crate) fn at(kind: ErrorKind, text: &str, offset: usize) -> LarkError {
        LarkError {
            kind,
            location: Some(Location::of(text, offset)),
        }
    }

    pub(crate) fn global(kind: ErrorKind) -> LarkError {
        LarkError {
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

    /// The line of [`LarkError::location`].
    pub fn line(&self) -> Option<usize> {
        self.location.map(|l| l.line)
    }

    /// The column of [`LarkError::location`].
    pub fn column(&self) -> Option<usize> {
        self.location.map(|l| l.column)
    }
}

impl fmt::Display for LarkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.location {
            Some(location) => write!(f, "{location}: {}", self.kind),
            None => write!(f, "{}", self.kind),
        }
    }
}

/// The kinds of [`LarkError`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Something the grammar's syntax does not allow here.
    #[error("unexpected {found}: expected {expected}")]
    Unexpected {
        /// What was found, quoted, or `end of input`.
        found: String,
        /// What could have come instead.
        expected: &'static str,
    },
    /// A `"` literal without its closing quote on the same line.
    #[error("unterminated string literal")]
    UnterminatedString,
    /// A `/` regular expression without its closing `/`.
    #[error("unterminated regular expression")]
    UnterminatedRegex,
    /// A literal's escape sequence that does not name a character.
    #[error("bad escape in literal: {0}")]
    BadEscape(String),
    /// `""` or `//`: terminals must match something.
    #[error("empty literal: terminals must match at least one character")]
    EmptyLiteral,
    /// A terminal that can match the empty string, which Lark's Earley parser refuses.
    #[error("terminal {0} can match the empty string")]
    ZeroWidthTerminal(String),
    /// A `%json` schema that is not JSON, or that does not compile.
    #[error("%json: {0}")]
    Json(String),
    /// A construct of the notation that is recognized but not supported, with why.
    #[error("{construct} is not supported: {why}")]
    Unsupported {
        /// The construct, as written.
        construct: String,
        /// Why it is refused.
        why: &'static str,
    },
    /// A regular expression that cannot be translated exactly to the grammar core's syntax.
    #[error("regular expression /{pattern}/: {message}")]
    Regex {
        /// The pattern, as Python would read it.
        pattern: String,
        /// What is wrong with it.
        message: String,
    },
    /// `"a".."z"` whose ends are not single characters, or reversed.
    #[error("bad range {0}: both ends must be single characters, in order")]
    BadRange(String),
    /// `~ n..m` with `m < n`.
    #[error("repetition ~{min}..{max}: the maximum is below the minimum")]
    RepetitionBoundsReversed {
        /// The minimum.
        min: u32,
        /// The maximum.
        max: u32,
    },
    /// A repetition count above the limit, or nested repetitions whose product is.
    #[error("repetition count {count} exceeds the limit of {limit}")]
    TooManyRepetitions {
        /// The count (the product, for nested repetitions).
        count: u64,
        /// The limit.
        limit: u64,
    },
    /// Groups nested too deeply.
    #[error("nesting deeper than {limit} levels of groups")]
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// A rule or terminal defined twice.
    #[error("{0} is defined twice (first at {1})")]
    Duplicate(String, Location),
    /// A reference to a rule or terminal that has no definition.
    #[error("undefined {what} '{name}'")]
    Undefined {
        /// `rule`, `terminal` or `template`.
        what: &'static str,
        /// Its name.
        name: String,
    },
    /// A terminal whose definition refers to a rule (terminals must be regular).
    #[error("terminal {terminal} refers to rule '{rule}': terminals may only use terminals and literals")]
    RuleInTerminal {
        /// The terminal (or `%ignore`).
        terminal: String,
        /// The rule.
        rule: String,
    },
    /// A terminal that refers to itself, directly or not.
    #[error("terminal {0} is recursive")]
    RecursiveTerminal(String),
    /// A template used with the wrong number of arguments.
    #[error("template {name} takes {expected} arguments, {found} given")]
    TemplateArity {
        /// The template.
        name: String,
        /// How many it takes.
        expected: usize,
        /// How many were given.
        found: usize,
    },
    /// More template instances than the limit, or arguments written longer than it
    /// (templates that instantiate themselves with growing arguments).
    #[error("more than {0} template instances, or arguments too long")]
    TooManyInstances(usize),
    /// `%import` of something other than the built-in `common` terminals.
    #[error(
        "cannot import {0}: only the terminals of 'common' are built in, and nothing is fetched"
    )]
    UnknownImport(String),
    /// The start rule is not defined.
    #[error("no rule named '{0}' to start from")]
    MissingStart(String),
    /// The grammar core refused the grammar.
    #[error(transparent)]
    Grammar(#[from] GrammarError),
}
