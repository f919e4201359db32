"""Move plans made with little scratch (issue 38 item 5): the destination's keys read a
block at a time, the strided form's exact check a block at a time, and a move's index in
int32. With blocks of a few cells, every plan and form must be the one numpy gives with
whole arrays at once (`_whole`: every key of both sides, then one lookup)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from backends.cpu import keys as keys_mod
from backends.cpu import gathers, moves, moves_strided
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


PADDED = [(("A, B",), ("A # 8, B",)), (("A, C",), ("C # 24, A # 6",)), (("A, B",), ("D # 8", "B, A")),
          (("C",), ("C # 24 / 4", "C # 24 % 4")), (("A, B, C",), ("B # 4, C, A",))]


@pytest.mark.parametrize("block", [1, 7, 1 << 16])
@pytest.mark.parametrize("src, dst", CASES + PADDED)
def test_live_cells_are_the_live_positions_and_their_keys(block: int, src, dst) -> None:
    """`keys.live_cells` (the live cells as a grid of digits) gives, for any k and for any
    run of k, the k-th live position of the whole arrays and its key."""
    src_levels, dst_levels = tuple(m(s, axes=AX) for s in src), tuple(m(d, axes=AX) for d in dst)
    space = moves.key_space(mops.frag(pair_all(list(src_levels))))
    keys, pad = moves.logical_keys(dst_levels, space)
    live = np.flatnonzero(~pad)
    cells = keys_mod.live_cells(dst_levels, space, block)
    assert cells.n == live.size
    k = np.arange(live.size)[::-1].copy()
    np.testing.assert_array_equal(cells.at(k)[0], live[k])
    np.testing.assert_array_equal(cells.at(k)[1], keys[live[k]])
    for lo, hi in [(0, live.size), (1, live.size - 1), (live.size // 3, min(live.size, live.size // 3 + 5))]:
        pos, key = cells.run(lo, hi)
        np.testing.assert_array_equal(pos, live[lo:hi])
        np.testing.assert_array_equal(key, keys[live[lo:hi]])


@pytest.mark.parametrize("src, dst", PADDED)
def test_a_padded_moves_form_is_found_without_a_division_per_cell(blocks: int, monkeypatch, src, dst) -> None:
    """The strided form of a move into a padded layout reads the live cells as runs
    (`live_cells`), never position by position (`looker`: a division per digit and
    cell, issue 61: 0.37 s of a 0.5 s first call), and is the whole plan's form."""
    src_levels, dst_levels = tuple(m(s, axes=AX) for s in src), tuple(m(d, axes=AX) for d in dst)
    index, live = _whole(src_levels, dst_levels)
    rows = np.zeros((1, *(mp.size for mp in src_levels)), np.int32)
    moves_strided.FORMS.clear()

    def refused(*args):
        raise AssertionError("the form looked the cells up one by one")
    monkeypatch.setattr(moves, "looker", refused)
    lazy = moves.strided_form_of(rows, src_levels, dst_levels)
    whole = moves_strided.strided_form(index.__getitem__, index.size, None if live.all() else live,
                                       rows.shape[1:], rows.strides[1:])
    assert lazy == whole


@pytest.mark.parametrize("seed", range(12))
def test_the_affine_check_finds_one_wrong_cell_anywhere(blocks: int, seed: int) -> None:
    """`_affine` (inner digits as one table, outer ones as rows) accepts columns that are
    their grid and refuses them with any one cell changed."""
    rng = np.random.default_rng(seed)
    dims = [(int(rng.integers(2, 6)), (int(rng.integers(-9, 9)), int(rng.integers(-9, 9)))) for _ in range(3)]
    n = int(np.prod([e for e, _ in dims]))
    k = np.arange(n)
    cols = []
    for i in range(2):
        v, rest = np.full(n, 5 * i + 3, np.int64), k.copy()
        for e, steps in dims:
            v += rest % e * steps[i]
            rest //= e
        cols.append(v)
    column = lambda v: moves_strided._Column(v.__getitem__, n, run=lambda lo, hi: v[lo:hi])  # noqa: E731
    assert moves_strided._affine(tuple(column(v) for v in cols), 0, n, dims)
    bad = cols[seed % 2].copy()
    bad[int(rng.integers(1, n))] += 1
    changed = (column(bad), column(cols[1])) if seed % 2 == 0 else (column(cols[0]), column(bad))
    assert not moves_strided._affine(changed, 0, n, dims)


def _whole_where(space, src_levels: tuple) -> np.ndarray:
    src_keys, src_pad = moves.logical_keys(src_levels, space)
    where = np.full(space.size, -1, np.int64)
    live_src = np.flatnonzero(~src_pad)
    where[src_keys[live_src]] = live_src
    return where


@pytest.mark.parametrize("block", [3, 1 << 16])
@pytest.mark.parametrize("src", [src for src, _ in CASES] + [dst for _, dst in PADDED])
def test_the_sources_keys_made_a_block_at_a_time_name_the_cells_numpy_does(block: int, src, monkeypatch) -> None:
    """`_where` (key -> source position) keys its source a block of positions at a time
    (issue 61: a DM tensor's source of every slice, padding included, is never keyed at
    once), naming for every key the source position the whole arrays name."""
    monkeypatch.setattr(moves, "_WHERE_BLOCK", block)
    src_levels = tuple(m(s, axes=AX) for s in src)
    space = moves.key_space(mops.frag(pair_all(list(src_levels))))
    want = _whole_where(space, src_levels)
    for narrow in (False, True):
        got = moves._where(space, src_levels, narrow)
        assert got.dtype == (np.int32 if narrow else np.int64)
        np.testing.assert_array_equal(got[np.arange(space.size)], want)  # a table, or arithmetic (keys.RadixWhere)


