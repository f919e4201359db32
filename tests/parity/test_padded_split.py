"""A padded axis split over time and packet (`R # 16 / 4 ; R # 16 % 4`) when |R| is not a
multiple of the split, as the reference's book reads it (vector-engine/vcg.md,
reduce_time_packet): the fetch places it on the DM element `R # 16`, the commit writes it
back, and an intra-slice reduce of R sums it; cpu == visa == numpy. These were FETCH-2,
COMMIT-3 and an internal error of the reduce's record verifier."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import npu_opt
from ir.mapping import m
from tu_ops import rngd
from visa.verify import verify_text
from ir.mapping.sequence import sequence
from ir.vector.intra_reduce import shape_fault
from tests.parity import kernels_padded_slices as ks
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
    """docs/changes.md kd-padded-dma, kd-padded-reduce: furiosa-opt accepts
    these layouts; npu-opt refuses each with the code named here. The day one compiles,
    this test fails and the item must go."""
    from tests.parity import kernels_padded_refused as refused

    codes = {kernel.name: [d.code for d in npu_opt.check(kernel).diagnostics]
             for kernel in (refused.dma_splits_a_padded_axis, refused.reduce_around_a_kept_axis,
                            refused.dma_into_a_split_around_a_kept_axis)}
    assert codes == {"dma_splits_a_padded_axis": ["DMA-5"], "reduce_around_a_kept_axis": ["VE-REDUCE-1"],
                     "dma_into_a_split_around_a_kept_axis": ["DMA-4"]}


def test_a_split_run_with_padding_moves_whole_between_two_tensors_of_its_layout() -> None:
    """HBM and DM in one padded layout with the padded axis split around another: the run
    holds padding between live cells at the same places on both sides, so the DMA moves it
    whole (it was DMA-4, before that an internal error); the live cells round trip, the
    padding cells come back zero (HBM reads padding as zero, whatever the host array holds
    there), cpu == visa."""
    from tests.parity import kernels_padded_refused as refused

    kernel = refused.dma_around_a_kept_axis
    assert npu_opt.check(kernel).ok
    verify_text(npu_opt.compile(kernel).text, rngd())  # the verifier counts the padding the runs move
    x = np.random.default_rng(8).integers(-100, 100, (64, 3, 3, 4, 4)).astype(np.int32)  # (Y, T/4, P, T%4, Q)
    live = (np.arange(3)[:, None] * 4 + np.arange(4)[None, :] < 10)[None, :, None, :, None]  # T < 10
    cpu, visa = npu_opt.run(kernel, x), npu_opt.run(kernel, x, backend="visa")
    np.testing.assert_array_equal(cpu, visa)
    np.testing.assert_array_equal(cpu, np.where(live, x, 0))


def test_a_split_run_from_another_layout_is_refused_at_its_line(tmp_path) -> None:
    """The split layout filled from HBM in the natural order: refused at the `to_dm` line,
    `compile` writes a `.fail` and exits 1, no internal error."""
    from tests.parity import kernels_padded_refused as refused

    (found,) = npu_opt.check(refused.dma_into_a_split_around_a_kept_axis).diagnostics
    src = Path(refused.__file__)
    lines = src.read_text().splitlines()
    start = lines.index("def dma_into_a_split_around_a_kept_axis(ctx: Context, x: HbmTensor[i32, m(\"1\"), "
                        "m(\"Y, P, T, Q\")]")
    to_dm = next(n for n in range(start, len(lines)) if "x.to_dm(" in lines[n]) + 1
    assert found.code == "DMA-4" and found.line == to_dm
    done = subprocess.run([sys.executable, "-m", "driver.cli", "compile", str(src), "-o", str(tmp_path),
                           "--filter", "dma_into_a_split_around_a_kept_axis", "--no-cache"],
                          capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert "error[DMA-4]" in (tmp_path / "dma_into_a_split_around_a_kept_axis.fail").read_text()
    assert "ICE" not in done.stdout + done.stderr


def test_a_rule_that_cannot_read_a_layout_refuses_at_its_line() -> None:
    """A mapping error inside an op's rule is that rule's refusal at the op's line, with a
    code and a location (it was a bare mapping error with no location)."""
    from pathlib import Path

    from tests.parity import kernels_padded_refused as refused

    (found,) = npu_opt.check(refused.split_shares_packet).diagnostics
    source = Path(refused.__file__).read_text(encoding="utf-8").splitlines()
    assert found.code == "VE-SPLIT-2" and found.file.endswith("kernels_padded_refused.py")
    assert "# VE-SPLIT-2" in source[found.line - 1] and "cannot read this layout" in found.message


# kd-padded-reduce, exactly: with |T| = 10, the padding of `T # 12` (or `T # 16`) cuts across
# its digits `/ 4` and `% 4`; a kept axis between such digits, in time or between a time digit
# and a packet digit, is VE-REDUCE-1. (axis, time, packet, out_time, out_packet) -> refused?
PADDED_REDUCE_SHAPES = {
    ("T # 12 / 4, P, T # 12 % 4", "Q", "P", "Q"): True,           # the kd case
    ("T # 16 / 4, P, T # 16 % 4", "Q", "P", "Q"): True,           # more padding, same cut
    ("T # 12 / 4, P, W, T # 12 % 4", "Q", "P, W", "Q"): True,     # two kept axes between
    ("T # 16 / 4, P", "T # 16 % 4", "P", "1 # 4"): True,          # between time and packet
    ("T # 12 / 4, T # 12 % 4, P", "Q", "P", "Q"): False,          # the cut digits adjacent
    ("P, T # 12 / 4, T # 12 % 4", "Q", "P", "Q"): False,
    ("P, T # 16 / 4", "T # 16 % 4", "P", "1 # 4"): False,
    ("T # 12 / 6, T # 12 / 2 % 3, P, T # 12 % 2", "Q", "P", "Q"): False,  # 2 | 10: `% 2` is whole
    ("U # 16 / 4, P, U # 16 % 4", "Q", "P", "Q"): False,          # |U| = 12: 4 | 12, no cut
    ("T / 5, P, T % 5", "Q", "P", "Q"): False,                    # no padding
}


@pytest.mark.parametrize("shape", sorted(PADDED_REDUCE_SHAPES))
def test_which_padded_reduces_are_refused(shape: tuple) -> None:
    sizes = dict(P=3, Q=4, T=10, U=12, W=2)
    axis = "U" if "U" in shape[0] else "T"
    found = shape_fault(axis, *(m(s, axes=sizes) for s in shape))
    assert (found is not None) == PADDED_REDUCE_SHAPES[shape], found
    if found is not None:
        assert found.code == "VE-REDUCE-1"
        legal = found.help.split("`")[-2]  # the help's layout: another one, which divides
        assert m(legal, axes=sizes).normalize() != m(shape[0], axes=sizes).normalize()
        assert shape_fault(axis, m(legal, axes=sizes), *(m(s, axes=sizes) for s in shape[1:])) is None


def test_the_help_of_kd_padded_reduce_names_another_layout_that_runs() -> None:
    """The refused kernel's help gives the time layout of `padded_reduce_kept_outward`, not the
    one in use; that kernel sums the live cells, cpu == visa == numpy."""
    from tests.parity import kernels_padded_refused as refused

    (found,) = npu_opt.check(refused.reduce_around_a_kept_axis).diagnostics
    assert found.code == "VE-REDUCE-1" and "`P, T # 12 / 4, T # 12 % 4`" in found.help
    assert "T # 12 / 4, P, T # 12 % 4`" not in found.help
    rng = np.random.default_rng(6)
    x = rng.integers(-2 ** 31, 2 ** 31, (64, 3, 10, 4)).astype(np.int32)
    # ADD_SAT saturates each partial sum: the oracle saturates in the hardware's time order
    acc = np.zeros((64, 3, 4), np.int64)
    for t in range(10):
        acc = np.clip(acc + x[:, :, t, :], -2 ** 31, 2 ** 31 - 1)
    want = acc.astype(np.int32)
    outs = [npu_opt.run(k.padded_reduce_kept_outward, x, backend=b) for b in ("cpu", "visa")]
    for out in outs:
        assert np.array_equal(out, want)
    assert outs[0].tobytes() == outs[1].tobytes()


@pytest.mark.parametrize("kernel", ["padded_digits_together", "padded_whole"])
def test_the_layouts_dma_4_suggests_move_every_cell(kernel: str) -> None:
    x = np.random.default_rng(9).integers(-2 ** 31, 2 ** 31, (64, 3, 4, 3, 4)
                                          if kernel == "padded_digits_together" else (64, 3, 10, 4)).astype(np.int32)
    if kernel == "padded_digits_together":  # host dims T # 12 / 4, T # 12 % 4: the padded cells hold zero
        x.reshape(64, 12, 3, 4)[:, 10:] = 0
    for backend in ("cpu", "visa"):
        assert np.array_equal(np.asarray(npu_opt.run(getattr(k, kernel), x, backend=backend)), x), backend


@pytest.mark.parametrize("kernel, live", [("padded_row_half", 4), ("padded_row_quarter", 2), ("padded_row_ragged", 3)])
def test_a_padded_row_the_source_pads_alike_moves_whole(kernel: str, live: int) -> None:
    """`C4 # 8` factors into a pure padding piece over `C4` (`C3 # 8`: over a ragged `C3 # 4`);
    with the source padded the same way the DMA moves each 8-byte row whole (one 128-byte
    packet here), where it was DMA-5.
    cpu == visa == the input; the record passes `visa --verify`."""
    fn = getattr(k, kernel)
    assert npu_opt.check(fn).ok
    x = np.random.default_rng(live).integers(-128, 128, (16, live)).astype(np.int8)
    for backend in ("cpu", "visa"):
        assert np.array_equal(np.asarray(npu_opt.run(fn, x, backend=backend)), x), backend
    text = npu_opt.compile(fn).text
    assert "kind=HBM_TO_DM" in text and "packet_bytes=128" in text


def test_a_dense_source_into_a_padded_row_stays_dma_5() -> None:
    """The source holds the next row's data right after the live cells: moving the padded
    row would copy it, so the DMA keeps the live run and DMA-5 refuses the 4-byte burst."""
    sizes = dict(B=16, C4=4)
    from ir.rules.dma import check_dma, check_tensor_dma
    from ir.types import DmType, HbmType
    from ir.dtypes import i8

    class Op:  # the two types a `to_dm` checks
        def __init__(self, src, dst):
            self.src, self.result = type("R", (), {"type": src}), type("R", (), {"type": dst})

    hbm = HbmType(i8, m("1"), m("B, C4", axes=sizes))
    dm = DmType(i8, m("1"), m("1 # 2"), m("1 # 256"), m("B, C4 # 8", axes=sizes))
    found = check_tensor_dma(Op(hbm, dm))
    assert found is not None and found.code == "DMA-5" and "moves 4 cell(s)" in found.message
    padded = HbmType(i8, m("1"), m("B, C4 # 8", axes=sizes))
    assert check_tensor_dma(Op(padded, dm)) is None
    assert check_dma(Op(padded, dm)).code == "DMA-5"  # another op's DMA (redistribute, gather) moves no padding
    sizes = dict(B=16, C3=3)
    ragged = DmType(i8, m("1"), m("1 # 2"), m("1 # 256"), m("B, C3 # 8", axes=sizes))
    found = check_tensor_dma(Op(HbmType(i8, m("1"), m("B, C3", axes=sizes)), ragged))
    assert found is not None and found.code == "DMA-5"
    assert check_tensor_dma(Op(HbmType(i8, m("1"), m("B, C3 # 8", axes=sizes)), ragged)) is None


def test_a_padded_axis_split_across_levels_side_by_side_moves_and_a_dropped_axis_is_named() -> None:
    """`R13 # 32 / 8` over Slice and `R13 # 32 % 8` in the element, from an HBM source in that
    padded order: the two digit ranges sit side by side, so the DMA moves it (it was DMA-4
    "cut inside its padding", the workaround of kd-padded-dma refused); a destination that
    really drops digits keeps its DMA-4."""
    from ir.dtypes import i32
    from ir.rules.dma import check_dma
    from ir.types import DmType, HbmType

    class Op:
        def __init__(self, src, dst):
            self.src, self.result = type("R", (), {"type": src}), type("R", (), {"type": dst})

    sizes = dict(R13=13, A=64)
    hbm = HbmType(i32, m("1"), m("R13 # 32 / 8, R13 # 32 % 8", axes=sizes))
    dm = DmType(i32, m("1"), m("1 # 2"), m("R13 # 32 / 8 # 256", axes=sizes), m("R13 # 32 % 8", axes=sizes))
    assert check_dma(Op(hbm, dm)) is None
    dropped = DmType(i32, m("1"), m("1 # 2"), m("1 # 256"), m("A % 8", axes=sizes))
    found = check_dma(Op(HbmType(i32, m("1"), m("A", axes=sizes)), dropped))
    assert found.code == "DMA-4" and "occurs nowhere" in found.label


def test_a_padded_axis_over_slice_and_element_round_trips_through_dm() -> None:
    """|R13| = 13: slice 0 holds R 0..7, slice 1 R 8..12; to DM and back, cpu == visa == the
    input's live cells (the padding reads back as zero)."""
    x = np.random.default_rng(11).integers(-2 ** 31, 2 ** 31, (2, 8)).astype(np.int32)
    x[1, 5:] = 0
    outs = [np.asarray(npu_opt.run(ks.slices_round_trip, x, backend=b)) for b in ("cpu", "visa")]
    assert np.array_equal(outs[0], x) and outs[0].tobytes() == outs[1].tobytes()


def test_the_book_s_slice_time_packet_reduce_runs_when_packets_are_full_or_empty() -> None:
    """The layout of the book's reduce_slice_time_packet at |R12| = 12: the minimum of each
    slice's live cells (slice 0: R 0..7, slice 1: R 8..11), cpu == visa == numpy."""
    x = np.random.default_rng(12).integers(-2 ** 31, 2 ** 31, (2, 8)).astype(np.int32)
    want = np.array([x[0].min(), x[1, :4].min()], np.int32)
    outs = [np.asarray(npu_opt.run(ks.slices_min, x, backend=b)) for b in ("cpu", "visa")]
    assert np.array_equal(outs[0], want) and outs[0].tobytes() == outs[1].tobytes()
