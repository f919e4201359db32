"""A padded axis split over time and packet (`R # 16 / 4 ; R # 16 % 4`) when |R| is not a
multiple of the split, as the reference's book reads it (vector-engine/vcg.md,
reduce_time_packet): the fetch places it on the DM element `R # 16`, the commit writes it
back, and an intra-slice reduce of R sums it; cpu == visa == numpy. These were FETCH-2,
COMMIT-3 and an internal error of the reduce's record verifier."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from ir.mapping import m
from ir.mapping.sequence import sequence
from tests.parity import kernels_padded_split as k


@pytest.mark.parametrize("size", range(1, 17))
def test_the_sequencer_places_every_live_cell_of_a_split_padded_axis(size: int) -> None:
    """Stream (t, p) of `R # 16 / 4 ; R # 16 % 4` reads memory cell 4t + p of `R # 16`,
    for every live position (4t + p < |R|), whatever |R|."""
    ax = {"R": size}
    found = sequence([m("1", axes=ax), m("R # 16", axes=ax)], [m("R # 16 / 4", axes=ax), m("R # 16 % 4", axes=ax)])
    assert found, getattr(found, "reason", "")
    entries = found.entries
    sizes = [e.size for e in entries]
    assert int(np.prod(sizes)) == 16
    for flat in range(16):
        digits = np.unravel_index(flat, sizes)
        cell = sum(int(d) * e.stride for d, e in zip(digits, entries))
        if flat < size:  # live: positions are 4t + p in order
            assert cell == flat, (flat, cell, entries)


def test_a_split_padded_axis_round_trips_on_cpu_and_visa() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (256, 10)).astype(np.float32)
    s = rng.integers(-2 ** 31, 2 ** 31, (256, 6)).astype(np.int32)
    for kernel, data in ((k.padded_split_copy, x), (k.padded_split_copy_short, s)):
        assert npu_opt.check(kernel).ok
        for backend in ("cpu", "visa"):
            out = npu_opt.run(kernel, data, backend=backend)
            assert np.array_equal(out.view(np.uint32), data.view(np.uint32)), (kernel.name, backend)


def test_a_reduce_over_a_split_padded_axis_sums_its_live_cells() -> None:
    """Integers as f32: every partial sum is exact, so any order of the sum gives numpy's."""
    rng = np.random.default_rng(4)
    x = rng.integers(-1000, 1000, (256, 10)).astype(np.float32)
    want = x.astype(np.float64).sum(axis=1).astype(np.float32)
    for backend in ("cpu", "visa"):
        assert np.array_equal(npu_opt.run(k.padded_split_sum, x, backend=backend), want), backend


def test_what_stays_refused() -> None:
    """docs/changes.md kd-padded-dma, kd-padded-reduce, kd-short-packet: furiosa-opt accepts
    these layouts; npu-opt refuses each with the code named here. The day one compiles,
    this test fails and the item must go."""
    from tests.parity import kernels_padded_refused as refused

    codes = {kernel.name: [d.code for d in npu_opt.check(kernel).diagnostics]
             for kernel in (refused.dma_splits_a_padded_axis, refused.reduce_around_a_kept_axis,
                            refused.short_packet_padded)}
    assert codes == {"dma_splits_a_padded_axis": ["DMA-5"], "reduce_around_a_kept_axis": ["VE-REDUCE-1"],
                     "short_packet_padded": ["FETCH-11"]}


def test_a_rule_that_cannot_read_a_layout_refuses_at_its_line() -> None:
    """A mapping error inside an op's rule is that rule's refusal at the op's line, with a
    code and a location (it was a bare mapping error with no location)."""
    from pathlib import Path

    from tests.parity import kernels_padded_refused as refused

    (found,) = npu_opt.check(refused.split_shares_packet).diagnostics
    source = Path(refused.__file__).read_text(encoding="utf-8").splitlines()
    assert found.code == "VE-SPLIT-2" and found.file.endswith("kernels_padded_refused.py")
    assert "# VE-SPLIT-2" in source[found.line - 1] and "cannot read this layout" in found.message
