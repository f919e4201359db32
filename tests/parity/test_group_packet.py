"""A ragged piece over several axes (`[A3, B5] # 16`: 15 live cells, then padding) matches
memory digits that step as one run, on either side of a match (ir/mapping/ranges.group_run)."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from ir.mapping import m
from ir.mapping.ranges import DigitRange, group_run
from ir.mapping.sequence import sequence
from tests.parity import kernels_group_packet as k

SIZES = dict(A3=3, B5=5, C2=2, D4=4)


def _ragged(text: str):
    (piece,) = [f for f in m(text, axes=SIZES).factors() if type(f).__name__ == "RaggedFactor"]
    return piece


def test_the_digit_ranges_a_group_enumerates():
    assert group_run(_ragged("[A3, B5] # 16")) == (DigitRange("A3", 1, 3), DigitRange("B5", 1, 5))
    assert group_run(_ragged("B5 # 8")) is None  # one axis: ragged_run's shape
    assert group_run(_ragged("[B5, A3] # 16")) == (DigitRange("B5", 1, 5), DigitRange("A3", 1, 3))


def test_the_fetch_reads_the_group_and_the_dma_writes_it_back():
    """`[A3, B5, C2] # 32` on DM `A3, B5, C2` was FETCH-2 ("a RaggedFactor is never refined"),
    and the DMA out of it DMA-4; both match now, cpu == visa == the input."""
    assert npu_opt.check(k.group_packet).ok
    x = np.random.default_rng(3).integers(-128, 128, (3, 5, 2)).astype(np.int8)
    for backend in ("cpu", "visa"):
        buf = k.Grid.alloc(npu_opt.Device("rngd"))
        buf.write(x.reshape(buf.shape))
        assert np.array_equal(np.asarray(npu_opt.run(k.group_packet, buf, backend=backend)), x), backend


@pytest.mark.parametrize("memory, ok", [
    ("A3, B5, C2", True),     # the group's digits step as one run: B5 every 2 cells, A3 every 10
    ("B5, A3, C2", False),    # A3 inside B5: the live cells are not one strided run
    ("A3, D4, B5, C2", False),  # another axis between A3 and B5
])
def test_a_group_matches_only_digits_that_step_as_one(memory: str, ok: bool):
    found = sequence([m(memory, axes=SIZES)], [m("[A3, B5, C2] # 32", axes=SIZES)])
    assert bool(found) is ok, getattr(found, "reason", "")