def test_a_mostly_padding_source_is_keyed_with_little_scratch() -> None:
    """A source of 64 x 4096 positions, one row of them live (a tensor on 1/64 of the
    slices): `_where` holds its result and a few blocks' scratch, not a key and a flag per
    source position (1.3 MiB before)."""
    src_levels = (m("1 # 64", axes={"E": 4096}), m("E", axes={"E": 4096}))
    space = moves.key_space(mops.frag(pair_all(list(src_levels))))
    tracemalloc.start()
    try:
        where = moves._where(space, src_levels, True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(where[np.arange(4096)], np.arange(4096))  # a table or arithmetic
    assert peak <= 4096 * 4 + (1 << 20), peak


@pytest.mark.parametrize("shape, order", [((6, 5, 4), (0, 1, 2)), ((6, 5, 4), (2, 0, 1)), ((7,), (0,)), ((3, 8), (1, 0))])
def test_the_offsets_of_asked_positions_are_the_whole_tables(shape, order) -> None:
    """`_offsets_at` (the byte offsets of some source positions, issue 61) equals the table
    of every element's offset read at those positions: C-order, transposed and reversed."""
    base = np.zeros(shape, np.int16).transpose(order)
    views = [base, base[::-1]] if base.ndim else [base]
    flat = np.array([0, 1, base.size - 1, base.size // 2, 3], np.int64)
    for a in views:
        np.testing.assert_array_equal(moves_strided._offsets_at(a.shape, a.strides, flat),
                                      _offsets(a.shape, a.strides)[flat])


def test_a_strided_form_never_tables_every_source_offset() -> None:
    """A strided form asks the offsets of the cells its plan reads only (issue 61: the
    source of a first run's DMA is a whole DM tensor of every slice; its table was 32 MiB)."""
    index = np.arange(60).reshape(5, 4, 3).transpose(2, 0, 1).reshape(-1)
    tracemalloc.start()
    try:
        form = moves_strided.strided_form(index.__getitem__, 60, None, (1 << 20,), (2,))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert form is not None and form.extents == (3, 20) and form.vstrides == (2, 6)  # position 3j + i
    assert peak < 256 << 10, peak  # a table of the source's 1 Mi offsets: 4 MiB


def _offsets(shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """The oracle: the byte offset of every element (C order of `shape`), one table."""
    offs = np.zeros(1, np.int64)
    for n, s in zip(shape, strides):
        offs = np.add.outer(offs, np.arange(n, dtype=np.int64) * s).reshape(-1)
    return offs


def _peak(make):
    """(make(), the peak bytes traced while it ran above those held before it)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out = make()
        return out, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_a_small_padded_dmas_form_is_checked_in_small_blocks() -> None:
    """The form of a DMA of 64 Ki cells onto 1 of 32 slices (a small kernel's DM tensor,
    issue 61: drawn_s1_7 held 1.2 MiB of check scratch for 0.44 MiB of tensors) is checked
    a block of ~1/32 of its cells at a time (`moves_strided.check_block`), and moves every
    cell where numpy's transpose puts it (the other slices zero)."""
    ax = {"E": 256, "F": 256}
    src, dst = (m("E, F", axes=ax),), (m("1 # 32", axes=ax), m("F, E", axes=ax))
    small = {"E": 3, "F": 4}  # a first form made before: the mapping code's one-off costs
    moves.strided_form_of(np.zeros((1, 12), np.int8), (m("E, F", axes=small),),
                          (m("1 # 2", axes={}), m("F, E", axes=small)))
    rows = np.arange(1 << 16, dtype=np.int32).reshape(1, -1)
    moves_strided.FORMS.clear()
    form, peak = _peak(lambda: moves.strided_form_of(rows, src, dst))
    assert peak < 320 << 10, peak  # 16 Ki-cell blocks: ~800 KiB
    out = moves_strided.apply_form(rows, form, 32 << 16, None).reshape(32, 256, 256)
    np.testing.assert_array_equal(out[0], rows.reshape(256, 256).T)
    assert not out[1:].any()


@pytest.mark.parametrize("values", [None, lambda cells: cells.astype(np.int64) * 5 + 9])
def test_a_gathers_affine_check_reads_a_block_of_its_cells_at_a_time(values) -> None:
    """`gathers._affine` of a 32 Ki-cell layout (a small kernel's contraction operand) holds
    a few blocks of ~1/32 of its cells, not tables of every one (~0.55 MiB before), asks
    `values` (a lazy move's offsets of the cells) a block at a time, and still finds one
    wrong cell."""
    fine = (np.arange(128)[:, None] * 3 + np.arange(256)[None, :] * 700).astype(np.int32)
    asked: list[int] = []
    value = None if values is None else (lambda cells: asked.append(cells.size) or values(cells))
    found, peak = _peak(lambda: gathers._affine(fine) if value is None else gathers._affine(fine, value))
    assert found == ((0, (3, 700)) if values is None else (9, (15, 3500)))
    assert peak < 128 << 10, peak
    assert max(asked, default=0) <= fine.size // 16
    broken = fine.copy()
    broken[100, 7] += 1
    assert (gathers._affine(broken) if values is None else gathers._affine(broken, values)) is None
