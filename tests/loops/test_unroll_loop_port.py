"""The reference's unroll_loop.rs ported (tests/loops/unroll_loop.py): the rolled and the
unrolled kernels compute the same rows as a numpy transpose, on the cpu backend and in the
VISA interpreter; the rolled one's artifact holds the row's DMA once, the unrolled ones once
per iteration."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from tests.loops import unroll_loop as U

X = (np.arange(512 * 32) % 253 - 126).astype(np.int8).reshape(512, 32)


def _want(rows: int) -> np.ndarray:
    want = np.zeros((32, 512), np.int8)
    want[:rows] = X.T[:rows]
    return want


@pytest.mark.parametrize("backend", ["cpu", "visa"])
@pytest.mark.parametrize("kernel, rows", [
    (U.transpose_four_rows_rolled, 4), (U.transpose_four_rows_unrolled, 4),
    (U.transpose_four_rows_helper_unrolled, 4), (U.nested_both_unrolled, 2), (U.nested_both_rolled, 2)])
def test_the_ported_kernels_transpose_their_rows(kernel, rows, backend):
    assert np.array_equal(npu_opt.run(kernel, X, backend=backend), _want(rows))


def test_the_rolled_loop_keeps_one_body():
    rolled = npu_opt.compile(U.transpose_four_rows_rolled).text
    unrolled = npu_opt.compile(U.transpose_four_rows_unrolled).text
    assert rolled.count("= dma_into ") == 1 and unrolled.count("= dma_into ") == 4
    assert rolled.count("= loop_begin ") == 1 and "loop_begin" not in unrolled
