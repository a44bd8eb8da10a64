//! `Matcher`: one sequence's state under a compiled grammar, with XGrammar's method names.

use constrain_engine::{MatchError as EngineMatchError, Matcher};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::buffers::{words, Rows};
use crate::compile::PyCompiledGrammar;
use crate::errors::match_error;

/// The state of one sequence: which tokens may come next, and the tokens accepted so far.
///
/// One per sequence (batch row); many matchers share one ``CompiledGrammar``.
#[pyclass(module = "constrain", name = "Matcher")]
pub struct PyMatcher {
    pub inner: Matcher,
}

/// Why a bitmask row could not be filled.
pub enum FillError {
    /// The row has fewer words than the vocabulary needs (the caller's mistake).
    RowTooNarrow(String),
    /// The engine could not compute the mask (a run-time budget).
    Engine(EngineMatchError),
}

impl FillError {
    /// The Python exception, with `context` (which matcher) before the message.
    pub fn into_py(self, context: &str) -> PyErr {
        match self {
            FillError::RowTooNarrow(message) => {
                PyValueError::new_err(format!("{context}{message}"))
            }
            FillError::Engine(e) => crate::errors::MatchError::new_err(format!("{context}{e}")),
        }
    }
}

/// Writes `matcher`'s mask into `row`: the first words, then zeros (padding ids, never
/// allowed) when the row is wider than the vocabulary's logits.
pub fn fill_row(matcher: &mut Matcher, row: &mut [u32]) -> Result<(), FillError> {
    let needed = matcher.grammar().mask_words();
    if row.len() < needed {
        return Err(FillError::RowTooNarrow(format!(
            "bitmask rows have {} words; this grammar's vocabulary needs {needed} \
             (ceil(width / 32))",
            row.len()
        )));
    }
    let (mask, padding) = row.split_at_mut(needed);
    matcher.fill_mask(mask).map_err(FillError::Engine)?;
    padding.fill(0);
    Ok(())
}

#[pymethods]
impl PyMatcher {
    /// A matcher at the start of ``compiled``. With ``max_tokens``, the output takes at most
    /// that many tokens and ends complete within them: near the end the bitmask narrows to
    /// tokens that close the output in time. Raises ``ValueError`` when even the shortest
    /// completion takes more tokens.
    #[new]
    #[pyo3(signature = (compiled, max_tokens = None))]
    fn new(
        compiled: PyRef<'_, PyCompiledGrammar>,
        max_tokens: Option<usize>,
    ) -> PyResult<PyMatcher> {
        let mut inner = Matcher::new(compiled.inner.clone());
        inner
            .set_token_budget(max_tokens)
            .map_err(|e| match_error(&e))?;
        Ok(PyMatcher { inner })
    }

    /// Tokens the ``max_tokens`` budget leaves, or ``None`` without a budget.
    fn tokens_left(&self) -> Option<usize> {
        self.inner.tokens_left()
    }

