"""Staged redistributions (chip_shuffle / cluster_swap / chip_slice / cluster_slice ... to_dm,
asymmetric slices) against numpy, cpu == visa, one record per plan, artifacts verify, and
every refusal at the user's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import npu_opt
from ir.kernel import print_kernel
from tests.kernel_text import parse_kernel
from tests.topology import redistribute_kernels as k
from tests.topology import redistribute_refusals as bad
from visa.artifact import VisaTextError
from visa.verify import verify_text

RNG = np.random.default_rng(808)


def _both(kernel, x):
    a, b = (npu_opt.run(kernel, x, backend=name) for name in ("cpu", "visa"))
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a


def _i32(*shape):
    return RNG.integers(-2 ** 31, 2 ** 31, shape).astype(np.int32)


def test_shuffle_then_slice_picks_a_row_of_another_chip():
    x = _i32(4, 4, 8, 8)
    want = np.stack([x[(c + 1) % 4, (c + 2) % 4] for c in range(4)])
    assert (_both(k.rotate_and_pick, x) == want).all()


def test_two_slices_of_separate_axes_are_one_record():
    x = _i32(4, 4, 2, 8, 8)
    want = np.stack([x[(c + 3) % 4, c, :, 7 - c] for c in range(4)])
    assert (_both(k.two_slices, x) == want).all()
    text = npu_opt.compile(k.two_slices).text
    assert text.count("= dma_redistribute ") == 1 and text.count(" = dma") == 3   # in, redistribute, out


def test_a_plan_over_a_tile_reads_the_tile():
    x = _i32(4, 4, 2, 8, 8)
    assert (_both(k.from_a_tile, x) == np.stack([x[c, c, 1] for c in range(4)])).all()
    verify_text(npu_opt.compile(k.from_a_tile).text)


def test_chip_shuffle_cluster_swap_and_cluster_slice_compose():
    x = RNG.integers(-128, 128, (2, 2, 4, 256, 8)).astype(np.int8)
    want = np.stack([np.stack([x[1 - c, 1 - q, [3, 1][q]] for q in range(2)]) for c in range(2)])
    assert (_both(k.swap_then_pick, x) == want).all()


def test_asymmetric_slices_keep_one_row_per_chip_and_per_cluster():
    x = _i32(4, 4, 8, 8)
    assert (_both(k.keep_own_row, x) == np.stack([x[c, 3 - c] for c in range(4)])).all()
    y = _i32(2, 4, 8, 8)
    assert (_both(k.cluster_rows, y) == np.stack([y[q, 2 * q + 1] for q in range(2)])).all()
    assert "engine=SUB" in npu_opt.compile(k.keep_own_row).text


def test_to_dm_view_writes_one_row_and_keeps_the_others():
    x = _i32(4, 4, 8, 8)
    want = x.copy()
    for c in range(4):
        want[c, 1] = x[(c + 1) % 4, c]
    assert (_both(k.into_a_row, x) == want).all()
    text = npu_opt.compile(k.into_a_row).text
    assert text.count("= dma_redistribute src=%1 ") == 1 and "into=%2" in text and "= dma_into " not in text


def test_artifacts_verify_and_edited_fields_are_refused():
    text = npu_opt.compile(k.rotate_and_pick).text
    verify_text(text)
    line = next(x for x in text.splitlines() if "= dma_redistribute " in x)
    sources = line[line.index("sources=["):line.index("]", line.index("sources=[")) + 1]
    with pytest.raises(VisaTextError, match="REDISTOP-1"):
        verify_text(text.replace(sources, "sources=[9, 3, 4, 5, 6, 7, 0, 1]"))
    offsets = line[line.index("offsets=["):line.index("]", line.index("offsets=[")) + 1]
    with pytest.raises(VisaTextError, match="src_base"):       # the commands no longer match the offsets
        verify_text(text.replace(offsets, "offsets=[0, 0, 0, 0, 0, 0, 0, 0]"))
    for kernel in (k.two_slices, k.swap_then_pick, k.keep_own_row, k.cluster_rows, k.into_a_row):
        verify_text(npu_opt.compile(kernel).text)


@pytest.mark.parametrize("kernel, code", [
    (bad.not_a_permutation, "REDIST-1"), (bad.position_out_of_range, "REDIST-2"),
    (bad.four_byte_step, "REDIST-3"), (bad.asymmetric_inner, "REDIST-4"), (bad.float_position, "REDIST-5"),
    (bad.swap_padded_clusters, "REDIST-6"), (bad.plan_as_tensor, "REDIST-7"), (bad.shuffle_after_slice, "TYPE-1"),
    (bad.on_the_main_context, "CTX-1"), (bad.four_byte_burst, "DMA-5"),
    (bad.plan_onto_a_broadcast, "REDIST-8"), (bad.asymmetric_hole_below, "REDIST-9")])
def test_refusals_name_the_rule_and_the_line(kernel, code):
    found = kernel.trace().diagnostics
    assert [d.code for d in found] == [code]
    lines = Path(bad.__file__).read_text().splitlines()
    start = next(i for i, text in enumerate(lines, 1) if text.startswith(f"def {kernel.name}("))
    assert found[0].file.endswith("redistribute_refusals.py") and start < found[0].line <= start + 5


def test_the_traced_op_reads_back_from_its_ir_text():
    for kernel in (k.rotate_and_pick, k.into_a_row, k.keep_own_row, k.from_a_tile):
        text = print_kernel(kernel.trace().kernel)
        assert " = redistribute " in text and print_kernel(parse_kernel(text)) == text


def test_numpy_integer_positions_are_constants():
    assert not bad.numpy_positions.trace().diagnostics


# --- to_dm across every DM level (v0.8) ------------------------------------------------------------


def test_to_dm_onto_a_broadcast_chip_gives_every_chip_every_row():
    x = _i32(4, 8, 8)
    out = _both(k.gather_chips, x)
    assert out.shape == (4, 4, 8, 8) and all((out[c] == x).all() for c in range(4))


def test_to_dm_changes_cluster_slice_and_element_together():
    y = RNG.integers(-128, 128, (2, 2, 256, 8)).astype(np.int8)
    assert (_both(k.fold_clusters, y) == y).all()


def test_to_dm_exchanges_the_chip_and_the_cluster_axis():
    y = RNG.integers(-128, 128, (2, 2, 256, 8)).astype(np.int8)
    assert (_both(k.swap_chip_and_cluster, y) == y.transpose(1, 0, 2, 3)).all()


def test_relayout_records_verify_and_an_edited_source_is_refused():
    text = npu_opt.compile(k.swap_chip_and_cluster).text
    verify_text(text)
    line = next(x for x in text.splitlines() if "= dma_relayout " in x)
    sources = line[line.index("sources=["):line.index("]", line.index("sources=[")) + 1]
    assert sources != "sources=[" + ", ".join(["0"] * sources.count(",")) + ", 0]"
    edited = "sources=[" + ", ".join(["0"] * (sources.count(",") + 1)) + "]"
    with pytest.raises(VisaTextError, match="sources"):
        verify_text(text.replace(sources, edited))
    for kernel in (k.gather_chips, k.fold_clusters):
        verify_text(npu_opt.compile(kernel).text)
