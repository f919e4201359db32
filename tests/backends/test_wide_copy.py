"""Strided copies of short contiguous runs copied as wider items (backends/cpu/wide_copy.py):
the same bytes as numpy's cell-by-cell copy; a run of more than 8 bytes as one raw item,
a shorter one as the widest word dividing every address and stride, unchanged where none does."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from backends.cpu.wide_copy import wide_runs


def _pair(rng: np.random.Generator, dtype, shape: tuple[int, ...], run: int, shift: int = 0):
    """(dst, src): views with last axis a run of `run` contiguous cells, other axes transposed
    against each other (a Transpose Engine result committed back), `shift` cells into their memory."""
    n = int(np.prod(shape)) * run
    bits = rng.integers(0, 1 << 16, n + shift, dtype=np.uint16 if np.dtype(dtype).itemsize == 2 else np.uint32)
    src = bits.view(dtype)[shift:shift + n].reshape(*shape, run)
    out = np.zeros(n + shift, dtype)
    dst = out[shift:].reshape(*shape[::-1], run).swapaxes(0, len(shape) - 1) if len(shape) > 1 else \
        out[shift:].reshape(*shape, run)
    return out, dst, src


@pytest.mark.parametrize("dtype, run, shift, word", [
    (ml_dtypes.bfloat16, 4, 0, 8),   # 4 bf16 cells: one 8-byte word a run
    (np.float32, 8, 0, 32),          # 8 f32 cells, 32 bytes: one raw item a run
    (ml_dtypes.bfloat16, 8, 1, 16),  # 16 bytes at an odd cell: one raw item (it needs no alignment)
    (ml_dtypes.bfloat16, 3, 0, 2),   # 6 bytes: no wider word divides them
    (ml_dtypes.bfloat16, 4, 1, 2),   # 8 bytes but at an odd cell: not aligned to a wider word
    (ml_dtypes.bfloat16, 2, 0, 4),   # 4 bytes: one 4-byte word a run
])
def test_a_run_copied_as_words_writes_what_copyto_writes(dtype, run, shift, word) -> None:
    rng = np.random.default_rng(run + shift)
    out, dst, src = _pair(rng, dtype, (5, 6), run, shift)
    want, want_dst, _ = _pair(rng, dtype, (5, 6), run, shift)
    np.copyto(want_dst, src)  # numpy's own copy cell by cell: the oracle
    wide_dst, wide_src = wide_runs(dst, src)
    assert wide_dst.itemsize == max(word, np.dtype(dtype).itemsize) and wide_src.shape == wide_dst.shape
    np.copyto(wide_dst, wide_src)
    assert np.array_equal(out.view(np.uint8), want.view(np.uint8))


def test_arrays_of_different_dtypes_or_shapes_are_left_as_they_are() -> None:
    a, b = np.zeros((4, 4), np.float32), np.zeros((4, 4), np.int32)
    assert wide_runs(a, b)[0] is a
    c = np.zeros((4, 2), np.float32)
    assert wide_runs(a, c)[0] is a
