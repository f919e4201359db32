"""Gathers with indices in a tensor on every layer, against numpy oracles (docs/machine/dma.md)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.gather import GatherIndexError
from tests.topology import gather_kernels as g
from visa import parse_visa
from visa.artifact import VisaTextError
from visa.verify import verify_text

RNG = np.random.default_rng(150)
BACKENDS = ("cpu", "visa")


def _both(kernel, *arrays):
    """Results of cpu and visa, which must agree bit for bit."""
    a, b = (npu_opt.run(kernel, *arrays, backend=x) for x in BACKENDS)
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a


def test_scaled_gather_three_rows_per_slice():
    table = RNG.integers(-128, 128, (300, 64)).astype(np.int8)
    rows = RNG.integers(0, 300, 768)
    rows[:5] = [0, 299, 299, 7, 0]                     # ends of the table, repeats
    out = _both(g.rows_scaled, table, (rows * 64).astype(np.int32))
    assert (out == table[rows]).all()


def test_unscaled_gather_with_a_placed_cluster_index():
    table = RNG.standard_normal((300, 64)).astype(np.float32)
    rows = RNG.integers(0, 300, (2, 512)).astype(np.int32)
    out = _both(g.rows_unscaled_placed, table, rows)
    assert out.shape == (2, 512, 64) and (out.view(np.uint32) == table[rows].view(np.uint32)).all()


def test_paged_blocks_follow_the_block_table():
    pool = RNG.standard_normal((24, 4, 16, 32)).astype(ml_dtypes.bfloat16)
    blocks = RNG.permutation(24)[:16]
    row_bytes = 4 * 16 * 32 * 2
    out = _both(g.paged_blocks, pool, (blocks * row_bytes).astype(np.int32))
    want = np.transpose(pool[blocks], (0, 2, 1, 3))    # (NB, S, H, F)
    assert (out.view(np.uint16) == want.view(np.uint16)).all()


def test_each_chip_gathers_with_its_own_index():
    table = RNG.integers(-2 ** 15, 2 ** 15, (2, 300, 64)).astype(np.int16)
    rows = RNG.integers(0, 300, (2, 512))
    out = _both(g.two_chip_rows, table, (rows * 128).astype(np.int32))
    assert (out[0] == table[0][rows[0]]).all() and (out[1] == table[1][rows[1]]).all()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("value, why", [(300, "selects row 300 of T, but the table has 300 rows"),
                                        (-1, "selects row -1"), (1, "not a multiple of the 64-byte row")])
def test_a_bad_scaled_index_is_reported_with_its_position(backend, value, why):
    table = np.zeros((300, 64), np.int8)
    offsets = np.zeros(768, np.int32)
    offsets[41] = value * 64 if value != 1 else 1
    with pytest.raises(GatherIndexError, match=r"gather index \[N=41\] on chip 0 holds byte offset") as info:
        npu_opt.run(g.rows_scaled, table, offsets, backend=backend)
    assert why in str(info.value) and info.value.code == "GATHER-6"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_bad_unscaled_index_is_reported_with_its_position(backend):
    rows = np.zeros((2, 512), np.int32)
    rows[1, 300] = 999
    with pytest.raises(GatherIndexError, match=r"\[CL=1, P=300\] on chip 0 holds row number 999, which selects "
                                               r"row 999 of T, but the table has 300 rows \(0..299\)"):
        npu_opt.run(g.rows_unscaled_placed, np.zeros((300, 64), np.float32), rows, backend=backend)


def test_the_second_chip_index_is_checked_too():
    rows = np.zeros((2, 512), np.int32)
    rows[1, 3] = 300 * 128
    with pytest.raises(GatherIndexError, match=r"\[P=3\] on chip 1"):
        npu_opt.run(g.two_chip_rows, np.zeros((2, 300, 64), np.int16), rows, backend="visa")


def test_gather_artifacts_verify_and_parse_back():
    for kernel, mode in ((g.rows_scaled, "SCALED"), (g.rows_unscaled_placed, "UNSCALED"), (g.paged_blocks, "SCALED")):
        text = npu_opt.compile(kernel).text
        assert f"mode={mode}" in text and "= dma_gather " in text
        verify_text(text)
        record = next(s for s in parse_visa(text).kernel.steps if getattr(s, "MNEMONIC", "") == "dma_gather")
        assert record.mode.name == mode
    text = npu_opt.compile(g.rows_scaled).text
    with pytest.raises(VisaTextError, match="row_bytes"):
        verify_text(text.replace("row_bytes=64", "row_bytes=32"))
    placed = npu_opt.compile(g.rows_unscaled_placed).text
    with pytest.raises(VisaTextError, match="GATHEROP-1"):
        verify_text(placed.replace("mode=UNSCALED", "mode=SCALED"))


def test_gather_in_the_ir_text_round_trips():
    from tests.kernel_text import parse_kernel

    traced = g.rows_unscaled_placed.trace().kernel
    assert "dma_gather %0, %2 scaled=False" in traced.text()
    assert parse_kernel(traced.text()) == traced


@pytest.mark.parametrize("kernel, code", [(g.unscaled_index_in_hbm, "TYPE-6"), (g.two_keys, "GATHER-3"),
                                          (g.bad_slices, "GATHER-4")])
def test_refused_gathers(kernel, code):
    assert [d.code for d in kernel.trace().diagnostics] == [code]
