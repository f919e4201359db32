"""Rule 2 of the porting rules: a Rust type parameter the operand already fixes may still be
passed, after the operands; it must agree, and a mismatch is a coded diagnostic at the
user's line (issue 36 item 1)."""

from __future__ import annotations

import inspect

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from npu_opt import *

axes(T=200, W=32, G=16, N=16, CL=2, C=90, S=24)

Chip, Cluster = m("1"), m("1 # 2")
ROW = 32 * 2


def _gather_offsets(domain):
    @device(chip=1)
    def k(ctx: Context, table: HbmTensor[bf16, Chip, m("T, W")],
          offsets: HbmTensor[i32, Chip, m("G")]) -> HbmTensor[bf16, Chip, m("G, W")]:
        out = table.gather(m("T"), m("W")).by_byte_offsets(offsets, *domain).to_dm(  # LINE
            ctx.tdma, DmTensor[bf16, Chip, Cluster, m("G # 64"), m("W")])
        return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("G, W")])
    return k


def _gather_positions(*args, **kw):
    @device(chip=1)
    def k(ctx: Context, table: HbmTensor[bf16, Chip, m("T, W")],
          rows: HbmTensor[i32, Chip, m("CL, N")]) -> HbmTensor[bf16, Chip, m("CL, N, W")]:
        idx = rows.to_dm(ctx.tdma, DmTensor[i32, Chip, m("CL"), m("1 # 256"), m("N")]).to_spm(
            ctx.tdma, SpmTensor[i32, Chip, m("CL"), m("1 # 4"), m("N")])
        out = table.gather(m("T"), m("W")).by_positions(*[idx if a is None else a for a in args], **kw).to_dm(  # LINE
            ctx.tdma, DmTensor[bf16, Chip, m("CL"), m("N # 64"), m("W")])
        return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("CL, N, W")])
    return k


def _scatter_offsets(*domain, **kw):
    @device(chip=1)
    def k(ctx: Context, fresh: HbmTensor[bf16, Chip, m("S, W")], offsets: HbmTensor[i32, Chip, m("S")],
          cache: Mut[HbmTensor[bf16, Chip, m("C, W")]]) -> None:
        d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("S # 64"), m("W")])
        cache.view_mut().scatter(m("C"), m("W")).by_byte_offsets(offsets.view(), *domain, **kw).from_dm(  # LINE
            ctx.tdma, d)
    return k


def _scatter_positions(*args):
    @device(chip=1)
    def k(ctx: Context, fresh: HbmTensor[bf16, Chip, m("CL, N, W")], rows: HbmTensor[i32, Chip, m("CL, N")],
          cache: Mut[HbmTensor[bf16, Chip, m("C, W")]]) -> None:
        d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, m("CL"), m("N # 64"), m("W")])
        idx = rows.to_dm(ctx.tdma, DmTensor[i32, Chip, m("CL"), m("1 # 256"), m("N")]).to_spm(
            ctx.tdma, SpmTensor[i32, Chip, m("CL"), m("1 # 4"), m("N")])
        cache.view_mut().scatter(m("C"), m("W")).by_positions(*[idx if a is None else a for a in args]).from_dm(  # LINE
            ctx.tdma, d)
    return k


def _line(kernel, mark="# LINE"):
    lines, first = inspect.getsourcelines(kernel.fn)
    return next(first + i for i, t in enumerate(lines) if t.rstrip().endswith(mark))


def _bits(a):
    return np.asarray(a).view(np.uint16)


RNG = np.random.default_rng(36)
TABLE = RNG.standard_normal((200, 32)).astype(ml_dtypes.bfloat16)


def _both(kernel, *arrays):
    a, b = (npu_opt.run(kernel, *arrays, backend=x) for x in ("cpu", "visa"))
    assert a.tobytes() == b.tobytes()
    return a


def test_gather_by_byte_offsets_takes_the_domain_type_argument():
    rows = RNG.integers(0, 200, 16)
    out = _both(_gather_offsets([m("G")]), TABLE, (rows * ROW).astype(np.int32))
    assert (_bits(out) == _bits(TABLE[rows])).all()


def test_gather_by_positions_in_rule_order_and_by_keyword():
    rows = RNG.integers(0, 200, (2, 16)).astype(np.int32)
    for kernel in (_gather_positions(None, m("CL, N")), _gather_positions(None, domain=m("CL, N")),
                   _gather_positions(m("CL, N"), None)):
        assert (_bits(_both(kernel, TABLE, rows)) == _bits(TABLE[rows])).all()


def test_scatter_takes_the_domain_type_argument():
    fresh = RNG.standard_normal((24, 32)).astype(ml_dtypes.bfloat16)
    rows = RNG.permutation(90)[:24]
    cache = RNG.standard_normal((90, 32)).astype(ml_dtypes.bfloat16)
    want = cache.copy()
    want[rows] = fresh
    for kernel in (_scatter_offsets(m("S")), _scatter_offsets(domain=m("S"))):
        got = cache.copy()
        npu_opt.run(kernel, fresh, (rows * ROW).astype(np.int32), got)
        assert (_bits(got) == _bits(want)).all()
    rows2 = RNG.permutation(90)[:32].reshape(2, 16).astype(np.int32)
    fresh2 = RNG.standard_normal((2, 16, 32)).astype(ml_dtypes.bfloat16)
    want2 = cache.copy()
    want2[rows2] = fresh2
    got = cache.copy()
    npu_opt.run(_scatter_positions(None, m("CL, N")), fresh2, rows2, got)
    assert (_bits(got) == _bits(want2)).all()


