"""The interpreter's shortcuts (issue 18, item 5) against independent numpy oracles.

- `contract._row_sum`: the integer sums over the distinct rows of slices that hold copies
  of the same tiles equal an int64 `np.einsum` of every row, for both orientations of the
  split and when no split exists;
- `operands.code_range`: the bf16 magnitude bounds give the exponent range and the
  shift-widening decision that counting every code present gives, and a shift widens
  exactly like the conversion table whenever it is chosen.

The examples' results themselves are pinned to the cpu backend in test_interp.py.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tu_ops.enums import FeedElementType
from visa.interp import contract, operands
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
    found = contract._row_split(s, w)
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
