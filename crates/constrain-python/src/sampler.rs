//! `Sampler`: the Rust crate's constrained sampler (mask, then the sampling funnel) over one
//! sequence's logits, so a Python caller gets the same seeded, exact draws as the CLI.

use constrain::{ConstrainedSampler, SamplerConfig, StepTrace};
use numpy::PyUntypedArrayMethods;
use numpy::{PyReadonlyArray1, PyReadonlyArrayDyn};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::buffers::as_numpy;
use crate::compile::PyCompiledGrammar;
use crate::errors::{constrain_error, sampling_error};

/// Draws tokens that keep the output in the grammar's language: the grammar mask, then
/// repetition/frequency/presence penalties, temperature, top-k, top-p, min-p, typical-p, and a
/// seeded draw. ``temperature=0`` is greedy.
#[pyclass(module = "constrain", name = "Sampler")]
pub struct PySampler {
    inner: ConstrainedSampler,
    /// With ``trace=True``: the traces of the tokens accepted so far.
    trace: Vec<StepTrace>,
}

/// Candidates a traced step lists per distribution.
const TRACE_CANDIDATES: usize = 5;

#[pymethods]
impl PySampler {
    /// A sampler at the start of ``compiled``. Every setting's default switches its stage off
    /// (``temperature=1`` samples the model's own distribution).
    #[new]
    #[pyo3(signature = (
        compiled, *, temperature = 1.0, top_k = 0, top_p = 1.0, min_p = 0.0, typical_p = 1.0,
        repeat_penalty = 1.0, frequency_penalty = 0.0, presence_penalty = 0.0, seed = 0,
        prompt = Vec::new(), trace = false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        compiled: PyRef<'_, PyCompiledGrammar>,
        temperature: f32,
        top_k: usize,
        top_p: f32,
        min_p: f32,
        typical_p: f32,
        repeat_penalty: f32,
        frequency_penalty: f32,
        presence_penalty: f32,
        seed: u64,
        prompt: Vec<u32>,
        trace: bool,
    ) -> PyResult<PySampler> {
        let keywords = [
            ("temperature", f64::from(temperature)),
            ("top_k", top_k as f64),
            ("top_p", f64::from(top_p)),
            ("min_p", f64::from(min_p)),
            ("typical_p", f64::from(typical_p)),
            ("repeat_penalty", f64::from(repeat_penalty)),
            ("frequency_penalty", f64::from(frequency_penalty)),
            ("presence_penalty", f64::from(presence_penalty)),
        ];
        let config = SamplerConfig::default()
            .with_settings(keywords.map(|(name, value)| (name, Some(value))))
            .map_err(|e| sampling_error(&e))?;
        let mut inner = ConstrainedSampler::new(compiled.inner.clone(), config, seed)
            .map_err(|e| constrain_error(py, &e))?
            .with_prompt(&prompt);
        inner.set_trace(trace.then_some(TRACE_CANDIDATES));
        Ok(PySampler {
            inner,
            trace: Vec::new(),
        })
    }

    /// Draws the next token from one step's ``logits`` (a 1-D ``float32`` NumPy array or CPU
    /// tensor, read in place). The token is not accepted yet: call ``accept`` once the model
    /// has it.
    fn sample(&mut self, py: Python<'_>, logits: &Bound<'_, PyAny>) -> PyResult<u32> {
        let array = as_numpy(logits, "logits")?;
        let logits: PyReadonlyArray1<'_, f32> = match array.extract() {
            Ok(a) => a,
            Err(_) => {
                let any: PyReadonlyArrayDyn<'_, f32> = array.extract().map_err(|_| {
                    PyTypeError::new_err("logits must be a float32 array (or CPU tensor)")
                })?;
                return Err(PyValueError::new_err(format!(
                    "logits must be one step's vector (1-D), not shape {:?}",
                    any.shape()
                )));
            }
        };
        let slice = logits
            .as_slice()
            .map_err(|_| PyValueError::new_err("logits must be contiguous"))?;
        let sampler = &mut self.inner;
        py.detach(|| sampler.sample(slice))
            .map_err(|e| constrain_error(py, &e))
    }

    /// Records that ``token`` was fed to the model (sampled or forced). A token the grammar
    /// does not allow here is a ``ValueError``, and nothing changes.
    fn accept(&mut self, py: Python<'_>, token: u32) -> PyResult<()> {
        self.inner.accept(token).map_err(|e| match e {
            constrain::Error::Match(
                m @ (constrain::MatchError::TokenNotAllowed { .. }
                | constrain::MatchError::Finished),
            ) => PyValueError::new_err(m.to_string()),
            other => constrain_error(py, &other),
        })
    }

    /// Tokens the grammar forces next, to feed without sampling (then ``accept`` each).
    fn forced_tokens(&mut self, py: Python<'_>) -> PyResult<Vec<u32>> {
        self.inner
            .forced_tokens()
            .map_err(|e| constrain_error(py, &e))
    }

    /// With ``trace=True``, what each accepted token's step did, one dict per token:
    /// ``token``, ``text``, ``origin`` (``"sampled"``, ``"forced"`` for a token accepted
    /// without ``sample``, or ``"budget"``), ``allowed`` (tokens the mask allowed),
    /// ``removed_mass`` (the softmax mass of the refused tokens under the raw logits), the top
    /// candidates ``before_mask``, ``after_mask`` and ``after_funnel`` (``token``, ``text``,
    /// ``prob``), and ``budget_left``. Empty without ``trace=True``.
    #[getter]
    fn trace<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.trace.extend(self.inner.take_trace());
        pythonize::pythonize(py, &self.trace)
            .map_err(|e| PyValueError::new_err(format!("the trace: {e}")))
    }

    /// Whether the output so far is complete (an end token is allowed).
    fn is_accepting(&self) -> bool {
        self.inner.is_accepting()
    }

    /// Whether nothing but the end can follow.
    fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }
}
