"""The staged gather / scatter on an indexed axis that is not the tensor's outermost, or on
several consecutive axes (docs/machine/spm.md "Staged gather"): cpu == visa bit for bit and
equal to numpy's `take` / fancy assignment along that axis; the records carry `outer=`,
verify, print back, and a forged block count is refused."""

from __future__ import annotations

import attrs
import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.gather import GatherIndexError
from ir.kernel import print_kernel
from tests.kernel_text import parse_kernel
from tests.spm import axis_kernels as k
from tests.spm import kernels as outermost
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

RNG = np.random.default_rng(2701)
D_ROW = 16 * 2   # bytes between two K positions of an i16 (H, K, D) table: one D row


def _both(kernel, *arrays):
    a, b = (npu_opt.run(kernel, *arrays, backend=x) for x in ("cpu", "visa"))
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a


def _table():
    return RNG.integers(-30000, 30000, (4, 50, 16)).astype(np.int16)


def test_an_inner_axis_gathers_like_take_along_it():
    table, picks = _table(), RNG.integers(0, 50, 64)
    out = _both(k.inner_axis, table, (picks * D_ROW).astype(np.int32))
    assert (out == np.take(table, picks, axis=1)).all()


def test_an_inner_axis_gathers_by_positions():
    table, picks = _table(), RNG.integers(0, 50, 16).astype(np.int32)
    out = _both(k.inner_axis_by_positions, table, picks)
    assert (out == np.take(table, picks, axis=1).transpose(1, 0, 2)).all()


def test_the_innermost_axis_gathers_one_element_per_block():
    table, picks = RNG.integers(-2**31, 2**31, (4, 50)).astype(np.int32), RNG.integers(0, 50, 64)
    out = _both(k.innermost_axis, table, (picks * 4).astype(np.int32))
    assert (out == np.take(table, picks, axis=1)).all()


def test_two_consecutive_axes_are_one_indexed_region():
    table, picks = RNG.integers(-128, 128, (4, 5, 10, 8)).astype(np.int8), RNG.integers(0, 50, 64)
    out = _both(k.middle_region, table, (picks * 8).astype(np.int32))
    assert (out == table.reshape(4, 50, 8)[:, picks]).all()
    a, b = np.divmod(picks, 10)
    assert (out == table[:, a, b]).all()     # position p of (A, B) is (p // 10, p % 10)


def test_a_sparse_prefix_zeroes_every_block_past_it():
    table, picks = _table(), RNG.integers(0, 50, 64)
    out = _both(k.PREFIXED, table, (picks * D_ROW).astype(np.int32))
    want = np.take(table, picks, axis=1)
    want[:, 20:] = 0
    assert (out == want).all()


@pytest.mark.parametrize("backend", ["cpu", "visa"])
@pytest.mark.parametrize("value, why", [(50 * D_ROW, "selects row 50 of K"), (D_ROW + 2, "multiple of the 32-byte")])
def test_an_offset_is_counted_in_the_inner_axis_stride(backend, value, why):
    offsets = np.zeros(64, np.int32)
    offsets[7] = value
    with pytest.raises(GatherIndexError, match=rf"\[G=7\].*{why}"):
        npu_opt.run(k.inner_axis, _table(), offsets, backend=backend)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_an_inner_axis_scatter_writes_every_block(backend):
    fresh = RNG.standard_normal((4, 24, 32)).astype(ml_dtypes.bfloat16)
    rows = RNG.permutation(90)[:24]
    cache = RNG.standard_normal((4, 90, 32)).astype(ml_dtypes.bfloat16)
    want = cache.copy()
    want[:, rows] = fresh
    buf = cache.copy()
    npu_opt.run(k.scatter_inner, fresh, (rows * 64).astype(np.int32), buf, backend=backend)
    assert (buf.view(np.uint16) == want.view(np.uint16)).all()


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_region_scatter_by_positions_keeps_the_last_write(backend):
    fresh = RNG.integers(-128, 128, (4, 16, 8)).astype(np.int8)
    rows = RNG.permutation(50)[:16].astype(np.int32)
    rows[15] = rows[3]                      # a repeated position: the later entry wins
    cache = RNG.integers(-128, 128, (4, 5, 10, 8)).astype(np.int8)
    want = cache.reshape(4, 50, 8).copy()
    for n in range(16):
        want[:, rows[n]] = fresh[:, n]
    buf = cache.copy()
    npu_opt.run(k.scatter_region_by_positions, fresh, rows, buf, backend=backend)
    assert (buf.reshape(4, 50, 8) == want).all()


def _record(text, mnemonic):
    return next(x for x in text.splitlines() if f"= {mnemonic} " in x)


@pytest.mark.parametrize("kernel, mnemonic", [(k.inner_axis, "dma_gather"), (k.middle_region, "dma_gather"),
                                              (k.scatter_inner, "dma_scatter"),
                                              (k.scatter_region_by_positions, "dma_scatter")])
def test_records_carry_the_block_count_verify_and_print_back(kernel, mnemonic):
    text = npu_opt.compile(kernel).text
    assert " outer=4 " in _record(text, mnemonic)
    verify_text(text)
    assert print_artifact(parse_visa(text)) == text
    for forged in (" outer=2 ", " "):   # fewer blocks than the commands move
        with pytest.raises(Exception, match="DMAOP-5"):
            verify_text(text.replace(" outer=4 ", forged, 1))
    op = next(o for o in parse_visa(text).kernel.dma_ops() if o.MNEMONIC == mnemonic)
    rule = op._gatherop_1 if mnemonic == "dma_gather" else op._scatterop_1
    assert rule(None, None) is None
    assert "leaving `outer` out" in rule.__func__(attrs.evolve(op, outer=1), None, None)


def test_an_outermost_axis_prints_no_block_count():
    for kernel in (outermost.staged_offsets, outermost.staged_scatter, outermost.rows_by_positions):
        assert "outer=" not in npu_opt.compile(kernel).text


def test_the_gathered_bytes_cost_every_block():
    ops = {k_: next(o for o in parse_visa(npu_opt.compile(k_).text).kernel.dma_ops() if o.MNEMONIC == "dma_gather")
           for k_ in (k.inner_axis, outermost.staged_offsets)}
    assert ops[k.inner_axis].cost_counters(None)["dma_bytes"] == 4 * 64 * D_ROW   # H blocks of G rows of D
    assert ops[outermost.staged_offsets].cost_counters(None)["dma_bytes"] == 256 * 64


@pytest.mark.parametrize("kernel", [k.inner_axis, k.middle_region, k.scatter_inner])
def test_the_ir_text_reads_back(kernel):
    text = print_kernel(kernel.trace().kernel)
    assert print_kernel(parse_kernel(text)) == text
