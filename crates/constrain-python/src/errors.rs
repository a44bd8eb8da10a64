//! The package's exceptions, and the conversion of the Rust crates' errors into them.
//!
//! `CompileError` carries where the problem is as attributes (`keyword`, `pointer`, `line`,
//! `column`), so a caller can point at the offending part of a schema or grammar without
//! parsing the message.

use constrain::{
    Error as ConstrainError, GbnfError, GrammarError, LarkError, MatchError as EngineMatchError,
    SchemaError,
};
use constrain_sampling::SamplingError;
use constrain_vocab::VocabError;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    constrain,
    CompileError,
    PyValueError,
    "A schema, regular expression or grammar that cannot be compiled.\n\n\
     Attributes: ``kind`` (``\"schema\"``, ``\"regex\"``, ``\"gbnf\"``, ``\"lark\"``, ``\"grammar\"``, \
     ``\"structural_tag\"``), ``keyword`` and ``pointer`` (JSON Schema: the keyword and the JSON pointer \
     of the place; structural tag: the JSON pointer of the offending format), \
     ``line`` and ``column`` (JSON text, GBNF or Lark: 1-based), each ``None`` where it does not apply."
);

pyo3::create_exception!(
    constrain,
    MatchError,
    PyRuntimeError,
    "A matcher could not compute a mask or take a step: a run-time budget of the lazily built \
     automaton was exhausted, or the operation does not apply in the matcher's state."
);

pyo3::create_exception!(
    constrain,
    VocabularyError,
    PyValueError,
    "A vocabulary that cannot be built or loaded (a missing or malformed tokenizer file, \
     duplicate ids, a logits width smaller than the vocabulary)."
);

/// Where a compile error is, as the attributes of `CompileError`.
#[derive(Default)]
struct Place {
    keyword: Option<String>,
    pointer: Option<String>,
    line: Option<usize>,
    column: Option<usize>,
}

/// A `CompileError` with its kind and place set as attributes.
fn compile_error(py: Python<'_>, kind: &str, message: String, place: Place) -> PyErr {
    let err = CompileError::new_err(message);
    let value = err.value(py);
    let set = || -> PyResult<()> {
        value.setattr("kind", kind)?;
        value.setattr("keyword", place.keyword)?;
        value.setattr("pointer", place.pointer)?;
        value.setattr("line", place.line)?;
        value.setattr("column", place.column)?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// A JSON Schema error as `CompileError`.
pub fn schema_error(py: Python<'_>, e: &SchemaError) -> PyErr {
    let mut place = Place {
        pointer: e.pointer().map(str::to_string),
        ..Place::default()
    };
    match e {
        SchemaError::Json { line, column, .. } => {
            place.line = Some(*line);
            place.column = Some(*column);
        }
        SchemaError::Unsupported { keyword, .. } => place.keyword = Some(keyword.clone()),
        SchemaError::UnresolvedRef { .. } => place.keyword = Some("$ref".to_string()),
        SchemaError::Grammar(inner) => return grammar_error(py, inner),
        _ => {}
    }
    compile_error(py, "schema", e.to_string(), place)
}

/// A GBNF error as `CompileError`.
pub fn gbnf_error(py: Python<'_>, e: &GbnfError) -> PyErr {
    let place = Place {
        line: e.line(),
        column: e.column(),
        ..Place::default()
    };
    compile_error(py, "gbnf", e.to_string(), place)
}

/// A Lark error as `CompileError`.
pub fn lark_error(py: Python<'_>, e: &LarkError) -> PyErr {
    let place = Place {
        line: e.line(),
        column: e.column(),
        ..Place::default()
    };
    compile_error(py, "lark", e.to_string(), place)
}

/// A grammar-core error as `CompileError` (a bad regex is of kind `"regex"`).
pub fn grammar_error(py: Python<'_>, e: &GrammarError) -> PyErr {
    let kind = match e {
        GrammarError::Regex { .. } => "regex",
        _ => "grammar",
    };
    compile_error(py, kind, e.to_string(), Place::default())
}

/// A structural tag's JSON text that does not parse, as `CompileError` with line and column.
pub fn structural_tag_json_error(py: Python<'_>, e: &serde_json::Error) -> PyErr {
    let place = Place {
        line: Some(e.line()),
        column: Some(e.column()),
        ..Place::default()
    };
    let message = format!("structural tag is not valid JSON: {e}");
    compile_error(py, "structural_tag", message, place)
}

/// A structural tag that is not one, or a part of it that cannot be compiled, as
/// `CompileError` naming the JSON pointer.
fn structural_tag_error(py: Python<'_>, pointer: &str, message: String) -> PyErr {
    let place = Place {
        pointer: Some(pointer.to_string()),
        ..Place::default()
    };
    compile_error(py, "structural_tag", message, place)
}

/// Any error of the facade, as the matching Python exception.
pub fn constrain_error(py: Python<'_>, e: &ConstrainError) -> PyErr {
    match e {
        ConstrainError::Schema(e) => schema_error(py, e),
        ConstrainError::Gbnf(e) => gbnf_error(py, e),
        ConstrainError::Lark(e) => lark_error(py, e),
        ConstrainError::Grammar(e) => grammar_error(py, e),
        ConstrainError::Match(e) => match_error(e),
        ConstrainError::Sampling(e) => sampling_error(e),
        ConstrainError::StructuralTag(tag) => {
            structural_tag_error(py, tag.pointer(), e.to_string())
        }
        ConstrainError::StructuralTagPart { pointer, .. } => {
            structural_tag_error(py, pointer, e.to_string())
        }
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// A matcher error: bad arguments are `ValueError`, the rest `MatchError`.
pub fn match_error(e: &EngineMatchError) -> PyErr {
    match e {
        EngineMatchError::UnknownToken { .. }
        | EngineMatchError::RollbackTooFar { .. }
        | EngineMatchError::MaskLength { .. }
        | EngineMatchError::BudgetTooSmall { .. } => PyValueError::new_err(e.to_string()),
        other => MatchError::new_err(other.to_string()),
    }
}

/// A sampling error: settings and logits are the caller's (`ValueError`), as is a mask that
/// leaves nothing to draw.
pub fn sampling_error(e: &SamplingError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A vocabulary error as `VocabularyError`.
pub fn vocab_error(e: &VocabError) -> PyErr {
    VocabularyError::new_err(e.to_string())
}
