//! From the constraint flags to a grammar, before any model is loaded.

use anyhow::Context;
use constrain_engine::Grammar;

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
}

/// The grammar the flags ask for; `None` for unconstrained generation.
///
/// Schema warnings (ignored annotations, unknown formats) are printed to stderr: they are
/// accepted but not enforced, and the user should know.
pub(crate) fn from_args(args: &Args) -> anyhow::Result<Option<Constraint>> {
    if let Some(path) = &args.schema {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the schema {}", path.display()))?;
        let mut options = schema_options(args);
        options.resources = crate::commands::schema_resources::load(&args.resource)?;
        let compiled = constrain_jsonschema::compile_str(&text, &options)
            .with_context(|| format!("compiling the schema {}", path.display()))?;
        for warning in &compiled.warnings {
            eprintln!("warning: {}: {warning}", path.display());
        }
        let description = format!("--schema {}", path.display());
        return Ok(Some(Constraint {
            grammar: compiled.grammar,
            description,
        }));
    }
    if args.json {
        // The empty schema accepts every JSON value.
        let compiled = constrain_jsonschema::compile(&serde_json::json!({}), &schema_options(args))
            .context("compiling the grammar of JSON values")?;
        return Ok(Some(Constraint {
            grammar: compiled.grammar,
            description: "--json".into(),
        }));
    }
    if let Some(path) = &args.grammar {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the grammar {}", path.display()))?;
        let grammar = constrain_gbnf::parse(&text)
            .with_context(|| format!("parsing the grammar {}", path.display()))?;
        let description = format!("--grammar {}", path.display());
        return Ok(Some(Constraint {
            grammar,
            description,
        }));
    }
    if let Some(pattern) = &args.regex {
        let grammar = Grammar::from_regex(pattern)
            .with_context(|| format!("compiling the regex {pattern:?}"))?;
        return Ok(Some(Constraint {
            grammar,
            description: format!("--regex {pattern:?}"),
        }));
    }
    Ok(None)
}

/// The specification's semantics, in one fixed layout: one line, `", "` and `": "` between
/// items, strings spelled canonically unless `--escapes any` (as Python's `json.dumps` writes).
/// Small models given any freedom in whitespace tend to spend their tokens on newlines and
/// indentation instead of content, and given escapes, on `\u0061`-style spellings.
fn schema_options(args: &Args) -> constrain_jsonschema::Options {
    constrain_jsonschema::Options {
        whitespace: constrain_jsonschema::Whitespace::Compact,
        separators: Some(constrain_jsonschema::Separators::python()),
        property_order: args.property_order.into(),
        escapes: args.escapes.into(),
        max_untyped_depth: args.max_untyped_depth,
        ..constrain_jsonschema::Options::default()
    }
}
