"""The interpreter's shortcuts (issue 18, item 5) against independent numpy oracles.

- `contract._row_sum`: the integer sums over the distinct rows of slices that hold copies
  of the same tiles equal an int64 `np.einsum` of every row, for both orientations of the
  split and when no split exists;
- `contract._row_sum` reads the weights of the distinct rows only, and `trf.read_weights`
  of chosen rows reads the TRF bytes a numpy oracle reads;
- `operands.code_range`: the bf16 magnitude bounds give the exponent range and the
  shift-widening decision that counting every code present gives, and a shift widens
  exactly like the conversion table whenever it is chosen.

The examples' results themselves are pinned to the cpu backend in test_interp.py.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tu_ops.enums import CellFormat, FeedElementType
from tu_ops.target import get_target
from visa.interp import contract, operands
from visa.interp.fast import row_split
from visa.interp import trf as trf_mod
from visa.interp.memory import Memory
from visa.interp.values import widen


def _plan(g: int, digits: tuple[int, ...], keep: tuple[bool, ...]) -> SimpleNamespace:
    return SimpleNamespace(g=g, digits=digits, keep=keep)


def _grid(rng, outer: int, inner: int, shape: tuple[int, ...], vary: str) -> np.ndarray:
    """(outer * inner, *shape) int8 rows that vary with the `vary` factor only ("outer",
    "inner") or with both ("both")."""
    if vary == "both":
        return rng.integers(-128, 128, (outer * inner, *shape), dtype=np.int8)
    n = outer if vary == "outer" else inner
    base = rng.integers(-128, 128, (n, *shape), dtype=np.int8)
    idx = np.arange(outer * inner) // inner if vary == "outer" else np.arange(outer * inner) % inner
    return base[idx]


@pytest.mark.parametrize("s_vary,w_vary,split", [("outer", "inner", True), ("inner", "outer", True),
                                                  ("both", "inner", False), ("outer", "outer", None)])
def test_row_sum_equals_an_einsum_of_every_row(s_vary, w_vary, split):
    rng = np.random.default_rng(len(s_vary) * 7 + len(w_vary))
    outer, inner = 4, 6
    # axes: rows, lanes, digit (kept), digit (summed), column, leaf
    s = _grid(rng, outer, inner, (1, 5, 3, 1, 8), s_vary)
    w = _grid(rng, outer, inner, (4, 5, 3, 1, 8), w_vary)
    keep = [0, 1, 2, 4]
    want = np.einsum(s.astype(np.int64), [0, 1, 2, 3, 4, 5], w.astype(np.int64), [0, 1, 2, 3, 4, 5], keep)
    found = row_split.split(s, w)
    if split:
        assert found is not None and found[0] * found[1] == outer * inner and found[2] == (s_vary == "outer")
    elif split is False:
        assert found is None
    scratch = SimpleNamespace(scratch=np.empty)
    got, bound = contract._row_sum(s, w, keep, _plan(8, (5, 3), (True, False)), scratch)
    row_axes = got.ndim - want.ndim + 1                   # (outer, inner) for a split, else rows
    assert row_axes == (1 if found is None else 2)
    got = np.broadcast_to(got, (*got.shape[:row_axes], *want.shape[1:])).reshape(want.shape)
    np.testing.assert_array_equal(got, want)
    assert bound >= np.abs(want).max()


@pytest.mark.parametrize("repeated", ["stream", "weights", "neither"])
@pytest.mark.parametrize("split", [True, False])
def test_row_sum_with_an_operand_repeated_along_a_kept_digit(repeated, split):
    """A stream that repeats its packets along a kept digit the weights vary along (or the
    reverse) gives the sums of every digit position (the batch axis is cut to one)."""
    rng = np.random.default_rng(11 + len(repeated) + split)
    outer, inner = 3, 4
    s = _grid(rng, outer, inner, (1, 5, 3, 2, 8), "outer" if split else "both")
    w = _grid(rng, outer, inner, (4, 5, 3, 2, 8), "inner" if split else "both")
    if repeated == "stream":
        s = np.ascontiguousarray(np.broadcast_to(s[:, :, :1], s.shape))
    elif repeated == "weights":
        w = np.ascontiguousarray(np.broadcast_to(w[:, :, :1], w.shape))
    keep = [0, 1, 2, 4]
    want = np.einsum(s.astype(np.int64), [0, 1, 2, 3, 4, 5], w.astype(np.int64), [0, 1, 2, 3, 4, 5], keep)
    got, _ = contract._row_sum(s, w, keep, _plan(8, (5, 3), (True, False)), SimpleNamespace(scratch=np.empty))
    row_axes = got.ndim - want.ndim + 1
    got = np.broadcast_to(got, (*got.shape[:row_axes], *want.shape[1:])).reshape(want.shape)
    np.testing.assert_array_equal(got, want)
    if repeated != "neither":
        cut = contract._unbatched(s, w, keep)
        assert [x.shape[2] for x in cut] == ([1, 5] if repeated == "stream" else [5, 1])


def _counted_range(codes: np.ndarray):
    """The exponent range by counting every code present (the table path)."""
    return operands._range(codes, operands.widen_table(FeedElementType.BF16), 8)


@pytest.mark.parametrize("extra", [[], [0x0001], [0x8040], [0x7FC1], [0x7F80], [0xFF80]])
@pytest.mark.parametrize("kind", ["random", "zeros"])
def test_bf16_code_range_matches_counting(extra, kind):
    rng = np.random.default_rng(sum(extra) + len(kind))
    if kind == "zeros":
        codes = rng.choice(np.array([0x0000, 0x8000], np.uint16), 500)
    else:
        codes = (rng.integers(0x0080, 0x7F80, 500) | (rng.integers(0, 2, 500) << 15)).astype(np.uint16)
    codes = np.concatenate([codes, np.array(extra, np.uint16)]).reshape(3, -1) if len(extra) else codes.reshape(4, -1)
    got, shift = operands.code_range(codes, FeedElementType.BF16)
    assert got == _counted_range(codes)
    subnormal_or_nan = any((c & 0x7FFF) < 0x80 and (c & 0x7FFF) or (c & 0x7FFF) > 0x7F80 for c in extra)
    assert shift == (not subnormal_or_nan)
    if shift:
        np.testing.assert_array_equal(operands.widen_codes(codes).view(np.uint32),
                                      widen(codes, FeedElementType.BF16).view(np.uint32))


class _Recorded:
    """Weights read on demand (as `contract.Weights`): a strided proxy of the same rows,
    and a record of the rows read."""

    def __init__(self, w: np.ndarray) -> None:
        self.w, self.reads = w, []
        wide = np.zeros((w.shape[0], 3, *w.shape[1:]), w.dtype)
        wide[:, 1] = w
        self.proxy = wide[:, 1]                      # not contiguous: compared without a copy
        self.shape = w.shape

    def read(self, which):
        self.reads.append(None if which is None else which.tolist())
        return self.w if which is None else self.w[which]


@pytest.mark.parametrize("s_vary,w_vary", [("outer", "inner"), ("inner", "outer"), ("both", "inner")])
def test_row_sum_reads_the_weights_of_distinct_rows_only(s_vary, w_vary):
    rng = np.random.default_rng(len(s_vary) + 3 * len(w_vary))
    outer, inner = 3, 5
    s = _grid(rng, outer, inner, (1, 4, 2, 1, 8), s_vary)
    w = _grid(rng, outer, inner, (4, 4, 2, 1, 8), w_vary)
    keep = [0, 1, 2, 4]
    want = np.einsum(s.astype(np.int64), [0, 1, 2, 3, 4, 5], w.astype(np.int64), [0, 1, 2, 3, 4, 5], keep)
    lazy = _Recorded(w)
    got, _ = contract._row_sum(s, lazy, keep, _plan(8, (4, 2), (True, False)), SimpleNamespace(scratch=np.empty))
    row_axes = got.ndim - want.ndim + 1
    got = np.broadcast_to(got, (*got.shape[:row_axes], *want.shape[1:])).reshape(want.shape)
    np.testing.assert_array_equal(got, want)
    expected = {"inner": list(range(inner)), "outer": [o * inner for o in range(outer)]}
    assert lazy.reads == [None if s_vary == "both" else expected[w_vary]]


def _trf_rows(groups):
    """A `Rows` stand-in: (chip, cluster) -> its slices, rows numbered group after group."""
    keys = [k for k, sl in groups.items() for _ in sl]
    slices = np.array([s for sl in groups.values() for s in sl], np.int64)
    sels, at = [], 0
    for k, sl in groups.items():
        sels.append((k, np.arange(at, at + len(sl))))
        at += len(sl)
    runs = [(k, sel, slices[sel], bool(np.array_equal(np.diff(slices[sel]), np.ones(len(sel) - 1))))
            for k, sel in sels]
    return SimpleNamespace(count=len(keys), slice=slices, groups=lambda: iter(sels), slice_groups=lambda: runs)


@pytest.mark.parametrize("groups", [{(0, 0): [2, 3, 4, 5, 6]}, {(0, 0): [0, 4, 5], (0, 1): [1, 2, 3, 9]}])
@pytest.mark.parametrize("order", ["whole", "permuted"])
def test_read_weights_of_chosen_rows_match_the_trf_bytes(groups, order):
    """`trf.read_weights` of some rows equals the i8 elements a numpy oracle reads from the
    TRF bytes (lane l of slice s: the `lane_bytes` from l x lane_bytes, from the tensor's first
    row on); `trf.weight_rows` is a view of those bytes when the rows are one group's run."""
    rng = np.random.default_rng(len(groups) + len(order))
    mem = Memory(get_target("rngd"))
    for key in groups:
        mem.trf(*key)[...] = rng.integers(0, 256, mem.trf(*key).shape, dtype=np.uint8)
    lanes, first = 8, 3
    tensor = trf_mod.TrfTensor(SimpleNamespace(lanes=lanes, cell_format=CellFormat.INT9), first, mem.trf_bytes // lanes)
    outer = SimpleNamespace(weight_type=FeedElementType.RawInt8)
    index = np.arange(128).reshape(2, 64)
    if order == "permuted":
        index = rng.permutation(index.reshape(-1)).reshape(2, 64)
    rows = _trf_rows(groups)
    which = np.array([rows.count - 1, 0, 2])
    got = trf_mod.read_weights(outer, tensor, rows, mem, index, which).copy()
    for i, r in enumerate(which.tolist()):
        key = next(k for k, sel in rows.groups() if r in sel)
        cells = mem.trf(*key)[:, rows.slice[r]].reshape(lanes, -1)[:, first * 32:].view(np.int8)
        np.testing.assert_array_equal(got[i], cells[:, index])
    view = trf_mod.weight_rows(outer, tensor, rows, mem, index)
    assert (view is None) == (len(groups) > 1)
    if view is not None:
        (key, sel), = rows.groups()
        bytes_ = mem.trf(*key)[:, rows.slice[sel]].reshape(lanes, -1, len(sel), 32)[:, first:first + 4]
        np.testing.assert_array_equal(view.view(np.uint8), bytes_.transpose(2, 0, 1, 3))
