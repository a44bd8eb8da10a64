"""Masking logits with torch operations on the logits' own device.

``apply_token_bitmask_inplace`` sends here the tensors the Rust code does not read: CUDA tensors
and CPU tensors of dtypes other than ``float32``. The logits never leave their device: the
bitmask (4 bytes per 32 tokens, a few kilobytes a row) goes to them, its bits are unpacked there
and the disallowed logits filled with ``masked_fill_``. Nothing here waits for the device either:
the indices are checked on the host before they are copied over, so a caller's CUDA stream keeps
running. This module needs torch and NumPy only (not the compiled extension), so that it can be
tried on a machine that has a GPU but not the package.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence


def apply_with_torch(logits: Any, bitmask: Any, indices: Optional[Sequence[int]] = None) -> None:
    """Sets the logits the bitmask disallows to ``-inf`` in place, on the logits' device.

    The same contract as ``constrain.apply_token_bitmask_inplace``: ``logits`` is
    ``(batch, width)`` or ``(width,)``, ``bitmask`` is ``int32`` with as many rows (or 1-D with
    1-D logits); with ``indices`` only those rows are masked; logits past the bitmask's bits are
    disallowed and bits past the logits' width ignored.
    """
    import numpy as np
    import torch

    if not logits.is_floating_point():
        raise TypeError(f"logits of dtype {_dtype_name(logits.dtype)}: expected a floating dtype")
    if isinstance(bitmask, np.ndarray):
        bitmask = torch.from_numpy(bitmask)
    if bitmask.dtype != torch.int32:
        raise TypeError(f"bitmask of dtype {_dtype_name(bitmask.dtype)}: expected int32")
    device = logits.device
    rows = logits.unsqueeze(0) if logits.dim() == 1 else logits
    masks = bitmask.unsqueeze(0) if bitmask.dim() == 1 else bitmask
    if indices is None:
        if masks.shape[0] != rows.shape[0]:
            raise ValueError(
                f"logits have {rows.shape[0]} rows but the bitmask has {masks.shape[0]}; "
                "pass indices= to mask some rows"
            )
        index = None
    else:
        picked = [int(i) for i in indices]
        limit = min(rows.shape[0], masks.shape[0])
        if any(i < 0 or i >= limit for i in picked):
            raise ValueError(f"indices {picked} out of range for {rows.shape[0]} logits rows "
                             f"and {masks.shape[0]} bitmask rows")
        if not picked:
            return
        # Selected on the bitmask's side (host or device), then moved: only the rows used travel.
        masks = masks.index_select(0, torch.tensor(picked, dtype=torch.long, device=masks.device))
        index = torch.tensor(picked, dtype=torch.long).to(device, non_blocking=True)
    masks = masks.to(device, non_blocking=True)

    disallowed = _disallowed(masks, rows.shape[-1])
    if index is None:
        rows.masked_fill_(disallowed, float("-inf"))
    else:
        selected = rows.index_select(0, index).masked_fill_(disallowed, float("-inf"))
        rows.index_copy_(0, index, selected)


def _disallowed(masks: Any, width: int) -> Any:
    """``(rows, width)`` booleans on the masks' device: true where the bit is clear, and past
    the last bit."""
    import torch

    count, words = masks.shape[0], masks.shape[1]
    shifts = torch.arange(32, device=masks.device, dtype=torch.int32)
    clear = ((masks.unsqueeze(-1) >> shifts) & 1).eq(0).reshape(count, words * 32)
    if words * 32 >= width:
        return clear[:, :width]
    past = torch.ones((count, width - words * 32), dtype=torch.bool, device=masks.device)
    return torch.cat([clear, past], dim=1)


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")
