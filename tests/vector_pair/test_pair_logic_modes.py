"""The Logic cluster in pair mode (`vector_logic` per group, `vector_logic_zip`) and the
`*_with_mode` forms of the paired per-group ops, on cpu against numpy oracles and through
VISA (the text parses back to itself, verifies, and the interpreter agrees bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import (BinaryArgMode, ClipBinaryOpI32, FpBinaryOp, FxpBinaryOp, LogicBinaryOpF32, LogicBinaryOpI32,
                     f32, i32)
from tu_ops import rngd
from visa.verify import verify_text

from tests.vector_pair.kernels import float_pair_kernel, pair_kernel
from tests.vector_pair.test_pair_mode import _roundtrip

RNG = np.random.default_rng(1313)
XI = RNG.integers(-(2**31), 2**31, (2, 4, 32), dtype=np.int64).astype(np.int32)
SMALL = RNG.integers(-5000, 5000, (2, 4, 32)).astype(np.int32)
SHIFTS = RNG.integers(0, 32, (2, 4, 32)).astype(np.int32)
XF = (RNG.standard_normal((2, 4, 32)) * 4).astype(np.float32)
M10, M11 = BinaryArgMode.MODE10, BinaryArgMode.MODE11


def _wrap(v):
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def _u(a):
    return np.asarray(a).view(np.uint32).astype(np.uint64)


def _bits_i32(u):
    return (np.asarray(u, np.uint64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


A, B = XI[0], XI[1]
SA, SB = SMALL[0].astype(np.int64), SMALL[1].astype(np.int64)
# name -> (dtype, steps, input, oracle)
CASES = {
    "logic_zip_xor": (i32, [("vector_logic_zip", LogicBinaryOpI32.BIT_XOR)], XI, _bits_i32(_u(A) ^ _u(B))),
    "logic_zip_and_mode10": (i32, [("vector_logic_zip_with_mode", LogicBinaryOpI32.BIT_AND, M10)], XI,
                             _bits_i32(_u(A) & _u(B))),
    # MODE10 of a shift: group 1 shifted left by group 0 (the amounts are 0 ... 31)
    "logic_zip_shift_mode10": (i32, [("vector_logic_zip_with_mode", LogicBinaryOpI32.LEFT_SHIFT, M10)],
                               np.stack([SHIFTS[0], XI[1]]), _bits_i32(_u(XI[1]) << SHIFTS[0].astype(np.uint64))),
    "paired_logic_then_add": (i32, [("vector_logic", LogicBinaryOpI32.BIT_AND, 0xFF, None),
                                    ("vector_clip_zip", ClipBinaryOpI32.ADD_FXP)], XI,
                              _wrap((A.astype(np.int64) & 0xFF) + B.astype(np.int64))),
    "paired_logic_mode10_shift": (i32, [("vector_logic_with_mode", LogicBinaryOpI32.LEFT_SHIFT, M10, 1, None),
                                        ("vector_fxp_zip", FxpBinaryOp.ADD_FXP)], np.stack([SHIFTS[0], XI[1]]),
                                  _wrap((np.int64(1) << SHIFTS[0].astype(np.int64)) + XI[1].astype(np.int64))),
    "fxp_mode10_both": (i32, [("vector_fxp_with_mode", FxpBinaryOp.SUB_FXP, M10, 100, -7),
                              ("vector_clip_zip", ClipBinaryOpI32.MAX)], SMALL, np.maximum(100 - SA, -7 - SB)),
    "clip_mode11_one_group": (i32, [("vector_clip_with_mode", ClipBinaryOpI32.MAX, M11, None, 3),
                                    ("vector_clip_zip", ClipBinaryOpI32.ADD_FXP)], SMALL, _wrap(SA + 3)),
    "merged_fxp_mode10": (i32, [("vector_logic_zip", LogicBinaryOpI32.BIT_XOR),
                                ("vector_fxp_with_mode", FxpBinaryOp.SUB_FXP, M10, 9)], SMALL, _wrap(9 - (SA ^ SB))),
    "merged_clip_mode10": (i32, [("vector_fxp_zip", FxpBinaryOp.ADD_FXP),
                                     ("vector_clip_with_mode", ClipBinaryOpI32.MIN, M10, 50)], SMALL,
                               np.minimum(50, SA + SB)),
}
F_BITS = XF.view(np.uint32)
FLOAT_CASES = {
    "fp_binary_mode10": ([("vector_fp_binary_with_mode", FpBinaryOp.SUB_F, M10, 1.0, None),
                          ("vector_fp_zip", FpBinaryOp.MUL_F(npu_opt.FpMulAlu.MUL0))],
                         (np.float32(1.0) - XF[0]) * XF[1]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_logic_and_mode_pair_chain(name):
    dtype, steps, x, want = CASES[name]
    cpu, _ = _roundtrip(pair_kernel(dtype, steps, name=name), x)
    np.testing.assert_array_equal(cpu, np.asarray(want).astype(np.int32))


def test_f32_logic_works_on_bit_patterns():
    """Group 1's sign bit cleared by a paired f32 BIT_AND, then or-ed with group 0's bits."""
    k = pair_kernel(f32, [("vector_logic", LogicBinaryOpF32.BIT_AND, None, float(np.uint32(0x7FFFFFFF).view(np.float32))),
                          ("vector_logic_zip", LogicBinaryOpF32.BIT_OR)], name="f32_logic")
    cpu, _ = _roundtrip(k, XF)
    want = (F_BITS[0] | (F_BITS[1] & np.uint32(0x7FFFFFFF))).view(np.float32)
    np.testing.assert_array_equal(cpu.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("name", sorted(FLOAT_CASES))
def test_float_mode_pair_chain(name):
    steps, want = FLOAT_CASES[name]
    cpu, _ = _roundtrip(float_pair_kernel(steps, name=name), XF)
    np.testing.assert_array_equal(cpu, want.astype(np.float32))


def test_record_spells_the_mode_and_the_logic_unit():
    k = pair_kernel(i32, [("vector_logic_with_mode", LogicBinaryOpI32.BIT_OR, M10, 1, None),
                          ("vector_logic_zip_with_mode", LogicBinaryOpI32.BIT_XOR, M10)], name="spelled")
    (line,) = [t for t in npu_opt.compile(k).text.splitlines() if " = vector_pair " in t]
    assert ("steps=[{unit=LOGIC_I32, op=BIT_OR, side=G0, arg0=1, arg1=0, mode=MODE10}, "
            "{unit=LOGIC_I32, op=BIT_XOR, side=ZIP, arg0=2, arg1=0}]") in line


@pytest.mark.parametrize("old, new, code", [
    ("side=ZIP, arg0=2, arg1=0}", "side=ZIP, arg0=2, arg1=0, mode=MODE10}", "VPAIR-3"),   # a zip's mode is arg0
    ("{unit=LOGIC_I32, op=BIT_OR, side=G0", "{unit=LOGIC_I32, op=MAX, side=G0", "VPAIR-3"),  # not a logic op
])
def test_a_damaged_logic_record_is_refused(old, new, code):
    k = pair_kernel(i32, [("vector_logic_with_mode", LogicBinaryOpI32.BIT_OR, M10, 1, None),
                          ("vector_logic_zip_with_mode", LogicBinaryOpI32.BIT_XOR, M10)], name="damaged")
    text = npu_opt.compile(k).text
    assert old in text
    with pytest.raises(npu_opt.NpuOptError) as info:
        verify_text(text.replace(old, new), rngd())
    assert info.value.code == code


def _first(kernel):
    report = npu_opt.check(kernel)
    assert report.diagnostics, "the kernel was accepted"
    return report.diagnostics[0]


ADD = ("vector_clip_zip", ClipBinaryOpI32.ADD_FXP)


@pytest.mark.parametrize("steps, code", [
    ([("vector_logic_zip", LogicBinaryOpF32.BIT_OR)], "VE-DTYPE-1"),                     # the f32 enum on i32
    ([("vector_logic", LogicBinaryOpI32.LEFT_SHIFT, 32, None), ADD], "VE-SHIFT-1"),
    ([("vector_logic", LogicBinaryOpI32.BIT_AND, 2**31, None), ADD], "VE-CONST-1"),
    ([("vector_logic_with_mode", LogicBinaryOpI32.BIT_AND, "MODE10", 1, None), ADD], "VE-ENUM-4"),
    ([("vector_fxp_with_mode", FxpBinaryOp.ADD_FXP, M10, None, None), ADD], "TYPE-6"),  # both groups skipped
    ([("vector_fxp", FxpBinaryOp.ADD_FXP, 1, None), ("vector_logic", LogicBinaryOpI32.BIT_AND, 1, 1), ADD],
     "TYPE-1"),                                                                            # Logic before Fxp
    ([("vector_logic", LogicBinaryOpI32.BIT_AND, 1, None), ("vector_logic_zip", LogicBinaryOpI32.BIT_AND)],
     "VE-ALU-1"),                                                                          # the AND ALU twice
])
def test_refused_logic_and_mode_pair_chain(steps, code):
    d = _first(pair_kernel(i32, steps, name="refused"))
    assert d.code == code, d.render()
    assert d.file.endswith("kernels.py")


def test_fxp_zip_of_mul_fxp():
    """A regression the differential generator found: the zip of `MUL_FXP` looked up the float
    multiply (its name starts like `MUL_F_MUL0`). Q31: ((a * b >> 30) + 1) >> 1, saturated."""
    cpu, _ = _roundtrip(pair_kernel(i32, [("vector_fxp_zip", FxpBinaryOp.MUL_FXP)], name="mul_fxp_zip"), XI)
    p = A.astype(np.int64) * B.astype(np.int64)
    want = np.clip(((p >> 30) + 1) >> 1, -(2**31), 2**31 - 1).astype(np.int32)
    np.testing.assert_array_equal(cpu, want)


def test_reinterpret_both_groups_for_an_abs_add():
    """|a| + |b| in f32: both groups reread as i32, their sign bits cleared, reread as f32."""
    k = pair_kernel(f32, [("vector_reinterpret", i32), ("vector_logic", LogicBinaryOpI32.BIT_AND, 0x7FFFFFFF, 0x7FFFFFFF),
                          ("vector_reinterpret", f32), ("vector_clip_zip", npu_opt.ClipBinaryOpF32.ADD)], name="abs_add")
    cpu, text = _roundtrip(k, XF)
    np.testing.assert_array_equal(cpu, np.abs(XF[0]) + np.abs(XF[1]))
    assert "{unit=REINTERPRET, op=TO_I32, side=BOTH, arg0=0, arg1=0}" in text


def test_reinterpret_scales_one_group_by_its_exponent():
    """Adding 3 << 23 to an f32's bits multiplies it by 8 (normal values): 8 a + b."""
    k = pair_kernel(f32, [("vector_reinterpret", i32), ("vector_fxp", FxpBinaryOp.ADD_FXP, 3 << 23, None),
                          ("vector_reinterpret", f32), ("vector_clip_zip", npu_opt.ClipBinaryOpF32.ADD)], name="scale8")
    cpu, _ = _roundtrip(k, XF)
    np.testing.assert_array_equal(cpu, XF[0] * np.float32(8) + XF[1])


def test_reinterpret_takes_i32_or_f32():
    d = _first(pair_kernel(f32, [("vector_reinterpret", "i32"), ADD], name="bad_reinterpret"))
    assert d.code == "VE-REINT-1", d.render()
