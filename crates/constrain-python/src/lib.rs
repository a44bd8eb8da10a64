//! The native part of the Python package `constrain` (imported as `constrain._native`): the
//! engine's vocabularies, compiled grammars, matchers, batch bitmask operations and sampler,
//! with the names and buffer layout of XGrammar's Python API.
//!
//! Buffers are the caller's: bitmasks are written into their `int32` arrays and logits are
//! read and masked in place, never copied. Long operations release the GIL.

#![forbid(unsafe_code)]

mod batch;
mod buffers;
mod compile;
mod errors;
mod matcher;
mod options;
mod sampler;
mod vocabulary;

use pyo3::prelude::*;

/// jemalloc, for the many small allocations of schema compilation (see this crate's manifest).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The module `constrain._native`; `constrain/__init__.py` re-exports it.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<vocabulary::PyVocabulary>()?;
    m.add_class::<compile::PyCompiledGrammar>()?;
    m.add_class::<matcher::PyMatcher>()?;
    m.add_class::<sampler::PySampler>()?;
    m.add_function(wrap_pyfunction!(compile::compile_json_schema, m)?)?;
    m.add_function(wrap_pyfunction!(compile::compile_any_json, m)?)?;
    m.add_function(wrap_pyfunction!(compile::compile_regex, m)?)?;
    m.add_function(wrap_pyfunction!(compile::compile_gbnf, m)?)?;
    m.add_function(wrap_pyfunction!(compile::compile_lark, m)?)?;
    m.add_function(wrap_pyfunction!(compile::compile_structural_tag, m)?)?;
    m.add_function(wrap_pyfunction!(batch::allocate_token_bitmask, m)?)?;
    m.add_function(wrap_pyfunction!(batch::fill_next_token_bitmasks, m)?)?;
    m.add_function(wrap_pyfunction!(batch::apply_token_bitmask_inplace_cpu, m)?)?;
    m.add("CompileError", py.get_type::<errors::CompileError>())?;
    m.add("MatchError", py.get_type::<errors::MatchError>())?;
    m.add("VocabularyError", py.get_type::<errors::VocabularyError>())?;
    Ok(())
}
