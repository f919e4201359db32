"""A DMA writing copies of the same rows into many slices, held as its distinct rows
(backends/cpu/row_classes.py `dma_copies`): bit for bit the eager DMA, the distinct rows a copy that a
later write into the DMA's source does not reach, and the contraction folded on them."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions, contract, contract_int, layout, lazy_rows, moves, row_classes
from benchmarks.drawn_kernels import pinned
from backends.cpu.lazy_rows import LazyRows
from ir.ops import ToDm
from tests.backends.examples import example
from tests.backends.test_int_matmul_shares import tiled_i8
from tests.kernel_files import load_source

OVERWRITTEN = '''
from npu_opt import *

axes(M=512, N=512, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 32")

@device(chip=1)
def overwritten(ctx: Context,
                a: Mut[HbmTensor[i8, Chip, m("M, K")]],
                x: HbmTensor[i8, Chip, m("M, K")],
                w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("M, N")]:
    a_dm = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")])   # copies along N / 32
    x_dm = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("M / 32 # 64"), m("M % 32, K")])
    x_dm.view().to_hbm_view(ctx.tdma, a.view_mut())                                 # a's source now holds x
    w_dm = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N % 32, K")])    # copies along M / 32
    w_trf = (ctx.sub.begin(w_dm.view())
             .fetch(m("N % 8, N / 8 % 4"), m("K"))
             .fetch_cast(i8)
             .collect(m("N % 8, N / 8 % 4, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8 % 4, K")))
    out = (ctx.main.begin(a_dm.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .fetch_cast(i8)
           .collect(m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("M, N")])
'''


def _dmas(kernel):
    return [op for op in kernel.trace("rngd").kernel.ops if isinstance(op, ToDm)]


@pytest.mark.parametrize("kernel", [example("gemm_i8", "gemm_i8_kernel"), tiled_i8(1, 1)], ids=["gemm_i8", "tiled"])
def test_copies_equal_the_eager_dma(kernel) -> None:
    rng = np.random.default_rng(21)
    ops = _dmas(kernel)
    held = 0
    for op in ops:
        src = rng.integers(-128, 128, layout.shape_of(op.src.type), dtype=np.int8)
        eager = moves.move_global(src, op.src.type, op.result.type, copies=False)
        got = moves.move_global(src, op.src.type, op.result.type, copies=True)
        if isinstance(got, LazyRows):
            held += 1
            assert got.row_of is not None and got.base.shape[0] < got.n_rows
            assert not np.may_share_memory(got.base, src)
            np.testing.assert_array_equal(lazy_rows.materialize(got), eager)
    assert held == len(ops) == 2  # both operands are broadcast along one slice digit


def test_the_source_written_after_the_dma_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The DM copy of `a` keeps the values `a` had when it was moved, though `a` (an in-out
    parameter) is overwritten before the contraction reads that copy."""
    made = []
    dma = row_classes.dma_copies
    monkeypatch.setattr(row_classes, "dma_copies", lambda *a: made.append(dma(*a)) or made[-1])
    kernel = load_source(OVERWRITTEN, "row_copies_overwritten").overwritten
    rng = np.random.default_rng(22)
    a = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    x = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    want = a.astype(np.int64) @ w.astype(np.int64).T
    a_in = a.copy()
    got, written = CpuBackend().run(kernel, (a_in, x, w))  # the result, then the in-out array
    assert written is a_in and np.array_equal(a_in, x)  # the in-out parameter was written
    assert np.array_equal(np.asarray(got), want)
    assert sum(m is not None for m in made) >= 2
    slow, _ = CpuBackend(CpuOptions(fast_moves=False, fast_contract=False)).run(kernel, (a.copy(), x, w))
    assert np.array_equal(np.asarray(slow), want)


