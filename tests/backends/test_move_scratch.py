"""Move plans made with little scratch (issue 38 item 5): the destination's keys read a
block at a time, the strided form's exact check a block at a time, and a move's index in
int32. With blocks of a few cells, every plan and form must be the one numpy gives with
whole arrays at once (`_whole`: every key of both sides, then one lookup)."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu import moves, moves_strided
from ir.mapping import m
from ir.mapping import ops as mops
from ir.mapping.nodes import pair_all

AX = {"A": 4, "B": 3, "C": 19, "D": 5}
CASES = [(("A, B",), ("B, A",)), (("A",), ("B", "A")), (("D",), ("D # 8",)), (("A", "B"), ("A / 2", "B, A % 2")),
         (("C",), ("C # 24 / 4", "C # 24 % 4")), (("A, D",), ("D # 8, B, A",)), (("A, B, C",), ("C, A, B",))]


def _whole(src: tuple, dst: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(index, live) as whole arrays at once: every key of both sides, then a lookup."""
    space = moves.key_space(mops.frag(pair_all(list(src))))
    src_keys, src_pad = moves.logical_keys(src, space)
    dst_keys, dst_pad = moves.logical_keys(dst, space)
    where = np.full(space.size, -1, np.int64)
    live_src = np.flatnonzero(~src_pad)
    where[src_keys[live_src]] = live_src
    return np.where(dst_pad, 0, where[dst_keys]), ~dst_pad


@pytest.fixture(params=[3, 1 << 20])
def blocks(request, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(moves_strided, "_CHECK_BLOCK", request.param)
    real = moves._looked_up
    monkeypatch.setattr(moves, "_looked_up", lambda levels, space, where: real(levels, space, where, request.param))
    moves._PLANS.clear()
    return request.param


@pytest.mark.parametrize("src, dst", CASES)
def test_a_plan_made_in_blocks_reads_the_cells_numpy_says(blocks: int, src, dst) -> None:
    src_levels, dst_levels = tuple(m(s, axes=AX) for s in src), tuple(m(d, axes=AX) for d in dst)
    plan = moves.move_plan(src_levels, dst_levels)
    index, live = _whole(src_levels, dst_levels)
    np.testing.assert_array_equal(plan.index, index)
    np.testing.assert_array_equal(plan.live if plan.live is not None else np.ones(index.size, bool), live)
    assert plan.index.dtype == np.int32


def test_a_strided_form_checked_in_blocks_is_exact(blocks: int) -> None:
    index = np.arange(60).reshape(5, 4, 3).transpose(2, 0, 1).reshape(-1)  # a transposition: affine
    form = moves_strided.strided_form(index.__getitem__, 60, None, (60,), (1,))
    assert form is not None and int(np.prod(form.extents)) == 60
    broken = index.copy()
    broken[-1], broken[-2] = broken[-2], broken[-1]  # one swapped pair late in the array: no grid
    assert moves_strided.strided_form(broken.__getitem__, 60, None, (60,), (1,)) is None


@pytest.mark.parametrize("src, dst", CASES)
def test_a_plan_asked_at_some_positions_reads_the_cells_numpy_says(blocks: int, src, dst) -> None:
    src_levels, dst_levels = tuple(m(s, axes=AX) for s in src), tuple(m(d, axes=AX) for d in dst)
    index, live = _whole(src_levels, dst_levels)
    flat = np.arange(index.size)[::-1][::2].copy()  # every other position, out of order
    got, found = moves.plan_at(src_levels, dst_levels, flat)
    np.testing.assert_array_equal(found, live[flat])
    np.testing.assert_array_equal(got[found], index[flat][found])


@pytest.mark.parametrize("src, dst", CASES)
def test_a_strided_form_made_without_the_whole_plan_is_the_plans_form(blocks: int, src, dst) -> None:
    """The form strided_form_of finds by asking the levels a block of positions at a time
    (issue 38 item 5: no index of the whole output) is the one the whole plan gives."""
    src_levels, dst_levels = tuple(m(s, axes=AX) for s in src), tuple(m(d, axes=AX) for d in dst)
    index, live = _whole(src_levels, dst_levels)
    rows = np.zeros((1, *(mp.size for mp in src_levels)), np.int32)
    moves_strided.FORMS.clear()
    lazy = moves.strided_form_of(rows, src_levels, dst_levels)
    whole = moves_strided.strided_form(index.__getitem__, index.size, None if live.all() else live,
                                       rows.shape[1:], rows.strides[1:])
    assert lazy == whole
    if lazy is None:  # the gather needs the plan: kept
        assert moves._PLANS.get((src_levels, dst_levels)) is not None
