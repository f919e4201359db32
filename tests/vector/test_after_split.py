"""Steps that read the stream after `vector_narrow_split` (which doubles its time): a VRF
operand and an intra-slice reduce over the split axis, each against numpy on cpu and bit
for bit on the VISA interpreter (both were internal errors there)."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *  # noqa: F403

axes(A=8, E=8, R=16)  # noqa: F405
Chip, Cluster = m("1"), m("1 # 2")  # noqa: F405
RNG = np.random.default_rng(43)


@device(chip=1)  # noqa: F405
def scale_after_split(ctx: Context, x: HbmTensor[f32, Chip, m("A, E")],  # noqa: F405
                      b: HbmTensor[f32, Chip, m("E")]) -> HbmTensor[f32, Chip, m("A, E")]:  # noqa: F405
    """y[a, e] = x[a, e] * b[e], the product on the split stream."""
    bd = b.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, m("1 # 64"), m("E")])  # noqa: F405
    b_vrf = ctx.sub.begin(bd.view()).fetch(m("1"), m("E")).collect(m("1"), m("E")).to_vrf(m("E"))  # noqa: F405
    xd = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, m("1 # 64"), m("A, E")])  # noqa: F405
    y = (ctx.main.begin(xd.view()).fetch(m("A"), m("E")).collect(m("A"), m("E")).vector_init()  # noqa: F405
         .vector_intra_slice_tag(TagMode.ZERO).vector_narrow_split(m("A, E / 4"), m("E % 4"))  # noqa: F405
         .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), b_vrf)  # noqa: F405
         .vector_widen_concat(m("A"), m("E")).vector_final().commit_trim(m("E")).commit())  # noqa: F405
    return y.to_hbm(ctx.tdma)


@device(chip=1)  # noqa: F405
def sum_split_axis(ctx: Context, x: HbmTensor[i32, Chip, m("A, R")]) -> HbmTensor[i32, Chip, m("A")]:  # noqa: F405
    """y[a] = sum over r of x[a, r], R split across time (R / 4) and packet (R % 4)."""
    xd = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("A / 2 # 64"), m("A % 2, R")])  # noqa: F405
    y = (ctx.main.begin(xd.view()).fetch(m("A % 2, R / 8"), m("R % 8"))  # noqa: F405
         .collect(m("A % 2, R / 8"), m("R % 8")).vector_init().vector_intra_slice_tag(TagMode.ZERO)  # noqa: F405
         .vector_narrow_split(m("A % 2, R / 4"), m("R % 4"))  # noqa: F405
         .vector_intra_slice_reduce(m("R"), m("A % 2"), m("1 # 4"), IntraSliceReduceOpI32.ADD_SAT)  # noqa: F405
         .vector_widen_pad(m("1 # 8")).vector_final().commit_trim(m("1 # 8")).commit(m("A % 2, 1 # 8")))  # noqa: F405
    return y.to_hbm(ctx.tdma)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_vrf_operand_after_a_split(backend):
    x, b = RNG.standard_normal((8, 8)).astype(np.float32), RNG.standard_normal(8).astype(np.float32)
    got = npu_opt.run(scale_after_split, x, b, backend=backend)
    np.testing.assert_array_equal(got.view(np.uint32), (x * b[None, :]).astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_reduce_over_an_axis_split_across_time_and_packet(backend):
    x = RNG.integers(-(10**6), 10**6, (8, 16), dtype=np.int64)  # no partial sum saturates
    want = x.sum(axis=1).astype(np.int32)
    got = npu_opt.run(sum_split_axis, x.astype(np.int32), backend=backend)
    np.testing.assert_array_equal(got, want)


@device(chip=1)  # noqa: F405
def squares_split_axis(ctx: Context, x: HbmTensor[f32, Chip, m("A, R")]) -> HbmTensor[f32, Chip, m("A")]:  # noqa: F405
    """y[a] = sum over r of x[a, r]^2: the split stream is stashed and multiplied by itself, so
    the pass is a `vector_branch` record, whose steps start at the split (no tag step)."""
    xd = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, m("A / 2 # 64"), m("A % 2, R")])  # noqa: F405
    y = (ctx.main.begin(xd.view()).fetch(m("A % 2, R / 8"), m("R % 8"))  # noqa: F405
         .collect(m("A % 2, R / 8"), m("R % 8")).vector_init().vector_intra_slice_tag(TagMode.ZERO)  # noqa: F405
         .vector_narrow_split(m("A % 2, R / 4"), m("R % 4")).vector_stash()  # noqa: F405
         .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), Stash)  # noqa: F405
         .vector_intra_slice_reduce(m("R"), m("A % 2"), m("1 # 4"), IntraSliceReduceOpF32.ADD)  # noqa: F405
         .vector_widen_pad(m("1 # 8")).vector_final().commit_trim(m("1 # 8")).commit(m("A % 2, 1 # 8")))  # noqa: F405
    return y.to_hbm(ctx.tdma)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_stashed_square_reduced_over_a_split_axis(backend):
    x = RNG.integers(-9, 10, (8, 16)).astype(np.float32)  # small integers: every partial sum is exact
    want = (x.astype(np.float64) ** 2).sum(axis=1).astype(np.float32)
    assert " vector_branch " in npu_opt.compile(squares_split_axis).text
    got = npu_opt.run(squares_split_axis, x, backend=backend)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
