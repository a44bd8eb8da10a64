//! JSON Schema front-end: compiles a schema (draft 2020-12, with the draft-07 and draft-04 forms
//! still common in the wild) into a [`Grammar`] of the grammar core,
//! such that every document the grammar accepts is valid against the schema and every valid
//! document (in the layout the [`Options`] allow) is accepted.
//!
//! ```
//! use constrain_jsonschema::{compile_str, Options};
//!
//! let compiled = compile_str(r#"{"type": "object", "properties": {"n": {"type": "integer"}}}"#,
//!                            &Options::default())?;
//! assert!(compiled.warnings.is_empty());
//! # Ok::<(), constrain_jsonschema::SchemaError>(())
//! ```
//!
//! # Policy
//!
//! Never silent: a keyword of the JSON Schema vocabulary that cannot be enforced exactly is a
//! [`SchemaError`] naming the keyword and its JSON pointer; [`Options::lenient`] turns it into a
//! [`Warning`] and drops it. Keywords outside the vocabulary (vendor extensions) and unknown
//! `format` names are annotations: accepted, and listed in [`Compiled::warnings`]. Where a
//! constraint is enforced more strictly than the schema says (the grammar stays sound, but some
//! valid documents cannot be produced), a [`WarningKind::Narrowed`] warning says so.
//!
//! # Keywords
//!
//! `type`, `enum`, `const`, `properties`, `required`, `additionalProperties`,
//! `patternProperties`, `propertyNames`, `minProperties`/`maxProperties`,
//! `dependentRequired`/`dependentSchemas` (and draft 7 `dependencies`), `items`/`prefixItems`
//! (and draft 7 `items` arrays with `additionalItems`), `minItems`/`maxItems`, `contains` with
//! `minContains`/`maxContains` (up to three counted at once, beside `prefixItems` too),
//! `minLength`/`maxLength`, `pattern`, `format`, `minimum`,
//! `maximum`, `exclusiveMinimum`/`exclusiveMaximum` (also draft 4's boolean form),
//! `multipleOf`, `allOf` (intersected), `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `$ref`
//! with `$defs`/`definitions`, `$id`, `$anchor`, JSON pointers with `~0`, `~1` and percent
//! escapes, and recursion; `$dynamicRef`/`$dynamicAnchor` (and 2019-09's
//! `$recursiveRef`/`$recursiveAnchor`), a schema being read once per dynamic scope it is
//! reached in; references to other documents registered in [`Options::resources`] (nothing is
//! fetched). `unevaluatedProperties` and `unevaluatedItems` are exact without in-place
//! applicators; next to them they consider one `anyOf` branch at a time (stricter when several
//! match).
//!
//! `oneOf` is exact: branches that cannot overlap become a union; overlapping ones become
//! "this branch and none of the others", which needs the complement of the others. Overlap is
//! judged within what is known of the instance there: the key a dependency implies, the
//! condition of a `then`, the sibling keywords of an `allOf`/`anyOf` (variants told apart by
//! the value of a key that only the surrounding schema requires are disjoint). Complements
//! (`not`, `else`, those `oneOf`s) exist for types, literals, numeric bounds, lengths,
//! patterns, required and forbidden properties, property schemas, `additionalProperties`,
//! `patternProperties`, `propertyNames`, item counts and `multipleOf` (the remainder
//! automaton with its accepting states flipped); the complement of `uniqueItems` or of a
//! `format` enforced on a subset is an error.
//!
//! `uniqueItems` is kept by the grammar for elements from a small finite set (`enum`,
//! booleans, null), and by a check beside the grammar for any values (no `items` schema) and
//! for strings whose language never runs out (no `maxLength`, no `pattern` or `format` of
//! bounded length): distinct elements are not a context-free language, so the grammar
//! generates the array and the check refuses a token that ends an element equal to an
//! earlier one (see `unique`). Leading positions (`prefixItems`) may be those, or booleans
//! and nulls more than the positions before them. The check follows the text by where values
//! stand; a place where an array may or may not have to be unique (an `anyOf` of both under
//! one key) is refused.
//!
//! Not supported (an error naming the keyword): `uniqueItems` over other elements (typed
//! numbers, objects, strings of bounded length, large `enum`s, `contains` beside it); references to documents that are neither the
//! schema nor registered; a
//! `minProperties` that undeclared keys would have to reach (they count once toward it: two
//! of them may spell the same key); the `regex`
//! format; look-behind, back-references and word boundaries in patterns (look-ahead right after
//! a leading `^` is supported).
//!
//! # Layout
//!
//! By default JSON whitespace may appear between tokens, at most [`Whitespace::DEFAULT_MAX`]
//! characters at a time, so both compact JSON and Python's `json.dumps` spelling are accepted;
//! [`Whitespace`] and [`Separators`] fix other layouts. Declared properties appear in the
//! order of `properties` ([`PropertyOrder::Schema`], as with other constrained-decoding
//! engines), with undeclared keys after them; [`PropertyOrder::Any`] lifts that (the engine
//! tracks the properties seen, for any number of them). Keys that only `required` names are not declared: they come after the declared
//! ones.
//!
//! # Numbers
//!
//! Numbers are compared by value, as the specification says (`1.0` is an integer and equals
//! `1`; in draft 4 documents it is not an integer). Which spellings are generated is
//! [`Options::numbers`]: by default ([`Numbers::Canonical`]) those typed readers accept:
//! integers as integer literals within the 64-bit signed range (a range wholly outside it is
//! kept), no `-0`, exponent notation only for magnitudes of at least `1e21` or below `1e-6`.
//! [`Numbers::Any`] accepts every spelling: plain decimal notation always, and exponent
//! notation where the constraints allow it exactly: for unconstrained numbers and for bounds
//! at zero (such as `minimum: 0`); integers are written without exponent. Under other bounds,
//! `const`/`enum` and `multipleOf` (or its `not`), exponent forms are rejected (the grammar
//! stays sound, but those spellings of valid values are not produced).
//!
//! # Strings
//!
//! Strings accept every JSON spelling of a character: raw UTF-8, the short escapes (`\"`,
//! `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`) and `\uXXXX` (surrogate pairs for characters outside
//! the basic plane; lone surrogates are rejected); only very large string `enum`s are limited
//! to their canonical spelling. Lengths count code points; `pattern` is an ECMA-262 regular
//! expression (with `\d`, `\w`, `\s` as ECMA defines them) that must match somewhere in the
//! string. Formats follow their RFCs; `date-time`/`time` (leap seconds only in UTC),
//! `email` (no quoted local parts; the local part's 64-octet limit shared out among its
//! dot-separated atoms) and `hostname` (at most 8 labels of 30 characters) are
//! enforced on a subset. A `maxLength` above 1024 is generated as 1024, and a length bound
//! that does not combine exactly with a pattern within the automaton budget is enforced by
//! giving each part of the pattern a share of the length (both with a warning).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod algebra;
mod compiler;
mod ctx;
mod deadline;
mod document;
mod emit;
mod error;
mod formats;
mod ir;
mod json_text;
mod number;
mod options;
mod parse;
mod re;
mod strings;
mod unique;
mod uri;
mod validate;

