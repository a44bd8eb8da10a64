//! The caller's arrays, borrowed without a copy: bitmasks (`int32`, one row of
//! `ceil(width / 32)` words per sequence) and logits (`float32`/`float64`, one row per
//! sequence), from NumPy arrays or CPU PyTorch tensors (through their NumPy view, which shares
//! the tensor's memory).

use numpy::{Element, PyArrayDyn, PyArrayMethods, PyReadwriteArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;

/// `obj` as a NumPy array: itself, or the NumPy view of a CPU tensor (no copy).
pub fn as_numpy<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Bound<'py, PyAny>> {
    if obj.cast::<numpy::PyUntypedArray>().is_ok() {
        return Ok(obj.clone());
    }
    if obj.hasattr("numpy")? && obj.hasattr("device")? {
        let device = obj.getattr("device")?.getattr("type")?;
        let device = device.cast::<PyString>()?.to_cow()?.into_owned();
        if device != "cpu" {
            return Err(PyValueError::new_err(format!(
                "{what} is on {device}; this function reads CPU memory (fill a CPU bitmask, \
                 then copy it with .to(device, non_blocking=True))"
            )));
        }
        return obj.call_method0("detach")?.call_method0("numpy");
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be a NumPy array or a PyTorch tensor, not {}",
        obj.get_type().name()?
    )))
}

/// A writable, C-contiguous 1-D or 2-D array borrowed as rows.
pub struct Rows<'py, T: Element> {
    array: PyReadwriteArrayDyn<'py, T>,
    /// Number of rows (1 for a 1-D array).
    pub rows: usize,
    /// Elements per row.
    pub width: usize,
}

impl<'py, T: Element> Rows<'py, T> {
    /// Borrows `obj` (see [`as_numpy`]) for writing; `what` names it in errors.
    pub fn borrow(obj: &Bound<'py, PyAny>, what: &str, dtype: &str) -> PyResult<Rows<'py, T>> {
        let array = as_numpy(obj, what)?;
        let typed = array.cast::<PyArrayDyn<T>>().map_err(|_| {
            let actual = array
                .getattr("dtype")
                .map(|d| d.to_string())
                .unwrap_or_else(|_| "?".into());
            PyTypeError::new_err(format!(
                "{what} must be a {dtype} array, not one of dtype {actual}"
            ))
        })?;
        let array = typed.try_readwrite().map_err(|e| {
            PyTypeError::new_err(format!(
                "{what} must be a writable array that no other call is using ({e})"
            ))
        })?;
        let (rows, width) = match *array.shape() {
            [width] => (1, width),
            [rows, width] => (rows, width),
            ref other => {
                return Err(PyValueError::new_err(format!(
                    "{what} must have 1 or 2 dimensions, not shape {other:?}"
                )))
            }
        };
        if !array.is_c_contiguous() {
            return Err(PyValueError::new_err(format!(
                "{what} must be C-contiguous (rows stored one after another); this one is a \
                 strided view"
            )));
        }
        Ok(Rows { array, rows, width })
    }

    /// Every element, row after row.
    pub fn as_mut_slice(&mut self) -> PyResult<&mut [T]> {
        self.array
            .as_slice_mut()
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }
}

/// The bitmask words of `bitmask` as `u32` (the same bits as its `int32` elements).
pub fn words(slice: &mut [i32]) -> &mut [u32] {
    bytemuck::cast_slice_mut(slice)
}

/// The distinct rows `indices` (or every row, in order, when `None`) of a `rows`×`width`
/// buffer, checked against the number of rows.
pub fn select_rows<'a, T>(
    data: &'a mut [T],
    width: usize,
    rows: usize,
    indices: Option<&[i64]>,
    what: &str,
) -> PyResult<Vec<&'a mut [T]>> {
    if width == 0 {
        return Err(PyValueError::new_err(format!("{what} has rows of width 0")));
    }
    let all: Vec<&mut [T]> = data.chunks_mut(width).collect();
    let Some(indices) = indices else {
        return Ok(all);
    };
    let mut slots: Vec<Option<&mut [T]>> = all.into_iter().map(Some).collect();
    let mut picked = Vec::with_capacity(indices.len());
    for &i in indices {
        let slot = usize::try_from(i).ok().and_then(|i| slots.get_mut(i));
        let Some(slot) = slot else {
            return Err(PyValueError::new_err(format!(
                "index {i} is out of range for {what} with {rows} rows"
            )));
        };
        match slot.take() {
            Some(row) => picked.push(row),
            None => {
                return Err(PyValueError::new_err(format!(
                    "index {i} is given twice for {what}"
                )))
            }
        }
    }
    Ok(picked)
}
