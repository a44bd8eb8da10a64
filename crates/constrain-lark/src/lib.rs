//! Lark grammars (the EBNF dialect of the `lark` Python package) as a front-end of the
//! grammar core: grammar text in, [`Grammar`] out.
//!
//! ```
//! let grammar = constrain_lark::parse(r#"
//!     start: pair ("," pair)*
//!     pair: CNAME "=" value
//!     ?value: SIGNED_NUMBER | ESCAPED_STRING
//!     %import common (CNAME, SIGNED_NUMBER, ESCAPED_STRING, WS)
//!     %ignore WS
//! "#)?;
//! assert_eq!(grammar.rule_name(grammar.start()), "$start");
//! # Ok::<(), constrain_lark::LarkError>(())
//! ```
//!
//! # The language of a grammar
//!
//! The language is the set of texts Lark's Earley parser with the dynamic lexer accepts from
//! the rule `start`: rules (lowercase) over terminals (uppercase names, string literals,
//! `/regex/` literals). Tree-shaping syntax leaves the language alone: `?rule`, `!rule`,
//! `_rule`, aliases `-> name`, rule and terminal priorities `.n` (they choose among parses and
//! among lexer matches; a recognizer accepts a text if any parse exists).
//!
//! `%ignore`d terminals may come before the first token, between any two tokens and after the
//! last one, never inside a terminal: where Lark's dynamic lexer tries them (at each point where
//! the parser expects a terminal, and once the start rule is complete).
//!
//! A text is accepted if any split of it into terminals parses. Lark's dynamic lexer tries,
//! for each expected terminal, only the match Python's `re` returns first (greedy, and for
//! alternations the first alternative that matches), so where a shorter match of a terminal
//! would be needed (`start: NAME "x"` with `NAME: /[a-z]+/` on `abx`) Lark rejects a text
//! that is accepted here; `lexer="dynamic_complete"` accepts it too. Greedy `%ignore`
//! matching is the same kind of difference. Grammars whose terminals end where the next one
//! cannot begin (the usual ones) see no difference.
//!
//! # The dialect
//!
//! * `rule: a b | c`, `TERMINAL: ...`, continued on lines that start with `|`; `//` and `#`
//!   comments.
//! * `"literal"`, `"literal"i`, `/regex/flags` (flags `i`, `m`, `s`, `u`), `"a".."z"`.
//! * `(...)`, `[...]`, `x?`, `x*`, `x+`, `x ~ n`, `x ~ n..m`, `|`.
//! * Templates: `_sep{x, sep}: x (sep x)*` used as `_sep{item, ","}`.
//! * `%import common.NAME`, `%import common.NAME -> ALIAS`, `%import common (A, B)`: the
//!   common terminals (numbers, strings, names, whitespace, comments) are built in.
//! * `%ignore` with a terminal, a literal or an expression of them.
//!
//! Refused, with the line and column: regex constructs with no exact equivalent
//! (look-around, back references, anchors, word boundaries, atomic groups, the `x` and `l`
//! flags), `%declare`, `%override`, `%extend`, imports of other modules, llguidance's
//! `%json {...}` and special tokens `<|...|>`, terminals that can match the empty string (as
//! Lark's Earley parser does), and rules or templates used inside terminals.
//!
//! # Limits
//!
//! The source's size is checked against [`Limits::max_source_bytes`] by
//! [`ParseOptions::limits`]; parsing never recurses more than 64 levels of groups; `~` counts
//! are at most 2000; at most 1000 template instances. The grammar core's own budgets apply
//! when the grammar is compiled.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod common;
mod error;
mod lexical;
mod literal;
mod lower;
mod parser;
mod pyregex;
mod syntax;

pub use constrain_engine::{Grammar, Limits};
pub use error::{ErrorKind, LarkError, Location};

/// The start rule when none is named.
pub const DEFAULT_START: &str = "start";

/// Parses a Lark grammar that starts at the rule `start`, within the default [`Limits`].
pub fn parse(text: &str) -> Result<Grammar, LarkError> {
    ParseOptions::new().parse(text)
}

/// How to parse: the start rule and the budgets.
///
/// ```
/// use constrain_lark::ParseOptions;
///
/// let grammar = ParseOptions::new().start("answer").parse(r#"answer: "yes"i | "no"i"#)?;
/// # Ok::<(), constrain_lark::LarkError>(())
/// ```
#[derive(Clone)]
pub struct ParseOptions {
    start: String,
    limits: Limits,
    json: Option<JsonSchemaCompiler>,
}

/// Compiles the schema of a `%json` (llguidance's extension): the grammar of JSON valid
/// against it, or why it cannot be compiled. This crate reads Lark only; the caller brings the
/// JSON Schema front-end (the `constrain` facade does).
pub type JsonSchemaCompiler =
    std::sync::Arc<dyn Fn(&serde_json::Value) -> Result<Grammar, String> + Send + Sync>;

impl std::fmt::Debug for ParseOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParseOptions")
            .field("start", &self.start)
            .field("limits", &self.limits)
            .field("json", &self.json.is_some())
            .finish()
    }
}

impl Default for ParseOptions {
    fn default() -> ParseOptions {
        ParseOptions::new()
    }
}

impl ParseOptions {
    /// Start at `start`, default limits.
    pub fn new() -> ParseOptions {
        ParseOptions {
            start: DEFAULT_START.to_string(),
            limits: Limits::default(),
            json: None,
        }
    }

    /// Start at the rule `name` (Lark's `start=` argument).
    pub fn start(mut self, name: &str) -> ParseOptions {
        self.start = name.to_string();
        self
    }

    /// The budgets: the source's size is checked before it is read.
    pub fn limits(mut self, limits: Limits) -> ParseOptions {
        self.limits = limits;
        self
    }

    /// Compiles `%json {...}` schemas with `compiler` (without one, a `%json` is an error).
    pub fn json_schema(mut self, compiler: JsonSchemaCompiler) -> ParseOptions {
        self.json = Some(compiler);
        self
    }

    /// Parses `text` into a grammar.
    pub fn parse(&self, text: &str) -> Result<Grammar, LarkError> {
        self.limits
            .check_source_len(text.len())
            .map_err(|e| LarkError::global(ErrorKind::Grammar(e)))?;
        let statements = parser::parse(text)?;
        lower::lower(text, &statements, &self.start, self.json.as_ref())
    }
}
