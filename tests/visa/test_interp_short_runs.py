"""Short runs of cells moved or zeroed as wider items (issue 61 item 2: a cast's and a commit's
8-cell bf16 packets): `strided.runs_as_items` views each run as one raw item, `values.zero_cells`
zeroes a few whole 8-byte words of each row a word column at a time. Each is checked against
numpy's own slice assignment on the same arrays, poisoned first, over layouts that take the
wide form and layouts that must fall back (short runs, strided rows, unaligned cells)."""

from __future__ import annotations

import numpy as np
import pytest

from visa.interp.strided import runs_as_items
from visa.interp.values import zero_cells


@pytest.mark.parametrize("dtype, shape, lo, hi", [
    (np.uint16, (3, 5, 16), 8, 16),     # a cast's tail: two words of each row
    (np.uint16, (4, 16), 4, 12),         # the middle two words
    (np.uint32, (2, 3, 8), 2, 8),        # three words
    (np.uint8, (6, 40), 8, 40),          # four words: the most a column at a time
    (np.uint8, (6, 48), 8, 48),          # five: the slab assignment
    (np.uint16, (3, 16), 3, 12),         # not whole words
    (np.uint16, (5, 6), 4, 6),           # rows of 12 bytes
    (np.float32, (2, 0, 4), 2, 4),       # empty
])
def test_zeroed_cells_are_numpys_slice_assignment(dtype, shape, lo, hi) -> None:
    rng = np.random.default_rng(11)
    got = rng.integers(1, 200, shape).astype(dtype)
    want = got.copy()
    want[..., lo:hi] = 0
    zero_cells(got, lo, hi)
    assert np.array_equal(got, want)
    strided = rng.integers(1, 200, (*shape[:-1], 2 * shape[-1])).astype(dtype)[..., ::2]   # not C-contiguous
    want = strided.copy()
    want[..., lo:hi] = 0
    zero_cells(strided, lo, hi)
    assert np.array_equal(strided, want)


@pytest.mark.parametrize("dtype, run, pick", [(np.uint16, 8, 16), (np.uint32, 4, 9), (np.uint16, 3, 8),
                                              (np.uint8, 9, 13), (np.uint16, 1, 4)])
def test_runs_copied_as_items_are_the_cells_copied(dtype, run, pick) -> None:
    rng = np.random.default_rng(12)
    store = rng.integers(0, 255, (4, 6, pick)).astype(dtype)
    dst = store[:, ::2, 1:1 + run]                         # strided rows, a run of each
    src = rng.integers(0, 255, (4, 3, 2 * run)).astype(dtype)[..., :run]
    want = store.copy()
    want[:, ::2, 1:1 + run] = src
    wide_dst, wide_src = runs_as_items(dst, src)
    assert (wide_dst.ndim == 2) == (run * np.dtype(dtype).itemsize >= 8)   # whole items only from 8 bytes
    np.copyto(wide_dst, wide_src)
    assert np.array_equal(store, want)
    other = src.astype(np.int64)                           # another dtype: left as it is
    assert runs_as_items(dst, other)[1] is other
