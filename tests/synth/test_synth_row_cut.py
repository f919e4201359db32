"""The whole-row cut of a `w by switch` block (synth/row_cut.py): where a block has fewer
groups of 8 rows than slices share it, each slice holds neighbouring whole rows of `w` (or,
with fewer rows than slices, a piece of one row) and BROADCAST01 (BROADCAST1 for one row a
slice) puts the slice digits on both sides of the fetched rows, so the TRF still gets its
lanes first. The kernels are checked against the independent numpy oracle of
tests/synth/test_synth_switch.py on the cpu backend and in the VISA interpreter, and the cut
is shown to beat the piece cut it replaces in the model."""

from __future__ import annotations

import pytest

import npu_opt
import synth.onchip
from synth import contraction
from synth.row_cut import row_cut
from synth.space import build, points, source
from synth.tiling import geometry
from tests.synth import lever_checks
from tests.synth.test_synth_switch import GEMM, _equals_numpy

# (dtype, sizes, placement, the switch its TRF load runs): 2 and 1 whole rows a slice, and one
# row's piece (16 rows over 32 slices: 2 pieces of 128 bf16, 256 bytes each); 4 rows a slice
# run in tests/synth/test_synth_switch.py's CASES (`2x32 of 256x8`, `4x16 of 64x16`)
CASES = [
    ("i8:i32", dict(m=64, n=32, k=128), "8x2 of 8x16, on 1/16 of the slices, w by switch",
     "BROADCAST01(slice1=4, slice0=2, time0=2)"),
    ("bf16:f32", dict(m=64, n=32, k=128), "8x4 of 8x8, on 1/8 of the slices, w by switch",
     "BROADCAST1(slice1=8, slice0=1)"),
    ("bf16:f32", dict(m=256, n=32, k=256), "32x2 of 8x16, on 1/4 of the slices, w by switch",
     "BROADCAST1(slice1=32, slice0=1)"),
]


def test_which_blocks_are_cut_into_whole_rows():
    """Rows a slice and pieces of `k` a row; None where the block has a group of 8 rows for
    every slice (the group cut moves whole rows already), with `a` switched too, or no switch."""
    assert row_cut(geometry("32x2 of 8x128, on 1/2 of the slices, w by switch"), 128, 1) == (4, 1)
    assert row_cut(geometry("64x1 of 16x64, on 1/4 of the slices, w by switch"), 256, 1) == (1, 1)
    assert row_cut(geometry("64x4 of 8x128, k in 2 time blocks, w by switch"), 384, 2) == (2, 1)
    assert row_cut(geometry("32x2 of 8x16, on 1/4 of the slices, w by switch"), 256, 2) == (1, 2)
    # 2 pieces of 16 i8 would be half a flit
    assert row_cut(geometry("32x2 of 8x16, on 1/4 of the slices, w by switch"), 32, 1) is None
    assert row_cut(geometry("8x8 of 64x64, on 1/4 of the slices, w by switch"), 512, 1) is None
    assert row_cut(geometry("16x4 of 8x32, on 1/4 of the slices, a and w by switch"), 64, 2) is None
    assert row_cut(geometry("32x2 of 8x128, on 1/2 of the slices"), 128, 1) is None


@pytest.mark.parametrize("backend", ["cpu", "visa"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_row_cut_kernel_equals_numpy(case, backend):
    dtype, sizes, placement, config = CASES[case]
    spec = contraction(GEMM, dtype=dtype, sizes=sizes)
    assert placement in points(spec)["placement"]
    point = dict(placement=placement, trf="w", packet=min(points(spec)["packet"]))
    assert f"SwitchConfig.{config}" in source(spec, point)
    kernel = build(spec, point)
    assert npu_opt.check(kernel).ok
    _equals_numpy(spec, kernel, case, case, backend)


def test_whole_rows_beat_pieces_of_k(monkeypatch):
    """The `--pe 2` form of benchmarks/bench_synth.py (256 x 256 x 128 i8): its winner's block of
    128 rows of w over 32 slices was cut into 16 groups x 2 pieces of 64 bytes of k, each a
    DMA request of its own; 4 neighbouring whole rows a slice (512 bytes in HBM) move in whole
    requests, and in the model the kernel takes 5,756 cycles where the piece cut took 6,140."""
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=256, n=256, k=128), pe=2)
    point = dict(placement="32x2 of 8x128, on 1/2 of the slices, w by switch", trf="w", packet=32)
    rows = lever_checks.makespan(spec, point)
    monkeypatch.setattr(synth.onchip, "row_cut_names", lambda v, k, elem: False)  # the piece cut
    assert 'm("N % 8, K % 64")' in source(spec, point)
    pieces = lever_checks.makespan(spec, point)
    assert rows < pieces
