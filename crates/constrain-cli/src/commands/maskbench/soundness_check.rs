//! Soundness of one schema's masks: documents drawn at random through the masks (see
//! [`super::sample`]) must all validate against the schema with an independent validator
//! (the `jsonschema` crate). A document that does not is the worst kind of bug: the engine let
//! a model write output that breaks the contract.

use std::sync::Arc;

use constrain_engine::{CompiledGrammar, Limits, Matcher, TokenIndex};
use constrain_jsonschema::WarningKind;
use serde_json::Value;

use super::sample::{Rng, WalkLimits, Walker};

/// What to check per schema.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Documents drawn per schema.
    pub documents: usize,
    /// Length limits of each walk.
    pub walk: WalkLimits,
    /// Engine budgets.
    pub limits: Limits,
}

impl Default for CheckOptions {
    fn default() -> CheckOptions {
        CheckOptions {
            documents: 20,
            walk: WalkLimits::default(),
            limits: Limits::default(),
        }
    }
}

/// The result for one schema.
#[derive(Debug)]
pub enum SchemaCheck {
    /// Our compiler refused the schema (not a soundness question).
    NotCompiled(String),
    /// The reference validator cannot use the schema, so nothing can be checked.
    NoValidator(String),
    /// Documents were drawn and checked.
    Checked(Checked),
}

/// Counts and failures of the documents of one schema.
#[derive(Debug, Default)]
pub struct Checked {
    /// Complete documents validated.
    pub validated: usize,
    /// Walks that ran out of tokens before the document was complete.
    pub unfinished: usize,
    /// The text of the first unfinished walk, to see where walks get stuck.
    pub unfinished_example: Option<String>,
    /// Complete documents the reference validator cannot judge (numbers beyond `f64`).
    pub unverifiable: usize,
    /// Documents that broke the schema, and walks that failed.
    pub failures: Vec<Failure>,
}

/// One bad document.
#[derive(Debug)]
pub struct Failure {
    /// Index of the document (its random stream is `Rng::for_item(schema id, index)`).
    pub document: usize,
    /// The document's text (lossy UTF-8).
    pub text: String,
    /// What is wrong with it.
    pub problem: String,
}

/// Compiles `schema`, draws `options.documents` documents and validates each.
pub fn check_schema(
    id: &str,
    schema: &Value,
    index: &Arc<TokenIndex>,
    options: &CheckOptions,
) -> SchemaCheck {
    let compiled =
        match constrain_jsonschema::compile(schema, &constrain_jsonschema::Options::default()) {
            Ok(compiled) => compiled,
            Err(err) => return SchemaCheck::NotCompiled(err.to_string()),
        };
    let grammar =
        match CompiledGrammar::new(&compiled.grammar, index.clone(), options.limits.clone()) {
            Ok(grammar) => grammar,
            Err(err) => return SchemaCheck::NotCompiled(err.to_string()),
        };
    let validator = match reference_validator(schema, &compiled.warnings) {
        Ok(validator) => validator,
        Err(err) => return SchemaCheck::NoValidator(err),
    };
    let walker = Walker::new(grammar.vocabulary(), options.walk);
    let initial = Matcher::new(grammar);
    let mut checked = Checked::default();
    for document in 0..options.documents {
        let mut rng = Rng::for_item(id, document as u64);
        let mut matcher = initial.clone();
        let drawn = match walker.walk(&mut matcher, &mut rng) {
            Ok(drawn) => drawn,
            Err((err, partial)) => {
                checked.failures.push(Failure {
                    document,
                    text: String::from_utf8_lossy(&partial.bytes).into_owned(),
                    problem: format!("walk failed: {err}"),
                });
                continue;
            }
        };
        let text = String::from_utf8_lossy(&drawn.bytes).into_owned();
        if !drawn.complete {
            checked.unfinished += 1;
            checked.unfinished_example.get_or_insert(text);
            continue;
        }
        let problem = match std::str::from_utf8(&drawn.bytes) {
            Err(err) => Some(format!("not UTF-8: {err}")),
            Ok(utf8) => match serde_json::from_str::<Value>(utf8) {
                Err(err) if err.to_string().contains("number out of range") => {
                    checked.unverifiable += 1;
                    continue;
                }
                Err(err) => Some(format!("not JSON: {err}")),
                Ok(instance) => validator
                    .iter_errors(&instance)
                    .next()
                    .map(|err| format!("invalid at '{}': {err}", err.instance_path)),
            },
        };
        match problem {
            None => checked.validated += 1,
            Some(problem) => checked.failures.push(Failure {
                document,
                text,
                problem,
            }),
        }
    }
    SchemaCheck::Checked(checked)
}

/// The reference validator: formats are checked, except those the compiler reported as unknown
/// (annotations it does not enforce, by its documented policy).
fn reference_validator(
    schema: &Value,
    warnings: &[constrain_jsonschema::Warning],
) -> Result<jsonschema::Validator, String> {
    let mut options = jsonschema::options().should_validate_formats(true);
    for warning in warnings
        .iter()
        .filter(|w| w.kind == WarningKind::UnknownFormat)
    {
        // The pointer names the `format` keyword or the schema holding it.
        let name = match schema.pointer(&warning.pointer) {
            Some(Value::String(name)) => Some(name.as_str()),
            Some(Value::Object(keywords)) => keywords.get("format").and_then(Value::as_str),
            _ => None,
        };
        if let Some(name) = name {
            options = options.with_format(name.to_string(), |_: &str| true);
        }
    }
    options.build(schema).map_err(|err| err.to_string())
}

/// `n` items spread evenly over `items` (all of them when `n >= items.len()`), so that a
/// partial run still covers every source of a name-sorted corpus.
pub fn spread_sample<T: Clone>(items: &[T], n: usize) -> Vec<T> {
    if n >= items.len() {
        return items.to_vec();
    }
    (0..n).map(|i| items[i * items.len() / n].clone()).collect()
}
