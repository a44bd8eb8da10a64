//! What the output must follow, and compiling it for a vocabulary.
//!
//! This is the one place that knows every kind of constraint: each variant of [`Constraint`]
//! names a front-end (or a composition of constraints), and [`Constraint::build`] is the only
//! dispatch over them. Surfaces (the command line, the server, the Python package) describe
//! what the user asked for as a `Constraint` and never call a front-end themselves, so a new
//! kind costs one front-end crate and one arm here.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use constrain_engine::{
    CompiledGrammar, Expr, Grammar, GrammarBuilder, GrammarError, Limits, MatchError, RuleId,
    TokenIndex,
};
use constrain_gbnf::GbnfError;
use constrain_jsonschema::{Options as SchemaOptions, SchemaError, Warning};
use constrain_lark::LarkError;
use constrain_sampling::SamplingError;
use serde_json::Value;
use thiserror::Error;

use crate::structural_tag::StructuralTagError;

mod structural;

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
    /// The Lark grammar does not parse, or uses what has no exact equivalent.
    #[error(transparent)]
    Lark(#[from] LarkError),
    /// The grammar cannot be compiled (bad regex, budget exceeded, empty language, ...).
    #[error(transparent)]
    Grammar(#[from] GrammarError),
    /// The matcher refused a token or ran out of budget.
    #[error(transparent)]
    Match(#[from] MatchError),
    /// The funnel could not draw a token.
    #[error(transparent)]
    Sampling(#[from] SamplingError),
    /// The structural tag's JSON is not one (the error names the JSON pointer).
    #[error(transparent)]
    StructuralTag(#[from] StructuralTagError),
    /// A part of a structural tag (a schema, a regular expression, a grammar) cannot be
    /// compiled.
    #[error("structural tag at \"{pointer}\": {source}")]
    StructuralTagPart {
        /// The JSON pointer of the part.
        pointer: String,
        /// Why it cannot be compiled.
        source: Box<Error>,
    },
}

/// What the output must follow.
///
/// The leaves name a language in one of the supported notations; [`Text`](Constraint::Text),
/// [`Sequence`](Constraint::Sequence), [`AnyOf`](Constraint::AnyOf) and
/// [`Repeat`](Constraint::Repeat) compose them (a tool call is the text `<tool_call>`, then a
/// schema, then `</tool_call>`; see [`ToolCallFormat`](crate::ToolCallFormat)).
#[derive(Clone, Debug)]
pub enum Constraint {
    /// A JSON document valid against this schema, with the schema options of the compilation
    /// ([`CompileOptions::schema`]: by default, schema semantics, bounded whitespace and every
    /// JSON spelling of strings).
    JsonSchema(Value),
    /// A JSON document valid against this schema, with these options whatever the
    /// compilation's (for generation, [`Escapes::Canonical`](crate::Escapes) keeps a model
    /// from spelling `"name"` as `"n\u0061me"`).
    JsonSchemaWith(Value, SchemaOptions),
    /// Text matching this regular expression (Rust `regex` syntax) in full.
    Regex(String),
    /// Text in the language of this GBNF grammar (start rule `root`).
    Gbnf(String),
    /// Text in the language of this GBNF grammar from the start rule named second.
    GbnfWithRoot(String, String),
    /// Text in the language of this Lark grammar (start rule `start`), as Lark's Earley
    /// parser accepts it; `%ignore`d terminals may come between tokens.
    Lark(String),
    /// A grammar built with [`GrammarBuilder`](crate::GrammarBuilder).
    Grammar(Grammar),
    /// Exactly this text.
    Text(String),
    /// Each part in turn.
    Sequence(Vec<Constraint>),
    /// Any one of the parts (none: nothing is accepted).
    AnyOf(Vec<Constraint>),
    /// Output of an XGrammar structural tag, given as its JSON (`{"type": "structural_tag",
    /// "format": {...}}`, or the older `structures` and `triggers`; see
    /// `docs/structural-tags.md`): tags with begin and end texts around schemas, regular
    /// expressions, grammars or text, free text in which triggers open tags, sequences and
    /// alternatives of them.
    StructuralTag(Value),
    /// `min` to `max` (unbounded when `None`) repetitions of `item`.
    Repeat {
        /// What is repeated.
        item: Box<Constraint>,
        /// Fewest repetitions.
        min: u32,
        /// Most repetitions.
        max: Option<u32>,
    },
}

/// How constraints are compiled: the schema options that [`Constraint::JsonSchema`] uses and
/// the budgets every stage runs within.
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// Options of schemas that do not carry their own.
    pub schema: SchemaOptions,
    /// Budgets: the source's size, a schema's depth, the automaton's sizes, and the compile
    /// time, which covers every stage of one compilation together.
    pub limits: Limits,
}

impl CompileOptions {
    /// The default schema options within `limits`.
    pub fn with_limits(limits: Limits) -> CompileOptions {
        CompileOptions {
            schema: SchemaOptions::default(),
            limits,
        }
    }
}

/// A constraint's grammar before it meets a vocabulary, and what the front-ends noted.
#[derive(Clone, Debug)]
pub struct Built {
    /// The grammar.
    pub grammar: Grammar,
    /// What is accepted but not enforced exactly (ignored annotations, unknown formats,
    /// narrowed bounds), each with its kind and place.
    pub warnings: Vec<Warning>,
}

/// A compiled constraint with what the compiler noted about it.
#[derive(Clone, Debug)]
pub struct Compilation {
    /// The grammar, bound to the vocabulary (its first mask computed).
    pub grammar: Arc<CompiledGrammar>,
    /// What is accepted but not enforced exactly, each with its kind and place.
    pub warnings: Vec<Warning>,
    /// How long compilation took.
    pub took: Duration,
}

impl Constraint {
    /// The grammar of this constraint, within the default [`Limits`].
    pub fn grammar(&self) -> Result<Grammar, Error> {
        self.grammar_with(&Limits::default())
    }

    /// The grammar of this constraint within `limits`: the source text's size
    /// ([`Limits::max_source_bytes`]), a schema's nesting depth and the compile time.
    pub fn grammar_with(&self, limits: &Limits) -> Result<Grammar, Error> {
        Ok(self
            .build(&CompileOptions::with_limits(limits.clone()))?
            .grammar)
    }

    /// The grammar of this constraint and the front-ends' warnings, compiled with `options`.
    /// The compile-time budget covers every part of a composed constraint together.
    pub fn build(&self, options: &CompileOptions) -> Result<Built, Error> {
        let started = Instant::now();
        let mut warnings = Vec::new();
        let grammar = Builder {
            options,
            started,
            warnings: &mut warnings,
            embedded: HashMap::new(),
        }
        .grammar(self)?;
        Ok(Built { grammar, warnings })
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
        Ok(self
            .compile_for(index, &CompileOptions::with_limits(limits.clone()))?
            .grammar)
    }

    /// Compiles the constraint for the vocabulary of `index` with `options`, keeping the
    /// front-ends' warnings and the time it took.
    pub fn compile_for(
        &self,
        index: Arc<TokenIndex>,
        options: &CompileOptions,
    ) -> Result<Compilation, Error> {
        let start = Instant::now();
        let built = self.build(options)?;
        let grammar =
            CompiledGrammar::new(&built.grammar, index, options.limits.after(start.elapsed()))?;
        Ok(Compilation {
            grammar,
            warnings: built.warnings,
            took: start.elapsed(),
        })
    }

    /// The text that identifies this constraint: equal keys compile to equal grammars under
    /// equal [`CompileOptions`] (the key of [`GrammarCache`](crate::GrammarCache)).
    pub fn key(&self) -> String {
        format!("{self:?}")
    }
}

/// A JSON Schema given as text, parsed within `limits`: its size is checked before it is
/// read, and a syntax error names its line and column.
pub fn parse_schema(text: &str, limits: &Limits) -> Result<Value, Error> {
    Ok(constrain_jsonschema::parse_str(text, limits)?)
}

/// One compilation's walk over a constraint tree: the options, the clock of the compile-time
/// budget, and the warnings gathered on the way.
struct Builder<'a> {
    options: &'a CompileOptions,
    started: Instant,
    warnings: &'a mut Vec<Warning>,
    /// The leaves embedded in the composed grammar so far, by key: a part that appears twice
    /// (a tool call's schema, first and after a separator) is compiled and embedded once.
    embedded: HashMap<String, RuleId>,
}

impl Builder<'_> {
    /// The budgets left now.
    fn limits(&self) -> Limits {
        self.options.limits.after(self.started.elapsed())
    }

    fn grammar(&mut self, constraint: &Constraint) -> Result<Grammar, Error> {
        let limits = self.limits();
        Ok(match constraint {
            Constraint::JsonSchema(schema) => self.schema(schema, &self.options.schema.clone())?,
            Constraint::JsonSchemaWith(schema, options) => self.schema(schema, options)?,
            Constraint::Regex(pattern) => {
                limits.check_source_len(pattern.len())?;
                Grammar::from_regex(pattern)?
            }
            Constraint::Gbnf(text) => {
                limits.check_source_len(text.len())?;
                constrain_gbnf::parse(text)?
            }
            Constraint::GbnfWithRoot(text, root) => {
                limits.check_source_len(text.len())?;
                constrain_gbnf::parse_with_root(text, root)?
            }
            Constraint::Lark(text) => self.lark(text, &limits)?,
            Constraint::Grammar(grammar) => grammar.clone(),
            Constraint::StructuralTag(value) => self.structural_tag(value)?,
            Constraint::Text(_)
            | Constraint::Sequence(_)
            | Constraint::AnyOf(_)
            | Constraint::Repeat { .. } => {
                let mut b = GrammarBuilder::new();
                let root = self.expr(&mut b, constraint)?;
                let root = b.add_rule("root", root)?;
                b.build(root)?
            }
        })
    }

    /// A Lark grammar, its `%json` schemas compiled with the compilation's schema options
    /// (their warnings kept with the others).
    fn lark(&mut self, text: &str, limits: &Limits) -> Result<Grammar, Error> {
        let noted = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (options, budget, sink) = (self.options.schema.clone(), limits.clone(), noted.clone());
        let compiler: constrain_lark::JsonSchemaCompiler = Arc::new(move |schema: &Value| {
            let compiled = constrain_jsonschema::compile_with_limits(schema, &options, &budget)
                .map_err(|e| e.to_string())?;
            if let Ok(mut warnings) = sink.lock() {
                warnings.extend(compiled.warnings);
            }
            Ok(compiled.grammar)
        });
        let grammar = constrain_lark::ParseOptions::new()
            .limits(limits.clone())
            .json_schema(compiler)
            .parse(text)?;
        if let Ok(mut warnings) = noted.lock() {
            self.warnings.append(&mut warnings);
        }
        Ok(grammar)
    }

    fn schema(&mut self, schema: &Value, options: &SchemaOptions) -> Result<Grammar, Error> {
        let compiled = constrain_jsonschema::compile_with_limits(schema, options, &self.limits())?;
        self.warnings.extend(compiled.warnings);
        Ok(compiled.grammar)
    }

    /// The expression of a composed constraint inside `b`: compositions map to expressions,
    /// every other kind is built on its own and embedded once under a fresh prefix.
    fn expr(&mut self, b: &mut GrammarBuilder, constraint: &Constraint) -> Result<Expr, Error> {
        Ok(match constraint {
            Constraint::Text(text) => {
                self.limits().check_source_len(text.len())?;
                Expr::literal(text)
            }
            Constraint::Sequence(items) => Expr::seq(
                items
                    .iter()
                    .map(|c| self.expr(b, c))
                    .collect::<Result<_, _>>()?,
            ),
            Constraint::AnyOf(items) => Expr::alt(
                items
                    .iter()
                    .map(|c| self.expr(b, c))
                    .collect::<Result<_, _>>()?,
            ),
            Constraint::Repeat { item, min, max } => Expr::Repeat {
                expr: Box::new(self.expr(b, item)?),
                min: *min,
                max: *max,
            },
            leaf => {
                let key = leaf.key();
                if let Some(&rule) = self.embedded.get(&key) {
                    return Ok(Expr::rule(rule));
                }
                let grammar = self.grammar(leaf)?;
                let prefix = format!("{}.", self.embedded.len() + 1);
                let rule = b.embed(&grammar, &prefix)?;
                self.embedded.insert(key, rule);
                Expr::rule(rule)
            }
        })
    }
}
