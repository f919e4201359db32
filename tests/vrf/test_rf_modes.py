"""A `_with_mode` op whose operand is a VRF tensor: the mode picks among the stream (0) and
the VRF value (1) as it does for a constant, so MODE10 of a subtraction is VRF - stream.
Our kernels against numpy on cpu and on the VISA interpreter, and the printed records."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *  # noqa: F403
from visa.verify import verify_text

axes(R=4, E=8)  # noqa: F405
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405
RNG = np.random.default_rng(61)


def _vrf(ctx, b, dtype):
    bd = b.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("E")])  # noqa: F405
    return ctx.sub.begin(bd.view()).fetch(m("1"), m("E")).collect(m("1"), m("E")).to_vrf(m("E"))  # noqa: F405


def _rows(ctx, x, dtype):
    xd = x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("R, E")])  # noqa: F405
    return (ctx.main.begin(xd.view()).fetch(m("R"), m("E")).collect(m("R"), m("E"))  # noqa: F405
            .vector_init().vector_intra_slice_tag(TagMode.ZERO))  # noqa: F405


@device(chip=1)  # noqa: F405
def float_modes(ctx: Context, x: HbmTensor[f32, Chip, m("R, E")],  # noqa: F405
                b: HbmTensor[f32, Chip, m("E")]) -> HbmTensor[f32, Chip, m("R, E")]:  # noqa: F405
    """y = (b - x) / b: both operands on the stream's right, then on its left."""
    bv = _vrf(ctx, b, f32)  # noqa: F405
    y = (_rows(ctx, x, f32).vector_narrow_split(m("R, E / 4"), m("E % 4"))  # noqa: F405
         .vector_fp_binary_with_mode(FpBinaryOp.SUB_F, BinaryArgMode.MODE10, bv)  # noqa: F405
         .vector_fp_div_with_mode(BinaryArgMode.MODE01, bv)  # noqa: F405
         .vector_widen_concat(m("R"), m("E")).vector_final().commit_trim(m("E")).commit(m("R, E")))  # noqa: F405
    return y.to_hbm(ctx.tdma)


@device(chip=1)  # noqa: F405
def int_modes(ctx: Context, x: HbmTensor[i32, Chip, m("R, E")],  # noqa: F405
              b: HbmTensor[i32, Chip, m("E")]) -> HbmTensor[i32, Chip, m("R, E")]:  # noqa: F405
    """y = min(b - x, b): MODE10 puts the VRF value first, MODE01 second."""
    bv = _vrf(ctx, b, i32)  # noqa: F405
    y = (_rows(ctx, x, i32)  # noqa: F405
         .vector_fxp_with_mode(FxpBinaryOp.SUB_FXP, BinaryArgMode.MODE10, bv)  # noqa: F405
         .vector_clip_with_mode(ClipBinaryOpI32.MIN, BinaryArgMode.MODE01, bv)  # noqa: F405
         .vector_final().commit_trim(m("E")).commit(m("R, E")))  # noqa: F405
    return y.to_hbm(ctx.tdma)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_float_modes_put_the_vrf_value_where_the_mode_says(backend):
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    b = (RNG.standard_normal(8) + 3).astype(np.float32)
    want = ((b[None, :] - x).astype(np.float32) / b[None, :]).astype(np.float32)
    got = npu_opt.run(float_modes, x, b, backend=backend)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_integer_modes_put_the_vrf_value_where_the_mode_says(backend):
    x = RNG.integers(-1000, 1000, (4, 8)).astype(np.int32)
    b = RNG.integers(-1000, 1000, 8).astype(np.int32)
    want = np.minimum(b[None, :] - x, b[None, :])
    got = npu_opt.run(int_modes, x, b, backend=backend)
    np.testing.assert_array_equal(got, want)


def test_the_records_carry_the_mode_on_the_register_file_steps():
    text = npu_opt.compile(float_modes).text
    verify_text(text)
    (line,) = [x for x in text.splitlines() if "= vector_rf " in x]
    assert "{unit=FP_BINARY_RF, op=SUB_F, arg=0, mode=MODE10}" in line
    assert "{unit=FP_DIV_RF, op=DIV_F, arg=0}" in line  # MODE01 is the default: not printed
