"""The float32-matmul contraction (visa/interp/fast/contract_blas.py) on a plain grid: the
stream rows of each part read as a strided view and the products written straight into
the accumulators. Checked against numpy (fancy indexing, float64 sums of small integers)
and against the same call with accumulators the in-place write cannot take."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from visa.interp.fast import contract_blas


@pytest.mark.parametrize("rows", [np.arange(12).reshape(3, 4), np.arange(1, 12, 2).reshape(2, 3),
                                  np.array([[9, 7, 5], [3, 1, -1]]) + 1, np.array([[4]]),
                                  np.array([[0, 2, 1], [3, 5, 4]])])
def test_grid_rows_are_the_gathered_rows(rows: np.ndarray) -> None:
    a = np.random.default_rng(1).integers(0, 1 << 16, (12, 3, 5)).astype(np.uint16)
    got = contract_blas._rows(a, rows)
    assert got.shape == a[rows].shape and np.array_equal(got, a[rows])
    steps_evenly = rows.shape != (2, 3) or rows[0, 1] - rows[0, 0] == rows[0, 2] - rows[0, 1]
    assert np.shares_memory(got, a) == steps_evenly     # a view exactly when the rows step evenly


def _case(order: str):
    """A 2 x 2 grid of (stream row, TRF operand) pairs, 1 stream class x 2 TRF classes of
    slots, 2 steps of 4 leaves, 3 lanes; small integers, one stream row all -0."""
    rng = np.random.default_rng(5)
    g, rr, lanes, steps = 4, 4, 3, 2
    h_of, which = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    vals = rng.integers(-6, 7, (2, 1, steps * g)).astype(np.float32)
    vals[1] = -0.0
    codes = vals.astype(ml_dtypes.bfloat16).view(np.uint16)
    wt = rng.integers(-6, 7, (2, 4 * rr, lanes)).astype(np.float32)
    tread = np.array([[0, 1], [2, 3]])
    slots, sc, tc, t_reps = np.arange(2), np.zeros(2, np.int64), np.arange(2), np.arange(2)
    parts = [(0, (slots, sc, np.zeros(1, np.int64), tc, t_reps), codes)]
    out = np.zeros((4, lanes, 2, 1), np.float32, order=order)
    w_idx = (tread[:, :, None] * rr + np.arange(g)).reshape(2, -1)        # (TRF class, element)
    want = np.einsum("re,rtel->rlt", vals[h_of, 0].astype(np.float64),
                     wt[which][:, w_idx].astype(np.float64)).astype(np.float32)[..., None] + np.float32(0)
    return (parts, h_of, wt, which, tread, rr, g, out), want


@pytest.mark.parametrize("order", ["C", "F"])
def test_the_products_land_on_their_rows_and_slots(order: str) -> None:
    """C: the in-place write; F (not C-contiguous): the picking path. Both the numpy sums,
    +0 (bits 0) where every product is -0."""
    args, want = _case(order)
    got = contract_blas.contract(*args)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert not got[2:].view(np.uint32).any()


def _rows_case(h_of: np.ndarray, which: np.ndarray):
    """`_case`'s slots and operands with the rows' (stream row, TRF operand) pairs `h_of`,
    `which` (4 rows), C-contiguous accumulators."""
    (parts, _, wt, _, tread, rr, g, out), _ = _case("C")
    codes = parts[0][2]
    vals = codes.view(ml_dtypes.bfloat16).astype(np.float64)
    w_idx = (tread[:, :, None] * rr + np.arange(g)).reshape(2, -1)
    want = np.einsum("re,rtel->rlt", vals[h_of, 0], wt[which][:, w_idx].astype(np.float64)).astype(np.float32)
    return (parts, h_of, wt, which, tread, rr, g, out), want[..., None] + np.float32(0)


@pytest.mark.parametrize("h_of, which, order", [([0, 0, 1, 1], [0, 1, 0, 1], "stream"),
                                                ([0, 1, 0, 1], [0, 0, 1, 1], "trf"),
                                                ([1, 0, 0, 1], [0, 1, 0, 1], None)])
def test_rows_in_either_pair_order_are_written_in_place(h_of: list, which: list, order: str | None) -> None:
    """Rows running through the (stream row, TRF operand) pairs stream-major or TRF-major take
    the in-place write (`rows_in_place`), any other order the picking path; all the numpy sums."""
    h, w = np.array(h_of), np.array(which)
    assert contract_blas.rows_in_place(h, w, 2, 2) == (order is not None)
    assert contract_blas._row_order(h * 2 + w, 1, 2, 2) == order
    args, want = _rows_case(h, w)
    got = contract_blas.contract(*args)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_classes_are_numbered_in_the_order_they_first_come() -> None:
    """`_classes`: equal rows share a class, numbered by where each class first comes (so
    slots that run through the pairs in order are seen to), with that first row."""
    table = np.array([[5, 1], [2, 2], [5, 1], [0, 9], [2, 2], [7, 7]])
    first, cls = contract_blas._classes(table)
    seen: dict[tuple, int] = {}
    want = [seen.setdefault(tuple(r), len(seen)) for r in table.tolist()]
    assert cls.tolist() == want
    assert first.tolist() == [0, 1, 3, 5]


def test_slots_in_place_when_they_run_through_the_pairs_in_order() -> None:
    """Slots s = (stream class, TRF class) in order, whatever the classes' values sort as; and
    not when two slots swap."""
    sstep = np.repeat(np.array([[40], [8], [24]]), 2, axis=0)        # stream classes 0, 0, 1, 1, 2, 2
    tread = np.tile(np.array([[3], [1]]), (3, 1))                    # TRF classes 0, 1, 0, 1, 0, 1
    none = np.zeros((0, 0), np.bool_)
    assert contract_blas.slots_in_place(sstep, tread, none)
    assert not contract_blas.slots_in_place(sstep, tread[[1, 0, 2, 3, 4, 5]], none)


@pytest.mark.parametrize("case", ["random", "zeros", "signed zeros", "small", "empty", "one significand bit",
                                  "infinity", "subnormal"])
def test_the_compiled_floor_is_the_numpy_floor(case: str) -> None:
    """`contract_jit_scan.bf16_floor` (one compiled pass) gives `ir.bf16_exact.unit_floor`'s range
    (the plain passes) of bf16 codes: zeros, -0, NaN / infinities / subnormals (None)."""
    pytest.importorskip("numba")
    from ir.bf16_exact import unit_floor
    from visa.interp.fast import contract_jit, contract_jit_scan
    rng = np.random.default_rng(3)
    codes = {"random": rng.integers(0, 1 << 16, (3, 40, 17)),
             "zeros": np.zeros((2, 9)), "signed zeros": np.full((4, 5), 0x8000), "empty": np.zeros((3, 0)),
             "small": (rng.integers(0, 1 << 14, (5, 33)) | 0x80),
             "one significand bit": rng.integers(120, 130, (6, 7)) << 7 | 0x40,
             "infinity": np.array([[0x3F80, 0xFF80]]), "subnormal": np.array([[0x3F80, 0x0001, 0]])}[case]
    codes = np.asarray(codes).astype(np.uint16)
    assert contract_jit_scan.bf16_floor(contract_jit._compiled(), codes) == unit_floor(codes)


def test_the_compiled_floor_of_widened_weights_is_the_numpy_floor() -> None:
    """The matmul route's weights are widened float32 cells (a bf16 code 16 bits up): their
    compiled one-pass range (`contract_jit_scan._wide_floor`, through `bf16_floor`) is
    `ir.bf16_exact.unit_floor`'s, whatever the low halves hold, and its raw (largest, smallest
    nonzero less one, OR) of the masked cells is numpy's."""
    pytest.importorskip("numba")
    from ir.bf16_exact import unit_floor
    from visa.interp.fast import contract_jit, contract_jit_scan
    kernels, rng = contract_jit._compiled(), np.random.default_rng(5)
    cases = [rng.integers(0, 1 << 16, (4, 33)), np.zeros((3, 8)), np.full((2, 5), 0x8000), np.zeros((2, 0)),
             rng.integers(0, 1 << 14, (5, 9)) | 0x80, rng.integers(120, 130, (6, 7)) << 7 | 0x40,
             np.array([[0x3F80, 0xFF80]]), np.array([[0x3F80, 0x0001, 0]])]
    for codes in cases:
        for junk in (0, 1):   # low halves zero (a shift) or not (a table entry's bits)
            cells = np.asarray(codes).astype(np.uint32) << 16 | (rng.integers(0, 1 << 16, np.shape(codes)) * junk
                                                                 ).astype(np.uint32)
            assert contract_jit_scan.bf16_floor(kernels, cells) == unit_floor(cells)
            m = cells.reshape(-1) & np.uint32(0x7FFF0000)
            oracle = ((int(m.max()) if m.size else 0), (int((m - np.uint32(1)).min()) if m.size else 0xFFFFFFFF),
                      int(np.bitwise_or.reduce(m)) if m.size else 0)
            assert tuple(int(x) for x in kernels["_wide_floor"](cells.reshape(-1))) == oracle


