//! What can go wrong compiling a schema, and what compiles with a caveat.

use constrain_engine::{Budget, GrammarError};
use thiserror::Error;

/// Why a schema could not be compiled. Every variant says where: a JSON pointer into the schema
/// document (`""` is the root), or a line and column for text that is not JSON.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema text is not JSON.
    #[error("schema is not valid JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the JSON parser reported.
        message: String,
    },
    /// A keyword of the JSON Schema vocabulary that cannot be enforced here (or this use of it).
    #[error("unsupported keyword '{keyword}' at {pointer}: {reason}")]
    Unsupported {
        /// The keyword.
        keyword: String,
        /// Where it is.
        pointer: String,
        /// Why it cannot be enforced.
        reason: String,
    },
    /// The schema breaks the specification (a keyword with a value of the wrong type...).
    #[error("invalid schema at {pointer}: {message}")]
    Invalid {
        /// Where.
        pointer: String,
        /// What is wrong.
        message: String,
    },
    /// A `$ref` that points nowhere inside the document.
    #[error("cannot resolve $ref '{reference}' at {pointer}: {reason}")]
    UnresolvedRef {
        /// The reference as written.
        reference: String,
        /// Where the `$ref` is.
        pointer: String,
        /// Why it does not resolve.
        reason: String,
    },
    /// A bound of the schema compiler itself was exceeded (`anyOf` expansion, automaton
    /// size...); the budgets of [`Limits`](constrain_engine::Limits) are
    /// [`SchemaError::LimitExceeded`].
    #[error("schema too complex at {pointer}: {what} exceeds the limit of {limit}")]
    TooComplex {
        /// Where.
        pointer: String,
        /// Which budget.
        what: String,
        /// Its value.
        limit: usize,
    },
    /// A budget of [`Limits`](constrain_engine::Limits) was exhausted: the schema's nesting
    /// depth, or the compile-time budget (its limit in milliseconds).
    #[error("schema too complex at {pointer}: {budget} exceeds the limit of {limit}")]
    LimitExceeded {
        /// Where.
        pointer: String,
        /// Which budget.
        budget: Budget,
        /// Its value.
        limit: usize,
    },
    /// The schema accepts no JSON value at all (such as `false`), so there is no grammar.
    #[error("the schema at {pointer} accepts no value")]
    Unsatisfiable {
        /// Where.
        pointer: String,
    },
    /// The grammar core refused the generated grammar.
    #[error("grammar error: {0}")]
    Grammar(#[from] GrammarError),
}

impl SchemaError {
    /// The JSON pointer of the place in the schema the error is about, if it has one.
    pub fn pointer(&self) -> Option<&str> {
        match self {
            SchemaError::Unsupported { pointer, .. }
            | SchemaError::Invalid { pointer, .. }
            | SchemaError::UnresolvedRef { pointer, .. }
            | SchemaError::TooComplex { pointer, .. }
            | SchemaError::LimitExceeded { pointer, .. }
            | SchemaError::Unsatisfiable { pointer } => Some(pointer),
            SchemaError::Json { .. } | SchemaError::Grammar(_) => None,
        }
    }
}

/// Something the compiled grammar does not enforce, or a keyword it ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// Where in the schema.
    pub pointer: String,
    /// The keyword concerned.
    pub keyword: String,
    /// What happened.
    pub kind: WarningKind,
    /// Details for a person.
    pub message: String,
}

/// The kinds of [`Warning`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WarningKind {
    /// A keyword outside the JSON Schema vocabulary (vendor extensions, `x-*`): an annotation.
    UnknownKeyword,
    /// A `format` this compiler does not know: an annotation, not enforced.
    UnknownFormat,
    /// With [`Options::lenient`](crate::Options::lenient): a keyword that could not be enforced
    /// was dropped, so the grammar accepts more than the schema.
    Dropped,
    /// With `lenient`: `oneOf` compiled as `anyOf` because its branches could not be proven
    /// disjoint.
    OneOfAsAnyOf,
    /// A constraint is enforced more strictly than the schema says (a huge `maxLength` capped,
    /// a length bound combined with a pattern on a subset): the grammar stays sound, but some
    /// valid documents cannot be produced.
    Narrowed,
    /// Very large `enum`s of strings: only the canonical spelling of each string (raw UTF-8,
    /// short escapes) is accepted, not every `\uXXXX` variant.
    CanonicalSpelling,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "'{}' at {}: {}",
            self.keyword, self.pointer, self.message
        )
    }
}

/// Pointers are shown as `/a/b`; the root is shown as `/` rather than an empty string.
pub(crate) fn pointer_or_root(pointer: &str) -> String {
    if pointer.is_empty() {
        "/".to_string()
    } else {
        pointer.to_string()
    }
}