pub use error::{SchemaError, Warning, WarningKind};
pub use options::{
    AdditionalProperties, Escapes, Numbers, Options, PropertyOrder, Separators, Whitespace,
};

use constrain_engine::{Grammar, Limits};

/// A compiled schema: the grammar, and what it does not enforce.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The grammar of the documents the schema accepts.
    pub grammar: Grammar,
    /// Ignored annotations and, with [`Options::lenient`], dropped constraints.
    pub warnings: Vec<Warning>,
}

/// Compiles a schema given as a JSON value, within the default [`Limits`].
pub fn compile(schema: &serde_json::Value, options: &Options) -> Result<Compiled, SchemaError> {
    compile_with_limits(schema, options, &Limits::default())
}

/// Compiles a schema given as JSON text, within the default [`Limits`].
pub fn compile_str(schema_json: &str, options: &Options) -> Result<Compiled, SchemaError> {
    compile_str_with_limits(schema_json, options, &Limits::default())
}

/// Compiles a schema given as a JSON value within `limits`: its nesting depth
/// ([`Limits::max_schema_depth`], checked before anything recurses into it) and the
/// compile-time budget ([`Limits::max_compile_time`]).
pub fn compile_with_limits(
    schema: &serde_json::Value,
    options: &Options,
    limits: &Limits,
) -> Result<Compiled, SchemaError> {
    check_depth(schema, limits.max_schema_depth)?;
    compiler::compile(schema, options, limits.max_compile_time)
}

/// Compiles a schema given as JSON text within `limits`: its size
/// ([`Limits::max_source_bytes`], checked before it is parsed), then as
/// [`compile_with_limits`]. The JSON parser refuses nesting deeper than 128 whatever the limit.
pub fn compile_str_with_limits(
    schema_json: &str,
    options: &Options,
    limits: &Limits,
) -> Result<Compiled, SchemaError> {
    let schema = parse_str(schema_json, limits)?;
    compile_with_limits(&schema, options, limits)
}

/// A schema's JSON text parsed within `limits`: its size ([`Limits::max_source_bytes`]) is
/// checked before it is read, and a syntax error names its line and column.
pub fn parse_str(schema_json: &str, limits: &Limits) -> Result<serde_json::Value, SchemaError> {
    limits.check_source_len(schema_json.len())?;
    serde_json::from_str(schema_json).map_err(|e| SchemaError::Json {
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

/// An error when `schema` nests arrays and objects more than `max` deep, naming the first
/// place too deep. Walks the document without recursion, so any depth is safe to check.
///
/// ```
/// let deep = (0..200).fold(serde_json::json!({}), |inner, _| serde_json::json!({"items": inner}));
/// let err = constrain_jsonschema::check_depth(&deep, 128).unwrap_err();
/// assert!(err.to_string().contains("nesting depth"), "{err}");
/// assert!(constrain_jsonschema::check_depth(&deep, 500).is_ok());
/// ```
pub fn check_depth(schema: &serde_json::Value, max: u32) -> Result<(), SchemaError> {
    use serde_json::Value;
    // Each entry: a value, its depth (the root is 1), and its path from the parent.
    let mut stack: Vec<(&Value, u32, Option<String>)> = vec![(schema, 1, None)];
    // The path of the value on top of the stack's branch, for the error.
    let mut path: Vec<(u32, String)> = Vec::new();
    while let Some((value, depth, step)) = stack.pop() {
        while path.last().is_some_and(|(d, _)| *d >= depth) {
            path.pop();
        }
        if let Some(step) = step {
            path.push((depth, step));
        }
        let children = match value {
            Value::Array(items) => items.len(),
            Value::Object(members) => members.len(),
            _ => 0,
        };
        if children == 0 {
            continue;
        }
        if depth >= max {
            let pointer: String = path
                .iter()
                .map(|(_, s)| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
                .collect();
            return Err(SchemaError::LimitExceeded {
                pointer: error::pointer_or_root(&pointer),
                budget: constrain_engine::Budget::SchemaDepth,
                limit: max as usize,
            });
        }
        match value {
            Value::Array(items) => stack.extend(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (v, depth + 1, Some(i.to_string()))),
            ),
            Value::Object(members) => {
                stack.extend(members.iter().map(|(k, v)| (v, depth + 1, Some(k.clone()))))
            }
            _ => {}
        }
    }
    Ok(())
}
