"""Vector Engine passes compiled to VISA: the text parses back to itself, verifies, and
the interpreter agrees with the cpu backend bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import ClipBinaryOpF32, ClipBinaryOpI32, FxpBinaryOp, f32, i32
from tu_ops import rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.verify import verify_text

from tests.vector.kernels import chain_kernel, cpu_equals_visa

RNG = np.random.default_rng(5)
I32_X = RNG.integers(-(2**31), 2**31, (8, 64), dtype=np.int64).astype(np.int32)
F32_X = (RNG.standard_normal((8, 64)) * 1e3).astype(np.float32)

CHAINS = {
    "scale_relu": (i32, [("vector_fxp", FxpBinaryOp.MUL_FXP, 1 << 29), ("vector_fxp", FxpBinaryOp.ADD_FXP_SAT, -9),
                         ("vector_clip", ClipBinaryOpI32.MAX, 0)], i32),
    "round_shift": (i32, [("vector_fxp", FxpBinaryOp.ARITH_RIGHT_SHIFT_ROUND, 9),
                          ("vector_fxp", FxpBinaryOp.LEFT_SHIFT_SAT, 3), ("vector_clip", ClipBinaryOpI32.ABS_MAX, -7)], i32),
    "to_float": (i32, [("vector_fxp_to_fp", 8), ("vector_clip", ClipBinaryOpF32.MAX, 0.0),
                       ("vector_clip", ClipBinaryOpF32.ADD, 0.25)], f32),
    "f32_relu": (f32, [("vector_clip", ClipBinaryOpF32.MAX, 0.0), ("vector_clip", ClipBinaryOpF32.MIN, 6.0)], f32),
    "f32_to_fixed": (f32, [("vector_fp_to_fxp", 20), ("vector_clip", ClipBinaryOpI32.MIN, 1 << 20)], i32),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_visa_agrees_with_cpu(name):
    dtype, steps, out = CHAINS[name]
    cpu_equals_visa(chain_kernel(dtype, steps, out, name=name), I32_X if dtype is i32 else F32_X)


def test_one_vector_record_per_pass():
    dtype, steps, out = CHAINS["scale_relu"]
    text = npu_opt.compile(chain_kernel(dtype, steps, out)).text
    (line,) = [t for t in text.splitlines() if " = vector " in t]
    assert ("steps=[{unit=TAG, op=ZERO, arg=0}, {unit=FXP, op=MUL_FXP, arg=536870912}, "
            "{unit=FXP, op=ADD_FXP_SAT, arg=-9}, {unit=CLIP_I32, op=MAX, arg=0}]") in line
    assert "dest=(VECTOR, " in text


def test_a_damaged_step_is_refused_by_the_verifier():
    dtype, steps, out = CHAINS["scale_relu"]
    text = npu_opt.compile(chain_kernel(dtype, steps, out)).text
    bad = text.replace("{unit=FXP, op=ADD_FXP_SAT, arg=-9}", "{unit=FXP, op=MUL_INT, arg=-9}")  # FxpMul twice
    with pytest.raises(npu_opt.NpuOptError) as info:
        verify_text(bad, rngd())
    assert info.value.code == "VEOP-2"


def test_widened_i8_collect_stream_enters_the_engine():
    """i8 data widened by the Fetch Adapter (`fetch_cast(i32)`), then x * 5 - 3 saturated."""
    from tests.vector.kernels import widened_i8_kernel as widened

    x = RNG.integers(-128, 128, (8, 64), dtype=np.int8)
    want = x.astype(np.int32) * 5 - 3
    text = npu_opt.compile(widened).text
    assert "conversions=[I8_TO_I32]" in text and "dest=(VECTOR, " in text
    np.testing.assert_array_equal(npu_opt.run(widened, x), want)
    np.testing.assert_array_equal(execute(parse_visa(text), [x]), want)
