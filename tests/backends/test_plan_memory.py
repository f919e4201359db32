"""The cpu backend's plan tables on a first run (issue 61, first-run memory): what a
contraction's plan reads per cell is held per digit it depends on and read at the plan's
grid as a view, not tabulated for every cell."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from numpy.lib.array_utils import byte_bounds

from backends.cpu import CpuBackend, contract_fast, contract_plan, moves
from backends.cpu.grid_view import on_grid
from tests.backends.examples import example


def _gemm_i8() -> tuple[object, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(61)
    a = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    return example("gemm_i8", "gemm_i8_kernel"), a, w


def _held_plans(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """The outer-plan keys of the contraction plans a run makes (filled as it runs)."""
    keys: list[tuple] = []
    make = contract_fast.make_plan
    monkeypatch.setattr(contract_fast, "make_plan", lambda *args: keys.append(args[0]) or make(*args))
    return keys


def test_the_trf_index_is_held_per_digit_it_depends_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """gemm_i8's TRF index over (lane, out_time, out_packet) repeats along the stream's
    row digit: the plan holds 1/32 of its cells (16 KiB of 512 KiB), and reads back the
    index the per-cell match gives; the kernel still equals numpy."""
    contract_plan._outer_plan.cache_clear()
    contract_plan.plan.cache_clear()
    keys = _held_plans(monkeypatch)
    kernel, a, w = _gemm_i8()
    got = np.asarray(CpuBackend().run(kernel, (a, w)))
    np.testing.assert_array_equal(got, a.astype(np.int32) @ w.astype(np.int32).T)
    assert keys
    for key in keys:
        plan = contract_plan._outer_plan(*key)
        lo, hi = byte_bounds(plan.trf_at)
        full = int(np.prod(plan.shape)) * plan.trf_at.itemsize
        assert hi - lo <= full // 16, (hi - lo, full)
        lane, element, out_time, out_packet = key[5:]
        trf = (lane, element)
        space = moves.key_space(moves.joint_frag(trf))
        want = moves.match_keys(space, trf, (lane, out_time, out_packet), "test").index
        np.testing.assert_array_equal(plan.tidx.reshape(-1), want)


def test_the_plan_reads_no_table_of_every_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """Making gemm_i8's contraction plan from nothing peaks below one int32 table of its
    (lane, out_time, out_packet) cells (it held two: the TRF index and its gather at the grid)."""
    peaks: list[tuple[int, int]] = []
    make = contract_plan.plan

    def measured(*args):
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        out = make(*args)
        lane, out_time, out_packet = (args[0][i] for i in (5, 7, 8))
        peaks.append((tracemalloc.get_traced_memory()[1] - before, lane.size * out_time.size * out_packet.size * 4))
        return out

    monkeypatch.setattr(contract_fast, "make_plan", measured)
    contract_plan._outer_plan.cache_clear()
    contract_plan.plan.cache_clear()
    kernel, a, w = _gemm_i8()
    tracemalloc.start()
    try:
        got = np.asarray(CpuBackend().run(kernel, (a, w)))
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(got, a.astype(np.int32) @ w.astype(np.int32).T)
    assert peaks and all(peak < table for peak, table in peaks), peaks


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