def test_the_contraction_folds_on_the_distinct_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both operands of the GEMM reach the contraction as distinct rows and a map; the
    split comes from the maps, and the result is the int64 oracle's."""
    seen = []
    folded = contract_int._folded_into
    monkeypatch.setattr(contract_int, "_folded_into",
                        lambda target, a, w, *rest: seen.append((a.row_of, w.row_of, rest[2])) or folded(target, a, w, *rest))
    rng = np.random.default_rng(23)
    a = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    a[5] = w[7] = -128
    got = CpuBackend().run(example("gemm_i8", "gemm_i8_kernel"), (a, w))
    assert np.array_equal(np.asarray(got), a.astype(np.int64) @ w.astype(np.int64).T)
    assert len(seen) == 1
    a_map, w_map, split = seen[0]
    assert a_map is not None and w_map is not None and split[0] * split[1] == 256
    assert len(np.unique(a_map)) == len(np.unique(w_map)) == 16


def test_rows_not_copies_stay_a_plain_dma() -> None:
    """A DMA into slices that each hold their own rows has nothing to share."""
    form = moves.moves_strided.StridedForm((4, 8), (8, 1), (8, 1), 0, 0, True)
    assert row_classes.dma_copies(np.zeros((1, 32), np.int8), form, 4, (4, 8)) is None


def test_copies_on_unevenly_spaced_live_rows_reach_the_contraction_as_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """A drawn bf16 GEMM on half the slices (its live rows not evenly spaced): the DMA's
    copies reach the contraction as their distinct rows (the map picks the live rows; every
    row was copied out before, 72 rows of a 4x larger fetch on a bench-sized twin), and the
    result is the oracle's, bit for bit."""
    d = pinned("drawn_s67_5", "out[b,n,m] = a[b,m,k] * w[b,n,k]", "bf16:f32", {"b": 2, "k": 32, "m": 64, "n": 64},
               {"placement": "2x2 of 32x32, 2 batch elements side by side, on 1/32 of the slices, a and w by switch",
                "trf": "a", "packet": 16, "pieces": 1}, "batched")   # seed 67's sixth bf16 draw before `pair`
    kept = []
    picked = contract._operand_rows

    def watched(buf, t):
        out = picked(buf, t)
        uneven = isinstance(buf, LazyRows) and buf.row_of is not None and layout.even_rows(t) is None \
            and len(layout.live_rows(t)) != buf.n_rows
        kept.append((uneven, isinstance(out, LazyRows)))
        return out

    monkeypatch.setattr(contract, "_operand_rows", watched)
    arrays = d.inputs(np.random.default_rng(3))
    want = d.oracle(*arrays)
    CpuBackend(CpuOptions(threads=1)).run(d.kernel, tuple(arrays))
    np.testing.assert_array_equal(arrays[-1].view(np.uint32), np.asarray(want, np.float32).view(np.uint32))
    uneven = [lazy for case, lazy in kept if case]
    assert uneven and all(uneven), d.layout



@pytest.mark.parametrize("written", [4, 5], ids=["a zero row", "every row written"])
def test_copies_that_write_every_cell_of_their_rows_zero_the_zero_row_only(monkeypatch, written) -> None:
    """A DMA's distinct rows that its form writes whole are not zeroed first, only the zero
    row of the spatial rows no cell writes is; the held rows are the oracle's: the source
    row broadcast, zero where nothing is written."""
    src = np.random.default_rng(7).integers(1, 2**16, (1, 8), dtype=np.uint16)
    form = row_classes.StridedForm((written, 8), (8, 1), (0, 2), 0, 0, written == 5)  # row r <- src
    row_classes.dma_copies(src, form, 5, (5, 8))  # its plan found (and kept) first
    zeroed, real = [], np.zeros
    with monkeypatch.context() as patch:
        patch.setattr(np, "zeros", lambda *a, **k: zeroed.append(a[0]) or real(*a, **k))
        held = row_classes.dma_copies(src, form, 5, (5, 8))
    want = np.zeros((5, 8), np.uint16)
    want[:written] = src
    assert isinstance(held, LazyRows) and len(held.base) == 1 + (written < 5)
    assert np.array_equal(lazy_rows.materialize(held).reshape(5, 8), want)
    assert zeroed == []  # no buffer zeroed whole
