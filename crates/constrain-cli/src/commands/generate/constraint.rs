//! From the constraint flags to a grammar, before any model is loaded.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use constrain::{CompileOptions, Grammar, Limits, SchemaOptions, Separators, Whitespace};

use super::Args;

/// The grammar the output must follow, and how to name it in messages.
///
/// Without the llama.cpp backend the constraint is still checked, but never used.
#[cfg_attr(not(feature = "llama"), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct Constraint {
    /// The grammar.
    pub grammar: Grammar,
    /// `--schema person.json`, `--regex ...`: what the user asked for.
    pub description: String,
    /// The `--limit` budgets left for compiling the grammar for the vocabulary (the
    /// compile time spent on the schema is taken off).
    pub limits: Limits,
}

/// The grammar the flags ask for; `None` for unconstrained generation.
///
/// Schema warnings (ignored annotations, unknown formats) are printed to stderr: they are
/// accepted but not enforced, and the user should know.
pub(crate) fn from_args(args: &Args) -> anyhow::Result<Option<Constraint>> {
    let started = Instant::now();
    let limits = crate::commands::limits::from_args(&args.limits)?;
    let (constraint, description) = if let Some(path) = &args.schema {
        let text = read_source(path, "schema", &limits)?;
        let schema = constrain::parse_schema(&text, &limits)
            .with_context(|| format!("reading the schema {}", path.display()))?;
        let mut options = schema_options(args);
        options.resources = crate::commands::schema_resources::load(&args.resource)?;
        (
            constrain::Constraint::JsonSchemaWith(schema, options),
            format!("--schema {}", path.display()),
        )
    } else if args.json {
        // The empty schema accepts every JSON value.
        (
            constrain::Constraint::JsonSchemaWith(serde_json::json!({}), schema_options(args)),
            "--json".into(),
        )
    } else if let Some(path) = &args.grammar {
        let text = read_source(path, "grammar", &limits)?;
        (
            constrain::Constraint::Gbnf(text),
            format!("--grammar {}", path.display()),
        )
    } else if let Some(path) = &args.lark {
        let text = read_source(path, "grammar", &limits)?;
        (
            constrain::Constraint::Lark(text),
            format!("--lark {}", path.display()),
        )
    } else if let Some(path) = &args.structural_tag {
        let text = read_source(path, "structural tag", &limits)?;
        let tag = serde_json::from_str(&text)
            .with_context(|| format!("reading the structural tag {}", path.display()))?;
        (
            constrain::Constraint::StructuralTag(tag),
            format!("--structural-tag {}", path.display()),
        )
    } else if let Some(pattern) = &args.regex {
        (
            constrain::Constraint::Regex(pattern.clone()),
            format!("--regex {pattern:?}"),
        )
    } else {
        return Ok(None);
    };
    // The schemas inside a structural tag take the layout of `--schema`'s.
    let options = CompileOptions {
        schema: schema_options(args),
        limits: limits.clone(),
    };
    let built = constraint
        .build(&options)
        .with_context(|| format!("compiling {description}"))?;
    for warning in &built.warnings {
        eprintln!("warning: {description}: {warning}");
    }
    Ok(Some(Constraint {
        grammar: built.grammar,
        description,
        limits: limits.after(started.elapsed()),
    }))
}

/// The text of the `what` file at `path`, refused by its size before it is read when it is
/// over [`Limits::max_source_bytes`].
fn read_source(path: &Path, what: &str, limits: &Limits) -> anyhow::Result<String> {
    let reading = || format!("reading the {what} {}", path.display());
    let len = std::fs::metadata(path).with_context(reading)?.len();
    limits
        .check_source_len(usize::try_from(len).unwrap_or(usize::MAX))
        .with_context(|| format!("the {what} {} is {len} bytes", path.display()))?;
    std::fs::read_to_string(path).with_context(reading)
}

/// The specification's semantics, in one fixed layout: one line, `", "` and `": "` between
/// items, strings spelled canonically unless `--escapes any` (as Python's `json.dumps` writes),
/// numbers as typed readers accept them unless `--numbers any`.
/// Small models given any freedom in whitespace tend to spend their tokens on newlines and
/// indentation instead of content, and given escapes, on `\u0061`-style spellings.
fn schema_options(args: &Args) -> SchemaOptions {
    SchemaOptions {
        whitespace: Whitespace::Compact,
        separators: Some(Separators::python()),
        property_order: args.property_order.into(),
        escapes: args.escapes.into(),
        numbers: args.numbers.into(),
        max_untyped_depth: args.max_untyped_depth,
        ..SchemaOptions::default()
    }
}
