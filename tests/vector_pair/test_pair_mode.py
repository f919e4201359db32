"""Pair mode (unzip, paired ops, zips) on cpu against numpy oracles, and compiled to VISA:
the text parses back to itself, verifies, and the interpreter agrees with cpu bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import (BinaryArgMode, ClipBinaryOpF32, ClipBinaryOpI32, FpBinaryOp, FpMulAlu, FpUnaryOp,
                     FxpBinaryOp, f32, i32)
from tu_ops import rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

from tests.vector_pair.kernels import float_pair_kernel, pair_kernel

RNG = np.random.default_rng(13)
XI = RNG.integers(-(2**31), 2**31, (2, 4, 32), dtype=np.int64).astype(np.int32)
SMALL = RNG.integers(-3000, 3000, (2, 4, 32)).astype(np.int32)
XF = (RNG.standard_normal((2, 4, 32)) * 3).astype(np.float32)


def _wrap(v):
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def _sat(v):
    return np.clip(np.asarray(v, np.int64), -(2**31), 2**31 - 1).astype(np.int32)


A, B = XI[0].astype(np.int64), XI[1].astype(np.int64)
SA, SB = SMALL[0].astype(np.int64), SMALL[1].astype(np.int64)
# name -> (dtype, steps, input, oracle from int64 / float64 arithmetic)
CASES = {
    "clip_add_wraps": (i32, [("vector_clip_zip", ClipBinaryOpI32.ADD_FXP)], XI, _wrap(A + B)),
    "clip_add_saturates": (i32, [("vector_clip_zip", ClipBinaryOpI32.ADD_FXP_SAT)], XI, _sat(A + B)),
    "fxp_sub_mode10": (i32, [("vector_fxp_zip_with_mode", FxpBinaryOp.SUB_FXP, BinaryArgMode.MODE10)], XI,
                       _wrap(B - A)),
    "fxp_mul_mode00": (i32, [("vector_fxp_zip_with_mode", FxpBinaryOp.MUL_INT, BinaryArgMode.MODE00)], SMALL,
                       _wrap(SA * SA)),
    "scale_one_side_then_add": (i32, [("vector_fxp", FxpBinaryOp.MUL_INT, 10, None),
                                      ("vector_clip_zip", ClipBinaryOpI32.ADD_FXP)], SMALL, _wrap(10 * SA + SB)),
    "per_group_constants_then_max": (i32, [("vector_fxp", FxpBinaryOp.ADD_FXP, 7, -7),
                                           ("vector_clip_zip", ClipBinaryOpI32.MAX),
                                           ("vector_clip", ClipBinaryOpI32.MIN, 1000)], SMALL,
                                     np.minimum(np.maximum(SA + 7, SB - 7), 1000).astype(np.int32)),
    "i32_to_f32_then_f32_max": (i32, [("vector_fxp_to_fp", 31), ("vector_clip_zip", ClipBinaryOpF32.MAX)], SMALL,
                                np.maximum(SA, SB).astype(np.float32)),
    "f32_clip_add": (f32, [("vector_clip", ClipBinaryOpF32.MAX, 0.0, None), ("vector_clip_zip", ClipBinaryOpF32.ADD)],
                     XF, (np.maximum(XF[0], 0) + XF[1]).astype(np.float32)),
}
FLOAT_CASES = {
    "fp_mul": ([("vector_fp_zip", FpBinaryOp.MUL_F(FpMulAlu.MUL0))], XF[0] * XF[1]),
    "fp_sub_reversed": ([("vector_fp_zip_with_mode", FpBinaryOp.SUB_F, BinaryArgMode.MODE10)], XF[1] - XF[0]),
    "scaled_add": ([("vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.MUL1), 0.5, 2.0),
                    ("vector_fp_zip", FpBinaryOp.ADD_F)], XF[0] * np.float32(0.5) + XF[1] * np.float32(2.0)),
}


def _out_dtype(steps, dtype):
    return f32 if any(s[0] == "vector_fxp_to_fp" for s in steps) else dtype


def _roundtrip(kernel, x):
    artifact = npu_opt.compile(kernel)
    assert print_artifact(parse_visa(artifact.text)) == artifact.text
    verify_text(artifact.text, rngd())
    cpu = npu_opt.run(kernel, x)
    visa = execute(parse_visa(artifact.text), [x])
    np.testing.assert_array_equal(cpu.view(np.uint32), visa.view(np.uint32))
    return cpu, artifact.text


@pytest.mark.parametrize("name", sorted(CASES))
def test_pair_chain_matches_oracle_and_visa(name):
    dtype, steps, x, want = CASES[name]
    cpu, text = _roundtrip(pair_kernel(dtype, steps, _out_dtype(steps, dtype), name=name), x)
    np.testing.assert_array_equal(cpu, want)
    assert "dest=(VECTOR_PAIR, " in text and ' = vector_pair in=' in text


@pytest.mark.parametrize("name", sorted(FLOAT_CASES))
def test_float_pair_chain_matches_oracle_and_visa(name):
    steps, want = FLOAT_CASES[name]
    cpu, _ = _roundtrip(float_pair_kernel(steps, name=name), XF)
    np.testing.assert_array_equal(cpu, want.astype(np.float32))


def test_exp_on_one_group_only():
    k = float_pair_kernel([("vector_fp_unary", FpUnaryOp.EXP, True, False),
                           ("vector_fp_zip", FpBinaryOp.MUL_F(FpMulAlu.MUL0))])
    cpu, _ = _roundtrip(k, XF)
    want = np.exp(XF[0].astype(np.float64)) * XF[1]  # exp and the product each round once to f32
    np.testing.assert_allclose(cpu, want, rtol=3e-7, atol=1e-30)


def test_record_spells_each_step():
    k = pair_kernel(i32, [("vector_fxp", FxpBinaryOp.MUL_INT, 10, None),
                          ("vector_fxp_zip_with_mode", FxpBinaryOp.SUB_FXP, BinaryArgMode.MODE10),
                          ("vector_clip", ClipBinaryOpI32.MAX, 0)])
    (line,) = [t for t in npu_opt.compile(k).text.splitlines() if " = vector_pair " in t]
    assert ('axis="I" split_time="A, E / 8" steps=[{unit=FXP, op=MUL_INT, side=G0, arg0=10, arg1=0}, '
            '{unit=FXP, op=SUB_FXP, side=ZIP, arg0=2, arg1=0}, {unit=CLIP_I32, op=MAX, side=MERGED, arg0=0, '
            'arg1=0}]') in line


@pytest.mark.parametrize("old, new, code", [
    ("side=ZIP, arg0=2", "side=G0, arg0=2", "VPAIR-2"),                 # no merge left
    ("{unit=CLIP_I32, op=MAX, side=MERGED", "{unit=FXP, op=MUL_INT, side=MERGED", "VPAIR-2"),  # FxpMul twice
    ("side=ZIP, arg0=2", "side=ZIP, arg0=7", "VPAIR-3"),                # no such mode
    ('split_time="A, E / 8"', 'split_time="A, E / 16"', "VPAIR-1"),     # not the time without I
])
def test_a_damaged_pair_record_is_refused(old, new, code):
    k = pair_kernel(i32, [("vector_fxp", FxpBinaryOp.MUL_INT, 10, None),
                          ("vector_fxp_zip_with_mode", FxpBinaryOp.SUB_FXP, BinaryArgMode.MODE10),
                          ("vector_clip", ClipBinaryOpI32.MAX, 0)], name="damaged")
    text = npu_opt.compile(k).text
    assert old in text
    with pytest.raises(npu_opt.NpuOptError) as info:
        verify_text(text.replace(old, new), rngd())
    assert info.value.code == code
