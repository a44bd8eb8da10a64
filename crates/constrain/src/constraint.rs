//! What the output must follow, and compiling it for a vocabulary.

use std::sync::Arc;
use std::time::Instant;

use constrain_engine::{CompiledGrammar, Grammar, GrammarError, Limits, MatchError, TokenIndex};
use constrain_gbnf::GbnfError;
use constrain_jsonschema::{Options, SchemaError};
use constrain_sampling::SamplingError;
use thiserror::Error;

/// Everything that can go wrong between a constraint and a sampled token.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// The JSON Schema cannot be compiled.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The GBNF grammar does not parse.
    #[error(transparent)]
    Gbnf(#[from] GbnfError),
    /// The grammar cannot be compiled (bad regex, budget exceeded, empty language, ...).
    #[error(transparent)]
    Grammar(#[from] GrammarError),
    /// The matcher refused a token or ran out of budget.
    #[error(transparent)]
    Match(#[from] MatchError),
    /// The funnel could not draw a token.
    #[error(transparent)]
    Sampling(#[from] SamplingError),
}

/// What the output must follow.
#[derive(Clone, Debug)]
pub enum Constraint {
    /// A JSON document valid against this schema (default options: schema semantics,
    /// bounded whitespace, every JSON spelling of strings; for generation,
    /// [`JsonSchemaWith`](Constraint::JsonSchemaWith) with [`Escapes::Canonical`](crate::Escapes)
    /// keeps a model from spelling `"name"` as `"n\u0061me"`).
    JsonSchema(serde_json::Value),
    /// A JSON document valid against this schema, with these options.
    JsonSchemaWith(serde_json::Value, Options),
    /// Text matching this regular expression (Rust `regex` syntax) in full.
    Regex(String),
    /// Text in the language of this GBNF grammar (start rule `root`).
    Gbnf(String),
    /// A grammar built with [`GrammarBuilder`](crate::GrammarBuilder).
    Grammar(Grammar),
}

impl Constraint {
    /// The grammar of this constraint, within the default [`Limits`].
    pub fn grammar(&self) -> Result<Grammar, Error> {
        self.grammar_with(&Limits::default())
    }

    /// The grammar of this constraint within `limits`: the source text's size
    /// ([`Limits::max_source_bytes`]), a schema's nesting depth and the schema compiler's time.
    pub fn grammar_with(&self, limits: &Limits) -> Result<Grammar, Error> {
        Ok(match self {
            Constraint::JsonSchema(schema) => {
                constrain_jsonschema::compile_with_limits(schema, &Options::default(), limits)?
                    .grammar
            }
            Constraint::JsonSchemaWith(schema, options) => {
                constrain_jsonschema::compile_with_limits(schema, options, limits)?.grammar
            }
            Constraint::Regex(pattern) => {
                limits.check_source_len(pattern.len())?;
                Grammar::from_regex(pattern)?
            }
            Constraint::Gbnf(text) => {
                limits.check_source_len(text.len())?;
                constrain_gbnf::parse(text)?
            }
            Constraint::Grammar(grammar) => grammar.clone(),
        })
    }

    /// Compiles the constraint for the vocabulary of `index`, with default [`Limits`].
    pub fn compile(&self, index: Arc<TokenIndex>) -> Result<Arc<CompiledGrammar>, Error> {
        self.compile_with(index, &Limits::default())
    }

    /// Compiles the constraint for the vocabulary of `index` within `limits`, every budget
    /// of them: the compile-time budget covers both stages (the front-end, then the
    /// automaton).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use constrain::{Constraint, Error, GrammarError, Limits, TokenIndex};
    ///
    /// let index = TokenIndex::new(constrain_testdata::byte_vocabulary());
    /// let limits = Limits { max_source_bytes: 16, ..Limits::default() };
    /// let long = Constraint::Regex("[a-z]+(, [a-z]+)*[.]".into());
    /// assert!(matches!(
    ///     long.compile_with(index, &limits),
    ///     Err(Error::Grammar(GrammarError::LimitExceeded { .. }))
    /// ));
    /// ```
    pub fn compile_with(
        &self,
        index: Arc<TokenIndex>,
        limits: &Limits,
    ) -> Result<Arc<CompiledGrammar>, Error> {
        let start = Instant::now();
        let grammar = self.grammar_with(limits)?;
        Ok(CompiledGrammar::new(
            &grammar,
            index,
            limits.after(start.elapsed()),
        )?)
    }
}
