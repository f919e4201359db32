"""First-run memory of a bf16 contraction (issue 61): a "whole" route's products made and
placed a block of A classes at a time, and an affine plan index (`Gather`, the stream
index of `OuterPlan`) held as its offset and strides, not as an array of every cell."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from backends.cpu import blas_route, contract_plan
from backends.cpu.outer_plan import OuterPlan


@pytest.mark.parametrize("nn", [1, 2])
def test_whole_products_are_placed_a_block_of_classes_at_a_time(monkeypatch: pytest.MonkeyPatch, nn: int) -> None:
    """Each row's cells are its (A class, W class) pair's products at the cells `dest`
    names (-0 made +0), checked cell by cell against numpy; no matmul makes the products
    of every A class at once."""
    rng = np.random.default_rng(7)
    da, dw, ni, nj, k = 5, 3, 4, 2, 6
    left = rng.integers(-4, 5, (nn, da * ni, k)).astype(np.float32)
    right = rng.integers(-4, 5, (nn, k, dw * nj)).astype(np.float32)
    left[:, :ni] = -0.0  # class 0's products are zeros, some -0
    ca = np.repeat(np.arange(da), dw)[::-1].copy()  # rows out of class order
    cw = np.tile(np.arange(dw), da)
    cells = ni * nj * nn
    dest = rng.permutation(cells).reshape(ni, nj, nn, 1)
    seen: list[int] = []

    def matmul(lb: np.ndarray, rb: np.ndarray, out: np.ndarray) -> None:
        seen.append(lb.shape[1])
        np.matmul(lb, rb, out=out)

    monkeypatch.setattr(blas_route, "_PRODUCT_BLOCK", 2 * 4 * nn * ni * dw * nj)  # two classes a block
    got = blas_route.whole_placed(matmul, left, right, ca, cw, dest, cells)
    want = np.zeros((len(ca), cells), np.float32)
    for r, (a, w) in enumerate(zip(ca, cw)):
        block = np.matmul(left[:, a * ni:(a + 1) * ni], right[:, :, w * nj:(w + 1) * nj])
        for i, j, n in np.ndindex(ni, nj, nn):
            want[r, dest[i, j, n, 0]] = block[n, i, j] + np.float32(0)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert seen == [2 * ni, 2 * ni, ni]


def test_an_affine_gather_and_the_stream_index_hold_no_cell_array() -> None:
    """A plan's affine gather keeps its offset and strides only and reads back every cell;
    `OuterPlan` keeps the stream adapter's numbers, its `sidx` the docs' formula."""
    fine = (3 + np.arange(4)[:, None, None] * 40 + np.arange(5)[None, :, None] * 8
            + np.arange(8)[None, None, :]).astype(np.int32)
    g = contract_plan.gather(fine, [[0], [1, 2]], (4, 5, 8))
    assert g.held is None and g.size == fine.size
    np.testing.assert_array_equal(g.index, fine.reshape(-1))
    assert g.index.dtype == np.int32
    plan = OuterPlan((64, 4, 2, 16, 8), np.zeros((1, 1, 1), np.int32), None, (1, 16, 32))
    assert not any(isinstance(v, np.ndarray) and v.size > 1 for v in attrs.astuple(plan, recurse=False))
    o, q = np.arange(16)[:, None], np.arange(32)[None, :]
    np.testing.assert_array_equal(plan.sidx, (o // 4) * (2 * 16) + (q // 8) * 16 + q % 8)
