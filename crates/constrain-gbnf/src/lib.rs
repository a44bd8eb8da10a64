//! GBNF, the grammar format of llama.cpp, as a front-end of the grammar core: grammar text in,
//! [`Grammar`] out.
//!
//! ```
//! let grammar = constrain_gbnf::parse(r#"
//!     root   ::= item ("," item)*
//!     item   ::= [a-z]+ | number
//!     number ::= "-"? [0-9]{1,6}   # at most six digits
//! "#)?;
//! assert_eq!(grammar.rule_name(grammar.start()), "root");
//! # Ok::<(), constrain_gbnf::GbnfError>(())
//! ```
//!
//! # The dialect
//!
//! The grammars llama.cpp accepts are accepted here, and the ones it refuses are refused:
//!
//! * `name ::= alternatives`, one rule per line; a line break inside parentheses, or right
//!   after `::=` or `|`, continues the rule. Names use letters, digits and `-`.
//! * Literals `"…"` with the escapes `\n \r \t \\ \" \[ \] \-` and `\xNN`, `\uNNNN`,
//!   `\UNNNNNNNN`, which all name a code point (`"\xe9"` is `é`, two bytes of UTF-8).
//! * Classes `[a-z0-9_]` and negated classes `[^"\\]`, `.` for any character.
//! * Repetition `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}` and `{,n}`; groups `( … )`; `|`; `#`
//!   comments to the end of the line.
//! * Special tokens `<[id]>` and "any token but this one" `!<[id]>`; named tokens such as
//!   `<|im_end|>` once declared with [`ParseOptions::special_token`].
//!
//! Like llama.cpp, the parser refuses left-recursive grammars (unless
//! [`ParseOptions::allow_left_recursion`]: the grammar core handles them), references to
//! undefined rules, a missing root rule, more than 2000 mandatory repetitions
//! (`"a"{5000}`) and nested repetitions whose expansion is too large (see the limits below).
//! Where llama.cpp would be silently lax, the parser says so instead: a rule defined twice,
//! a reversed range `[z-a]`, an empty class `[]`, or `\uD800` (not a character) are errors.
//!
//! # Limits
//!
//! Parsing takes time linear in the text and never recurses more than 64 levels of groups and
//! repetitions (deeper grammars are an error). A maximum above 2000 (`"a"{0,5000}`) is
//! accepted, as llama.cpp does, and kept exact: at most 5000 repetitions.
//!
//! # Errors
//!
//! A [`GbnfError`] says what and where: `3:14: expected '::=' after rule name 'expr'`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod analysis;
mod error;
mod lexical;
mod lower;
mod parser;
mod repetition;
mod syntax;

use std::collections::HashMap;

pub use constrain_engine::Grammar;
pub use error::{ErrorKind, GbnfError, Location};

/// The start rule when none is named.
pub const DEFAULT_ROOT: &str = "root";

/// Parses a GBNF grammar that starts at the rule `root`.
pub fn parse(text: &str) -> Result<Grammar, GbnfError> {
    ParseOptions::new().parse(text)
}

/// Parses a GBNF grammar that starts at the rule `root`.
pub fn parse_with_root(text: &str, root: &str) -> Result<Grammar, GbnfError> {
    ParseOptions::new().root(root).parse(text)
}

/// How to parse: the start rule, left recursion, named special tokens.
///
/// ```
/// use constrain_gbnf::ParseOptions;
///
/// let grammar = ParseOptions::new()
///     .root("answer")
///     .special_token("<|end|>", 7)
///     .parse(r#"answer ::= ("yes" | "no") <|end|>"#)?;
/// # Ok::<(), constrain_gbnf::GbnfError>(())
/// ```
#[derive(Clone, Debug)]
pub struct ParseOptions {
    root: String,
    allow_left_recursion: bool,
    special_tokens: HashMap<String, u32>,
}

impl Default for ParseOptions {
    fn default() -> ParseOptions {
        ParseOptions::new()
    }
}

impl ParseOptions {
    /// Start at `root`, refuse left recursion, no named tokens.
    pub fn new() -> ParseOptions {
        ParseOptions {
            root: DEFAULT_ROOT.to_string(),
            allow_left_recursion: false,
            special_tokens: HashMap::new(),
        }
    }

    /// Start at the rule `name`.
    pub fn root(mut self, name: &str) -> ParseOptions {
        self.root = name.to_string();
        self
    }

    /// Accept left-recursive rules such as `expr ::= expr "+" term | term`.
    ///
    /// The grammar core parses any context-free grammar, but llama.cpp refuses these, so they
    /// are refused by default to keep grammars portable.
    pub fn allow_left_recursion(mut self, allow: bool) -> ParseOptions {
        self.allow_left_recursion = allow;
        self
    }

    /// Lets the grammar write the special token `id` by its text, e.g. `<|im_end|>` (the text
    /// includes the angle brackets, as in the vocabulary).
    pub fn special_token(mut self, text: &str, id: u32) -> ParseOptions {
        self.special_tokens.insert(text.to_string(), id);
        self
    }

    /// Parses `text` into a grammar.
    pub fn parse(&self, text: &str) -> Result<Grammar, GbnfError> {
        let rules = parser::parse_rules(text, &self.special_tokens)?;
        let index = analysis::index_rules(text, &rules)?;
        let root = analysis::find_root(&rules, &index, &self.root)?;
        if !self.allow_left_recursion {
            analysis::check_left_recursion(text, &rules, &index)?;
        }
        lower::lower(&rules, root)
    }
}
