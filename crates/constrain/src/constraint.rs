//! What the output must follow, and compiling it for a vocabulary.

use std::sync::Arc;

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
    /// The grammar of this constraint.
    pub fn grammar(&self) -> Result<Grammar, Error> {
        Ok(match self {
            Constraint::JsonSchema(schema) => {
                constrain_jsonschema::compile(schema, &Options::default())?.grammar
            }
            Constraint::JsonSchemaWith(schema, options) => {
                constrain_jsonschema::compile(schema, options)?.grammar
            }
            Constraint::Regex(pattern) => Grammar::from_regex(pattern)?,
            Constraint::Gbnf(text) => constrain_gbnf::parse(text)?,
            Constraint::Grammar(grammar) => grammar.clone(),
        })
    }

    /// Compiles the constraint for the vocabulary of `index`, with default [`Limits`].
    pub fn compile(&self, index: Arc<TokenIndex>) -> Result<Arc<CompiledGrammar>, Error> {
        Ok(CompiledGrammar::new(
            &self.grammar()?,
            index,
            Limits::default(),
        )?)
    }
}
