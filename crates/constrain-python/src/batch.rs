//! Batch operations over the caller's buffers: allocating a bitmask, filling the rows of many
//! matchers in parallel, and setting the logits of disallowed tokens to `-inf`.
//!
//! Both batch operations release the GIL and split the work across rows with rayon, so a
//! batch of masks costs about one mask's time per core.

use numpy::{Element, PyArray2, PyArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;

use crate::buffers::{as_numpy, select_rows, words, Rows};
use crate::matcher::{fill_row, PyMatcher};

/// A bitmask for ``batch_size`` sequences over ``vocab_size`` logits: a NumPy ``int32`` array
/// of shape ``(batch_size, ceil(vocab_size / 32))``, every bit set (all tokens allowed).
#[pyfunction]
pub fn allocate_token_bitmask<'py>(
    py: Python<'py>,
    batch_size: usize,
    vocab_size: usize,
) -> PyResult<Bound<'py, PyArray2<i32>>> {
    if vocab_size == 0 {
        return Err(PyValueError::new_err("vocab_size must be at least 1"));
    }
    let array = PyArray2::<i32>::zeros(py, [batch_size, vocab_size.div_ceil(32)], false);
    array.readwrite().as_slice_mut()?.fill(-1);
    Ok(array)
}

/// Fills row ``indices[i]`` (row ``i`` when ``indices`` is None) of ``bitmask`` with the mask
/// of ``matchers[i]``, in parallel, with the GIL released.
#[pyfunction]
#[pyo3(signature = (matchers, bitmask, indices = None))]
pub fn fill_next_token_bitmasks(
    py: Python<'_>,
    matchers: Vec<Bound<'_, PyMatcher>>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<i64>>,
) -> PyResult<()> {
    let mut matchers = matchers
        .iter()
        .enumerate()
        .map(|(i, m)| {
            m.try_borrow_mut().map_err(|_| {
                PyValueError::new_err(format!(
                    "matchers[{i}] is already in use (the same Matcher given twice?)"
                ))
            })
        })
        .collect::<PyResult<Vec<PyRefMut<'_, PyMatcher>>>>()?;
    let mut rows = Rows::<i32>::borrow(bitmask, "bitmask", "int32")?;
    let (count, width) = (rows.rows, rows.width);
    let wanted = indices.as_ref().map_or(matchers.len(), Vec::len);
    if wanted != matchers.len() {
        return Err(PyValueError::new_err(format!(
            "{} matchers but {wanted} indices",
            matchers.len()
        )));
    }
    if indices.is_none() && matchers.len() > count {
        return Err(PyValueError::new_err(format!(
            "{} matchers but the bitmask has {count} rows",
            matchers.len()
        )));
    }
    let data = words(rows.as_mut_slice()?);
    let targets = select_rows(data, width, count, indices.as_deref(), "the bitmask")?;
    let mut work: Vec<_> = matchers
        .iter_mut()
        .map(|m| &mut m.inner)
        .zip(targets)
        .collect();
    let failed = py.detach(|| {
        work.par_iter_mut()
            .enumerate()
            .find_map_any(|(i, (matcher, row))| fill_row(matcher, row).err().map(|e| (i, e)))
    });
    match failed {
        None => Ok(()),
        Some((i, e)) => Err(e.into_py(&format!("matchers[{i}]: "))),
    }
}

/// Sets to `-inf` every logit of `row` whose bit in `mask` is clear, and every logit past the
/// mask's bits.
fn mask_row<T: Copy + Send>(row: &mut [T], mask: &[u32], neg_inf: T) {
    let covered = row.len().min(mask.len() * 32);
    let (inside, outside) = row.split_at_mut(covered);
    outside.fill(neg_inf);
    for (chunk, &word) in inside.chunks_mut(32).zip(mask) {
        if word == u32::MAX {
            continue;
        }
        if word == 0 {
            chunk.fill(neg_inf);
            continue;
        }
        for (bit, logit) in chunk.iter_mut().enumerate() {
            if word & (1 << bit) == 0 {
                *logit = neg_inf;
            }
        }
    }
}

/// `mask_row` over the selected rows of `logits`, in parallel with the GIL released.
fn apply<T: Element + Copy + Send>(
    py: Python<'_>,
    logits: &Bound<'_, PyAny>,
    masks: &mut Rows<'_, i32>,
    indices: Option<&[i64]>,
    neg_inf: T,
    dtype: &str,
) -> PyResult<()> {
    let mut rows = Rows::<T>::borrow(logits, "logits", dtype)?;
    let (count, width) = (rows.rows, rows.width);
    if indices.is_none() && masks.rows != count {
        return Err(PyValueError::new_err(format!(
            "logits have {count} rows but the bitmask has {}; pass indices= to mask some rows",
            masks.rows
        )));
    }
    // Rows are paired by index: every index must be a row of both.
    if let Some(ix) = indices {
        if let Some(&bad) = ix.iter().find(|&&i| i >= masks.rows as i64) {
            return Err(PyValueError::new_err(format!(
                "index {bad} is out of range for the bitmask with {} rows",
                masks.rows
            )));
        }
    }
    let mask_width = masks.width;
    let mask_data: &[u32] = words(masks.as_mut_slice()?);
    let targets = select_rows(rows.as_mut_slice()?, width, count, indices, "the logits")?;
    let row_numbers: Vec<usize> = match indices {
        Some(ix) => ix.iter().map(|&i| i as usize).collect(),
        None => (0..count).collect(),
    };
    py.detach(|| {
        targets
            .into_par_iter()
            .zip(row_numbers)
            .for_each(|(row, r)| {
                mask_row(
                    row,
                    &mask_data[r * mask_width..(r + 1) * mask_width],
                    neg_inf,
                )
            })
    });
    Ok(())
}

/// Sets the logits of disallowed tokens to ``-inf`` in place, for NumPy arrays (``float32``
/// or ``float64``) and CPU PyTorch ``float32`` tensors; ``constrain.apply_token_bitmask_inplace``
/// dispatches other tensors to torch operations.
#[pyfunction]
#[pyo3(signature = (logits, bitmask, indices = None))]
pub fn apply_token_bitmask_inplace_cpu(
    py: Python<'_>,
    logits: &Bound<'_, PyAny>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<i64>>,
) -> PyResult<()> {
    let mut masks = Rows::<i32>::borrow(bitmask, "bitmask", "int32")?;
    let array = as_numpy(logits, "logits")?;
    let dtype = array
        .getattr("dtype")?
        .getattr("name")?
        .extract::<String>()?;
    match dtype.as_str() {
        "float32" => apply(
            py,
            &array,
            &mut masks,
            indices.as_deref(),
            f32::NEG_INFINITY,
            "float32",
        ),
        "float64" => apply(
            py,
            &array,
            &mut masks,
            indices.as_deref(),
            f64::NEG_INFINITY,
            "float64",
        ),
        other => Err(PyTypeError::new_err(format!(
            "logits of dtype {other}: expected float32 or float64 (PyTorch tensors of other \
             dtypes are handled by constrain.apply_token_bitmask_inplace)"
        ))),
    }
}
