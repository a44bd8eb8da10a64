//! JSON Schema front-end: compiles a schema (draft 2020-12, with the draft-07 and draft-04 forms
//! still common in the wild) into a [`Grammar`](constrain_engine::Grammar) of the grammar core,
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
//! `format` names are annotations: accepted, and listed in [`Compiled::warnings`].
//!
//! # Numbers
//!
//! Numbers are compared by value, as the specification says (`1.0` is an integer and equals
//! `1`). Plain decimal notation is always accepted. Exponent notation (`1e2`) is accepted where
//! the constraints allow it exactly: for unconstrained numbers and for bounds at zero (such as
//! `minimum: 0`); integers are written without exponent. Under other bounds, `const`/`enum` and
//! `multipleOf`, exponent forms are rejected (the grammar stays sound, but those spellings of
//! valid values are not reachable).
//!
//! # Strings
//!
//! Strings accept every JSON spelling of a character: raw UTF-8, the short escapes (`\"`, `\\`,
//! `\/`, `\b`, `\f`, `\n`, `\r`, `\t`) and `\uXXXX` (surrogate pairs for characters outside the
//! basic plane; lone surrogates are rejected). Lengths count code points; `pattern` is an
//! ECMA-262 regular expression that must match somewhere in the string.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod algebra;
mod compiler;
mod ctx;
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
mod uri;
mod validate;

pub use error::{SchemaError, Warning, WarningKind};
pub use options::{AdditionalProperties, Options, PropertyOrder, Separators, Whitespace};

use constrain_engine::Grammar;

/// A compiled schema: the grammar, and what it does not enforce.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The grammar of the documents the schema accepts.
    pub grammar: Grammar,
    /// Ignored annotations and, with [`Options::lenient`], dropped constraints.
    pub warnings: Vec<Warning>,
}

/// Compiles a schema given as a JSON value.
pub fn compile(schema: &serde_json::Value, options: &Options) -> Result<Compiled, SchemaError> {
    compiler::compile(schema, options)
}

/// Compiles a schema given as JSON text.
pub fn compile_str(schema_json: &str, options: &Options) -> Result<Compiled, SchemaError> {
    let schema: serde_json::Value =
        serde_json::from_str(schema_json).map_err(|e| SchemaError::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
    compile(&schema, options)
}