@pytest.mark.parametrize("kernel,code", [
    (_gather_offsets([m("T")]), "GATHER-8"),
    (_gather_offsets(["G"]), "GATHER-8"),
    (_gather_positions(None, m("N")), "GATHER-8"),
    (_scatter_offsets(m("C")), "SCATTER-8"),
    (_scatter_positions(None, m("N")), "SCATTER-8"),
])
def test_a_type_argument_that_disagrees_is_refused_at_the_users_line(kernel, code):
    (d, *_) = kernel.trace().diagnostics
    assert d.code == code, d
    assert d.line == _line(kernel), (d.line, _line(kernel))


axes(I=64, K=64, NN=8)


def _matmul(*type_args, **kw):
    @device(chip=1)
    def k(ctx: Context, x: HbmTensor[i8, Chip, m("I, K")], w: HbmTensor[i8, Chip, m("NN, K")]) \
            -> HbmTensor[i32, Chip, m("I, NN")]:
        xd = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("I # 64"), m("K")])
        wd = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("I # 64"), m("NN, K")])
        w_trf = (ctx.sub.begin(wd.view()).fetch(m("NN"), m("K")).collect(m("NN, K / 32"), m("K % 32"))
                 .to_trf(m("NN"), m("K")))
        y = (ctx.main.begin(xd.view()).fetch(m("1"), m("K")).collect(m("K / 32"), m("K % 32"))
             .contract_outer(w_trf, m("1"), m("K"), *type_args, **kw)  # LINE
             .contract_packet(m("1")).contract_time(m("1"))
             .contract_lane(m("1"), m("NN"), LaneMode.INTERLEAVED).commit_trim(m("NN")).commit(m("NN")))
        return y.to_hbm(ctx.tdma)
    return k


def test_contract_outer_takes_lane_and_trf_element_in_the_references_order():
    """`contract_outer::<m![1], m![K], m![NN], m![K], i8>(&trf)` ports as written."""
    plain = _matmul().trace().kernel.text()
    for kernel in (_matmul(m("NN"), m("K")), _matmul(m("NN"), m("K"), i8), _matmul(None, None, i8),
                   _matmul(lane=m("NN"), trf_element=m("K"), trfd=i8), _matmul(i8)):
        assert npu_opt.check(kernel).ok, npu_opt.check(kernel).diagnostics
        assert kernel.trace().kernel.text() == plain


@pytest.mark.parametrize("args", [(m("K"),), (m("NN"), m("NN")), (m("NN"), "K")])
def test_contract_outer_refuses_a_lane_or_element_the_trf_does_not_hold(args):
    kernel = _matmul(*args)
    (d, *_) = kernel.trace().diagnostics
    assert d.code == "TYPE-6" and d.line == _line(kernel), d


def _v06_gather(scaled, *type_args, **kw):
    @device(chip=1)
    def k(ctx: Context, table: HbmTensor[bf16, Chip, m("T, W")],
          offsets: HbmTensor[i32, Chip, m("G")]) -> HbmTensor[bf16, Chip, m("G, W")]:
        dst = DmTensor[bf16, Chip, Cluster, m("G # 64"), m("W")]
        if scaled:
            out = table.dma_gather_scaled(offsets, dst, *type_args, **kw)  # LINE
        else:
            idx = offsets.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("G / 2 # 64"), m("G % 2")])
            out = table.dma_gather_unscaled(idx, *[dst if a is None else a for a in type_args], **kw)  # UNSCALED
        return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("G, W")])
    return k


def _v06_scatter(**kw):
    @device(chip=1)
    def k(ctx: Context, fresh: HbmTensor[bf16, Chip, m("S, W")], offsets: HbmTensor[i32, Chip, m("S")],
          cache: Mut[HbmTensor[bf16, Chip, m("C, W")]]) -> None:
        d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("S # 64"), m("W")])
        d.dma_scatter(offsets, cache, m("S"), **kw)  # LINE
    return k


def test_the_v06_gathers_and_scatter_take_their_index_type_arguments():
    scaled = _v06_gather(True).trace().kernel.text()
    assert _v06_gather(True, m("G")).trace().kernel.text() == scaled
    unscaled = _v06_gather(False, None).trace().kernel.text()
    for k in (_v06_gather(False, m("1 # 2"), m("G / 2 # 64"), m("G % 2"), None),
              _v06_gather(False, None, idx_element=m("G % 2"))):
        assert npu_opt.check(k).ok and k.trace().kernel.text() == unscaled
    plain = _v06_scatter().trace().kernel.text()
    assert _v06_scatter(element2=m("C, W"), element3=m("S")).trace().kernel.text() == plain


@pytest.mark.parametrize("kernel", [_v06_gather(True, m("T")), _v06_gather(False, m("1"), m("G / 2 # 64"), m("G % 2"), None),
                                    _v06_scatter(element3=m("C")), _v06_scatter(element2=m("S, W"))])
def test_a_v06_index_type_argument_that_disagrees_is_type_6(kernel):
    (d, *_) = kernel.trace().diagnostics
    mark = "# UNSCALED" if d.stage == "dma_gather_unscaled" else "# LINE"
    assert d.code == "TYPE-6" and d.line == _line(kernel, mark), d
