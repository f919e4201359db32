"""Where the whole-contraction path writes its results (backends/cpu/contract_fast.py):
the result cells `dest` of a plan as one strided view of the result rows, when it has
one, so that a cast-and-copy into the view is the scatter; the view's form is found once
per `dest`."""

from __future__ import annotations

import functools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.cpu.contract_plan import _affine

__all__ = ["_dest_view"]


def _runs(line: np.ndarray) -> list[int]:
    """Extents, outer to inner, cutting `line` where its step changes: a line affine over
    each cut (a digit read with two strides) splits into one digit per stride."""
    n = len(line)
    steps = np.diff(line)
    cut = np.flatnonzero(steps != steps[0]) if n > 1 else ()
    if len(cut) == 0:
        return [n]
    f = int(cut[0]) + 1
    return [n] if n % f else _runs(line[::f]) + [f]


def _dest_view(res: np.ndarray, dest: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]] | None:
    """The result cells `dest` (I, J, N', Z) of every row of `res` (rows, cells) as one
    writeable strided view (rows, *fine) over `dest`'s axes cut into digits of one stride
    each, and that shape `fine`, when `dest` is affine over them and names each cell once
    (then writing the view is the scatter, cell for cell); None otherwise. The form is
    found once per `dest` (`_dest_form`)."""
    found = _dest_form(dest.shape, np.ascontiguousarray(dest, np.int64).tobytes())
    if found is None:
        return None
    first, steps, fine = found
    item = res.itemsize
    view = as_strided(res[:, first:], (res.shape[0], *fine), (res.strides[0], *(s * item for s in steps)))
    return view, fine


@functools.lru_cache(maxsize=64)
def _dest_form(shape: tuple[int, ...], cells: bytes) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """(first cell, strides, fine shape) of `_dest_view` for the int64 `dest` of this
    shape and bytes; None when it has none."""
    dest = np.frombuffer(cells, np.int64).reshape(shape)
    if dest.size == 0 or np.unique(dest).size != dest.size:
        return None
    fine: list[int] = []
    for k, n in enumerate(dest.shape):
        fine += _runs(dest[tuple(slice(None) if d == k else 0 for d in range(dest.ndim))]) if n > 1 else [n]
    found = _affine(dest.reshape(fine))
    if found is None:
        return None
    return found[0], found[1], tuple(fine)