    /// The fewest bytes that complete the output so far, or ``None`` when it has ended.
    fn shortest_completion<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let completion = self
            .inner
            .shortest_completion()
            .map_err(|e| match_error(&e))?;
        Ok(completion.map(|c| PyBytes::new(py, &c.bytes)))
    }

    /// Writes the tokens allowed next into row ``index`` of ``bitmask`` (an ``int32`` array
    /// from ``allocate_token_bitmask``, NumPy or CPU torch): bit ``j % 32`` of word ``j // 32``
    /// is set when token ``j`` may come next. Written in place, no copy.
    #[pyo3(signature = (bitmask, index = 0))]
    fn fill_next_token_bitmask(
        &mut self,
        py: Python<'_>,
        bitmask: &Bound<'_, PyAny>,
        index: i64,
    ) -> PyResult<()> {
        let mut rows = Rows::<i32>::borrow(bitmask, "bitmask", "int32")?;
        let (count, width) = (rows.rows, rows.width);
        let row = usize::try_from(index)
            .ok()
            .filter(|&i| i < count)
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "index {index} is out of range for a bitmask with {count} rows"
                ))
            })?;
        let data = words(rows.as_mut_slice()?);
        let row = &mut data[row * width..(row + 1) * width];
        let matcher = &mut self.inner;
        py.detach(|| fill_row(matcher, row))
            .map_err(|e| e.into_py(""))
    }

    /// Accepts token ``token_id`` if the grammar allows it (``True``); otherwise returns
    /// ``False`` and leaves the state unchanged. An id outside the vocabulary is a
    /// ``ValueError``.
    fn accept_token(&mut self, token_id: i64) -> PyResult<bool> {
        let token = u32::try_from(token_id).map_err(|_| {
            PyValueError::new_err(format!("token id {token_id} is negative or too large"))
        })?;
        match self.inner.accept_token(token) {
            Ok(()) => Ok(true),
            Err(EngineMatchError::TokenNotAllowed { .. } | EngineMatchError::Finished) => Ok(false),
            Err(e) => Err(match_error(&e)),
        }
    }

    /// Accepts the text (``str``, as UTF-8, or ``bytes``) as one step, if the grammar allows
    /// it (``True``); otherwise returns ``False`` and leaves the state unchanged. Under
    /// ``max_tokens``, text after which the output can no longer complete in time is refused.
    fn accept_string(&mut self, text: &Bound<'_, PyAny>) -> PyResult<bool> {
        let bytes: Vec<u8> = if let Ok(s) = text.cast::<PyString>() {
            s.to_cow()?.as_bytes().to_vec()
        } else if let Ok(b) = text.cast::<PyBytes>() {
            b.as_bytes().to_vec()
        } else {
            return Err(PyTypeError::new_err("text must be str or bytes"));
        };
        match self.inner.accept_bytes(&bytes) {
            Ok(()) => Ok(true),
            Err(
                EngineMatchError::BytesRejected { .. }
                | EngineMatchError::Finished
                | EngineMatchError::BudgetTooSmall { .. },
            ) => Ok(false),
            Err(e) => Err(match_error(&e)),
        }
    }

    /// Whether the output so far is complete: an end-of-sequence token is allowed now.
    fn is_accepting(&self) -> bool {
        self.inner.is_accepting()
    }

    /// Whether nothing but the end can follow, or an end-of-sequence token was accepted.
    fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }

    /// Whether an end-of-sequence token has been accepted.
    fn is_terminated(&self) -> bool {
        self.inner.has_ended()
    }

    /// Tokens the grammar forces next, to append without sampling (then ``accept_token``
    /// each). Empty when there is a choice.
    fn forced_tokens(&mut self, py: Python<'_>) -> PyResult<Vec<u32>> {
        let matcher = &mut self.inner;
        py.detach(|| matcher.forced_tokens())
            .map_err(|e| match_error(&e))
    }

    /// Undoes the last ``num_tokens`` accepted steps (tokens, or strings).
    #[pyo3(signature = (num_tokens = 1))]
    fn rollback(&mut self, num_tokens: usize) -> PyResult<()> {
        self.inner.rollback(num_tokens).map_err(|e| match_error(&e))
    }

    /// Back to the start of the grammar.
    fn reset(&mut self) {
        self.inner.reset();
    }

    /// An independent matcher in the same state (for beams and speculative branches).
    fn copy(&self) -> PyMatcher {
        PyMatcher {
            inner: self.inner.clone(),
        }
    }

    fn __copy__(&self) -> PyMatcher {
        self.copy()
    }

    /// Number of steps accepted so far.
    #[getter]
    fn num_steps(&self) -> usize {
        self.inner.steps()
    }

    fn __repr__(&self) -> String {
        format!(
            "Matcher(steps={}, accepting={}, finished={})",
            self.inner.steps(),
            self.inner.is_accepting(),
            self.inner.is_finished()
        )
    }
}
