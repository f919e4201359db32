"""The cpu backend's plan tables on a first run (issue 61, first-run memory): what a
contraction's plan reads per cell is held per digit it depends on and read at the plan's
grid as a view, not tabulated for every cell."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from numpy.lib.array_utils import byte_bounds

from backends.cpu import CpuBackend, contract_fast, contract_plan, keys, moves
from backends.cpu.grid_view import on_grid
from ir.mapping import m
from tests.backends.examples import example


def test_the_trf_index_is_held_per_digit_it_depends_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """gemm_i8's TRF index over (lane, out_time, out_packet) repeats along the stream's
    row digit: the plan holds 1/32 of its cells (16 KiB of 512 KiB) and reads back the
    index the per-cell match gives; making a contraction plan from nothing peaks below one
    int32 table of those cells (it held two: the index and its gather at the plan's grid);
    the kernel still equals numpy."""
    made: list[tuple[tuple, int, int]] = []
    make = contract_plan.plan

    def measured(*args):
        tracemalloc.start()
        try:
            out = make(*args)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        lane, out_time, out_packet = (args[0][i] for i in (5, 7, 8))
        made.append((args[0], peak, lane.size * out_time.size * out_packet.size * 4))
        return out

    rng = np.random.default_rng(61)
    a = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    backend, kernel = CpuBackend(), example("gemm_i8", "gemm_i8_kernel")
    backend.run(kernel, (a, w))  # traced outside the measure (tracemalloc slows the trace down)
    monkeypatch.setattr(contract_fast, "make_plan", measured)
    contract_plan._outer_plan.cache_clear()
    contract_plan.plan.cache_clear()
    got = np.asarray(backend.run(kernel, (a, w)))
    np.testing.assert_array_equal(got, a.astype(np.int32) @ w.astype(np.int32).T)
    assert made and all(peak < table for _, peak, table in made), made
    for key, _, _ in made:
        plan = contract_plan._outer_plan(*key)
        lo, hi = byte_bounds(plan.trf_at)
        full = int(np.prod(plan.shape)) * plan.trf_at.itemsize
        assert hi - lo <= full // 16, (hi - lo, full)
        lane, element, out_time, out_packet = key[5:]
        trf = (lane, element)
        space = moves.key_space(moves.joint_frag(trf))
        want = moves.match_keys(space, trf, (lane, out_time, out_packet), "test").index
        np.testing.assert_array_equal(plan.tidx.reshape(-1), want)


@pytest.mark.parametrize("values, shape, steps, sizes", [
    ((4, 1, 6, 2), (4, 8, 6, 2), (96, 12, 2, 1), (4, 8, 6, 2)),   # a broadcast digit: stride 0
    ((4, 1, 6), (4, 8, 6), (48, 24, 6, 1), (4, 2, 4, 6)),        # a table digit read as two grid digits
    ((1, 4), (3, 4), (1, 3), (3, 4)),                            # no common refinement (3 over 4): a copy
    ((2, 8), (2, 8), (8, 1), (2, 4)),                            # a grid digit short of its table digit
    ((1, 4), (2, 4), (1, 2), (4, 2)),                            # digits sharing positions (they carry): a copy
])
def test_a_table_at_a_grid_is_the_gather_of_its_cells(values, shape, steps, sizes) -> None:
    """`on_grid` equals indexing the whole table at every grid point's flat position."""
    table = np.broadcast_to(np.random.default_rng(3).integers(0, 1000, values).astype(np.int32), shape)
    coords = np.meshgrid(*(np.arange(n) for n in sizes), indexing="ij")
    flat = sum(c * s for c, s in zip(coords, steps))
    got = on_grid(table, steps, sizes)
    assert not got.flags.writeable
    np.testing.assert_array_equal(got, np.ascontiguousarray(table).reshape(-1)[flat])


@pytest.mark.parametrize("levels, arithmetic", [
    (("A, B",), True),                  # a host tensor as stored
    (("B / 4, A, B % 4",), True),       # its digits interleaved: still every key once
    (("A # 200, B",), True),            # padding: positions that hold no key, past the live ones
    (("A, B, 1 # 2",), True),           # a padded copy digit (a DM tensor's `1 # 2` cluster)
    (("1 # 2, A, B",), True),           # an outer one
    (("A / 2, 1 # 2, A % 2, B",), True),  # one between a key's digits
    (("A, B % 128, 2",), False),        # a broadcast: a key held twice
])
def test_a_source_holding_every_key_once_is_looked_up_without_a_table(levels, arithmetic) -> None:
    """`moves._where` of a source whose digits are the keys' (a DMA from a host tensor; a
    DM tensor's padding digits too: a write into the result tensor) is arithmetic: nothing
    of the key space's size is allocated (it was an int32 table of every key: 4x an i8
    tensor's bytes, 2 MiB of a 512 Ki-cell i32 result's `to_view`), and it names the position
    the table names."""
    axes = {"A": 128, "B": 256}
    src = tuple(m(s, axes=axes) for s in levels)
    space = moves.key_space(moves.joint_frag(src))
    tracemalloc.start()
    try:
        where = moves._where(space, src, narrow=True)
        held = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(where, keys.RadixWhere) == arithmetic
    if arithmetic:
        assert held < space.size, (held, space.size)
    probe = np.random.default_rng(0).integers(0, space.size, 4096)
    table = np.full(space.size, -1, np.int64)
    positions, pad = moves.logical_keys(src, space)
    table[positions[~pad]] = np.flatnonzero(~pad)
    np.testing.assert_array_equal(where[probe], table[probe])
