//! The compile functions and `CompiledGrammar`: a grammar bound to a vocabulary, immutable
//! and shared by every matcher and thread that uses it.
//!
//! Compilation runs with the GIL released, so other Python threads keep running while a large
//! schema compiles.

use std::sync::Arc;

use constrain::{CompileOptions, CompiledGrammar, Constraint};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::errors::constrain_error;
use crate::options::{limits_from_kwargs, options_from_kwargs, schema_value};
use crate::vocabulary::PyVocabulary;

/// A grammar compiled for one vocabulary. Immutable; share it across matchers and threads.
#[pyclass(module = "constrain", name = "CompiledGrammar", frozen)]
pub struct PyCompiledGrammar {
    pub inner: Arc<CompiledGrammar>,
    warnings: Vec<String>,
}

#[pymethods]
impl PyCompiledGrammar {
    /// What the schema compiler did not enforce exactly (ignored annotations, constraints
    /// dropped under ``lenient=True``, narrowed bounds), one message each.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// The logits width of the vocabulary (bits of a bitmask row).
    #[getter]
    fn vocab_width(&self) -> usize {
        self.inner.vocabulary().logits_width()
    }

    /// 32-bit words of one bitmask row: ``ceil(vocab_width / 32)``.
    #[getter]
    fn mask_words(&self) -> usize {
        self.inner.mask_words()
    }

    fn __repr__(&self) -> String {
        let (states, _, _) = self.inner.automaton_size();
        format!(
            "CompiledGrammar(vocab_width={}, states_built={states}, warnings={})",
            self.inner.vocabulary().logits_width(),
            self.warnings.len()
        )
    }
}

/// Compiles `constraint` for `vocabulary` with the GIL released: the one path every compile
/// function takes.
fn compile_constraint(
    py: Python<'_>,
    constraint: Constraint,
    vocabulary: &PyVocabulary,
    options: CompileOptions,
) -> PyResult<PyCompiledGrammar> {
    let index = vocabulary.index.clone();
    match py.detach(move || constraint.compile_for(index, &options)) {
        Ok(compiled) => Ok(PyCompiledGrammar {
            inner: compiled.grammar,
            warnings: compiled.warnings.iter().map(|w| w.to_string()).collect(),
        }),
        Err(e) => Err(constrain_error(py, &e)),
    }
}

/// Compiles a JSON Schema (JSON text, or a ``dict``/``bool``) into a grammar of the JSON
/// documents it accepts. Keyword arguments are the schema compiler's options (see
/// ``docs/python.md``) and the budgets (``docs/limits.md``); unknown ones are a ``TypeError``.
#[pyfunction]
#[pyo3(signature = (schema, vocabulary, **options))]
pub fn compile_json_schema(
    py: Python<'_>,
    schema: &Bound<'_, PyAny>,
    vocabulary: PyRef<'_, PyVocabulary>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyCompiledGrammar> {
    let (schema_options, limits) = options_from_kwargs(options)?;
    let value = if let Ok(text) = schema.cast::<PyString>() {
        let text = text.to_cow()?.into_owned();
        py.detach(|| constrain::parse_schema(&text, &limits))
            .map_err(|e| constrain_error(py, &e))?
    } else {
        json_like(schema, "schema", limits.max_schema_depth)?
    };
    let options = CompileOptions {
        schema: schema_options,
        limits,
    };
    compile_constraint(py, Constraint::JsonSchema(value), &vocabulary, options)
}

/// Compiles a grammar of every JSON value (with the same layout options as
/// ``compile_json_schema``).
#[pyfunction]
#[pyo3(signature = (vocabulary, **options))]
pub fn compile_any_json(
    py: Python<'_>,
    vocabulary: PyRef<'_, PyVocabulary>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyCompiledGrammar> {
    let (schema, limits) = options_from_kwargs(options)?;
    let any = Constraint::JsonSchema(serde_json::Value::Bool(true));
    compile_constraint(py, any, &vocabulary, CompileOptions { schema, limits })
}