def test_a_second_contraction_on_the_same_weights_reuses_their_laid_operand() -> None:
    """Two contractions reading the same widened weights (a tile's two, `_by_blas`): the
    first lays the matmul operand into `laid`, the second (another stream) reads it from
    there; both the numpy sums."""
    (parts, h_of, wt, which, tread, rr, g, out), want = _case("C")
    laid: dict = {}
    got = contract_blas.contract(parts, h_of, wt, which, tread, rr, g, out, laid)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)) and len(laid) == 1
    (b,) = laid.values()
    codes = np.flip(parts[0][2], axis=0).copy()         # the stream rows swapped
    swapped = [(parts[0][0], parts[0][1], codes)]
    again = contract_blas.contract(swapped, h_of, wt, which, tread, rr, g, np.zeros_like(out), laid)
    assert len(laid) == 1 and next(iter(laid.values())) is b
    vals = codes.view(ml_dtypes.bfloat16).astype(np.float64)
    w_idx = (tread[:, :, None] * rr + np.arange(g)).reshape(2, -1)
    expect = np.einsum("re,rtel->rlt", vals[h_of, 0], wt[which][:, w_idx].astype(np.float64)).astype(np.float32)
    assert np.array_equal(again.view(np.uint32), (expect[..., None] + np.float32(0)).view(np.uint32))
