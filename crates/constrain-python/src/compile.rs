//! The compile functions and `CompiledGrammar`: a grammar bound to a vocabulary, immutable
//! and shared by every matcher and thread that uses it.
//!
//! Compilation runs with the GIL released, so other Python threads keep running while a large
//! schema compiles.

use std::sync::Arc;
use std::time::Instant;

use constrain_engine::{CompiledGrammar, Grammar, Limits};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::errors::{gbnf_error, grammar_error, schema_error};
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

/// Compiles `grammar` for `vocabulary` with the GIL released.
fn compile_grammar(
    py: Python<'_>,
    grammar: Grammar,
    vocabulary: &PyVocabulary,
    warnings: Vec<String>,
    limits: Limits,
) -> PyResult<PyCompiledGrammar> {
    let index = vocabulary.index.clone();
    let compiled = py.detach(move || CompiledGrammar::new(&grammar, index, limits));
    match compiled {
        Ok(inner) => Ok(PyCompiledGrammar { inner, warnings }),
        Err(e) => Err(grammar_error(py, &e)),
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
    let (options, limits) = options_from_kwargs(options)?;
    let started = Instant::now();
    let compiled = if let Ok(text) = schema.cast::<PyString>() {
        let text = text.to_cow()?.into_owned();
        py.detach(|| constrain_jsonschema::compile_str_with_limits(&text, &options, &limits))
    } else {
        check_value_depth(schema, limits.max_schema_depth)?;
        let value = schema_value(schema).map_err(|e| {
            PyTypeError::new_err(format!(
                "schema must be JSON text or a JSON-like value: {e}"
            ))
        })?;
        py.detach(|| constrain_jsonschema::compile_with_limits(&value, &options, &limits))
    };
    let compiled = compiled.map_err(|e| schema_error(py, &e))?;
    let warnings = compiled.warnings.iter().map(|w| w.to_string()).collect();
    let limits = limits.after(started.elapsed());
    compile_grammar(py, compiled.grammar, &vocabulary, warnings, limits)
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
    let (options, limits) = options_from_kwargs(options)?;
    let compiled = py
        .detach(|| constrain_jsonschema::compile(&serde_json::Value::Bool(true), &options))
        .map_err(|e| schema_error(py, &e))?;
    compile_grammar(py, compiled.grammar, &vocabulary, Vec::new(), limits)
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
    let limits = limits_from_kwargs(limits, &[])?;
    limits
        .check_source_len(pattern.len())
        .map_err(|e| grammar_error(py, &e))?;
    let grammar = Grammar::from_regex(pattern).map_err(|e| grammar_error(py, &e))?;
    compile_grammar(py, grammar, &vocabulary, Vec::new(), limits)
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
    let limits = limits_from_kwargs(limits, &[])?;
    limits
        .check_source_len(text.len())
        .map_err(|e| grammar_error(py, &e))?;
    let grammar = constrain_gbnf::parse_with_root(text, root).map_err(|e| gbnf_error(py, &e))?;
    compile_grammar(py, grammar, &vocabulary, Vec::new(), limits)
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