/// Compiles a regular expression (Rust ``regex`` syntax) that the whole output must match.
/// Keyword arguments are the budgets (``docs/limits.md``).
#[pyfunction]
#[pyo3(signature = (pattern, vocabulary, **limits))]
pub fn compile_regex(
    py: Python<'_>,
    pattern: &str,
    vocabulary: PyRef<'_, PyVocabulary>,
    limits: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyCompiledGrammar> {
    let options = CompileOptions::with_limits(limits_from_kwargs(limits, &[])?);
    let regex = Constraint::Regex(pattern.to_string());
    compile_constraint(py, regex, &vocabulary, options)
}

/// Compiles a GBNF grammar (llama.cpp's format); ``root`` names the start rule. Other keyword
/// arguments are the budgets (``docs/limits.md``).
#[pyfunction]
#[pyo3(signature = (text, vocabulary, *, root = "root", **limits))]
pub fn compile_gbnf(
    py: Python<'_>,
    text: &str,
    vocabulary: PyRef<'_, PyVocabulary>,
    root: &str,
    limits: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyCompiledGrammar> {
    let options = CompileOptions::with_limits(limits_from_kwargs(limits, &[])?);
    let gbnf = Constraint::GbnfWithRoot(text.to_string(), root.to_string());
    compile_constraint(py, gbnf, &vocabulary, options)
}

/// Compiles a Lark grammar (the ``lark`` package's EBNF, start rule ``start``; see
/// ``docs/lark.md``). Keyword arguments are the budgets (``docs/limits.md``).
#[pyfunction]
#[pyo3(signature = (text, vocabulary, **limits))]
pub fn compile_lark(
    py: Python<'_>,
    text: &str,
    vocabulary: PyRef<'_, PyVocabulary>,
    limits: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyCompiledGrammar> {
    let options = CompileOptions::with_limits(limits_from_kwargs(limits, &[])?);
    let lark = Constraint::Lark(text.to_string());
    compile_constraint(py, lark, &vocabulary, options)
}

/// Compiles an XGrammar structural tag (JSON text, or a ``dict``): ``{"type":
/// "structural_tag", "format": {...}}`` or the older ``structures`` and ``triggers``. Keyword
/// arguments are the options of the schemas inside (as ``compile_json_schema``'s) and the
/// budgets; errors are ``CompileError`` of kind ``"structural_tag"`` naming the JSON pointer.
#[pyfunction]
#[pyo3(signature = (structural_tag, vocabulary, **options))]
pub fn compile_structural_tag(
    py: Python<'_>,
    structural_tag: &Bound<'_, PyAny>,
    vocabulary: PyRef<'_, PyVocabulary>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyCompiledGrammar> {
    let (schema_options, limits) = options_from_kwargs(options)?;
    let value = if let Ok(text) = structural_tag.cast::<PyString>() {
        let text = text.to_cow()?;
        limits
            .check_source_len(text.len())
            .map_err(|e| crate::errors::grammar_error(py, &e))?;
        serde_json::from_str(&text).map_err(|e| crate::errors::structural_tag_json_error(py, &e))?
    } else {
        json_like(structural_tag, "structural_tag", limits.max_schema_depth)?
    };
    let options = CompileOptions {
        schema: schema_options,
        limits,
    };
    compile_constraint(py, Constraint::StructuralTag(value), &vocabulary, options)
}

/// The argument `what`, given as Python values (a ``dict``, a ``bool``...), as JSON: a
/// `ValueError` past `max_depth` levels, a `TypeError` for what JSON cannot hold.
fn json_like(value: &Bound<'_, PyAny>, what: &str, max_depth: u32) -> PyResult<serde_json::Value> {
    check_value_depth(value, max_depth)?;
    schema_value(value).map_err(|e| {
        PyTypeError::new_err(format!(
            "{what} must be JSON text or a JSON-like value: {e}"
        ))
    })
}

/// A `ValueError` when a schema given as Python values nests lists and dicts deeper than
/// `max`: checked without recursion before the value is converted (which recurses).
fn check_value_depth(schema: &Bound<'_, PyAny>, max: u32) -> PyResult<()> {
    use pyo3::types::{PyList, PyTuple};
    let mut stack: Vec<(Bound<'_, PyAny>, u32)> = vec![(schema.clone(), 1)];
    while let Some((value, depth)) = stack.pop() {
        let children: Vec<Bound<'_, PyAny>> = if let Ok(d) = value.cast::<PyDict>() {
            d.values().iter().collect()
        } else if let Ok(l) = value.cast::<PyList>() {
            l.iter().collect()
        } else if let Ok(t) = value.cast::<PyTuple>() {
            t.iter().collect()
        } else {
            continue;
        };
        if children.is_empty() {
            continue;
        }
        if depth >= max {
            return Err(PyValueError::new_err(format!(
                "schema too complex: nesting depth exceeds the limit of {max} \
                 (max_schema_depth)"
            )));
        }
        stack.extend(children.into_iter().map(|c| (c, depth + 1)));
    }
    Ok(())
}
