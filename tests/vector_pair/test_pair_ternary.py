"""FMA_F on each group of a pair (`vector_fp_ternary(op, (a0, c0), (a1, c1))` and its
`_with_mode` form) on the 4-way float path: cpu against an exact oracle (the product and sum
in fractions, rounded once to f32), the VISA interpreter agreeing with cpu bit for bit; the
operands a pair cannot take are refused at the user's line."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import npu_opt
from npu_opt import (BinaryArgMode, Branched, FpBinaryOp, FpMulAlu, FpTernaryOp, Stash, TagGuard, TernaryArgMode, axes,
                     f32, m)
from tests.agree import both_backends
from tests.vector_pair.kernels import Lazy, float_pair_kernel, pair_kernel

axes(I=2, A=4, E=32)  # the mappings of the VRF kernel below
RNG = np.random.default_rng(2026)
X = RNG.standard_normal((2, 4, 32)).astype(np.float32)
R0, C0, R1, C1 = 1.0000001, -2.9999998, -0.3333333, 0.7  # products and sums that do not fit f32


def _nearest(q: Fraction) -> np.float32:
    """The f32 nearest the rational `q`, ties to the even significand (normal range)."""
    guess = np.float32(float(q))
    around = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    return min(around, key=lambda c: (abs(Fraction(float(c)) - q), int(np.array(c).view(np.uint32)) & 1))


def _fma(a, b, c) -> np.ndarray:
    """a * b + c exactly, rounded once (a, b, c arrays or f32 numbers)."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float32) for v in (a, b, c)))
    out = [_nearest(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r)))
           for p, q, r in zip(a.ravel(), b.ravel(), c.ravel())]
    return np.array(out, np.float32).reshape(a.shape)


def _bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


def _run(steps, name="pair_fma", *markers):
    cpu, text = both_backends(float_pair_kernel(steps, name=name), X, *markers)
    return cpu, next(line for line in text.splitlines() if " = vector_pair " in line)


def test_the_oracle_rounds_once():
    """(1 + 2^-12)^2 + 2^-60 lies just above a tie of f32: a float64 detour rounds it down."""
    a = np.float32(1 + 2**-12)
    assert _fma(a, a, np.float32(2**-60)) == np.float32(1 + 2**-11 + 2**-23)


def test_each_group_takes_its_own_pair_then_the_zip():
    r0, c0, r1, c1 = (np.float32(v) for v in (R0, C0, R1, C1))
    cpu, rec = _run([("vector_fp_ternary", FpTernaryOp.FMA_F, (R0, C0), (R1, C1)),
                     ("vector_fp_zip", FpBinaryOp.MUL_F(FpMulAlu.MUL0))])
    want = _fma(X[0], r0, c0) * _fma(X[1], r1, c1)  # the zip's product: one f32 rounding, as numpy's
    np.testing.assert_array_equal(_bits(cpu), _bits(want))
    step = (f"{{unit=FP_TERNARY, op=FMA_F, side=BOTH, arg0={int(_bits(r0))}, arg1={int(_bits(r1))}, "
            f"add0={int(_bits(c0))}, add1={int(_bits(c1))}}}")
    assert step in rec, rec


def test_a_skipped_group_passes_through():
    cpu, rec = _run([("vector_fp_ternary", FpTernaryOp.FMA_F, None, (R1, C1)),
                     ("vector_fp_zip", FpBinaryOp.MUL_F(FpMulAlu.MUL0))], "pair_fma_g1")
    np.testing.assert_array_equal(_bits(cpu), _bits(X[0] * _fma(X[1], np.float32(R1), np.float32(C1))))
    assert "side=G1, arg0=0" in rec and "add0=" not in rec and "add1=" in rec, rec


@pytest.mark.parametrize("mode, args", [
    (TernaryArgMode.MODE102, lambda x, r, c: (r, x, c)),
    (TernaryArgMode.MODE020, lambda x, r, c: (x, c, x)),
    (TernaryArgMode.MODE112, lambda x, r, c: (r, r, c)),
    (TernaryArgMode.MODE120, lambda x, r, c: (r, c, x)),
])
def test_a_mode_is_read_inside_each_group(mode, args):
    r0, c0, r1, c1 = (np.float32(v) for v in (R0, C0, R1, C1))
    cpu, rec = _run([("vector_fp_ternary_with_mode", FpTernaryOp.FMA_F, mode, (R0, C0), (R1, C1)),
                     ("vector_fp_zip_with_mode", FpBinaryOp.MUL_F(FpMulAlu.MUL1), BinaryArgMode.MODE10)],
                    f"pair_fma_{mode.name.lower()}")
    want = _fma(*args(X[1], r1, c1)) * _fma(*args(X[0], r0, c0))  # MODE10: op(group1, group0)
    np.testing.assert_array_equal(_bits(cpu), _bits(want))
    assert f"mode={mode.name}" in rec, rec


def test_the_ternary_runs_beside_the_other_float_ops():
    """exp on group 0, then FMA on both, MUL1 zip: three float ALUs in one pass."""
    from npu_opt import FpUnaryOp

    cpu, _ = _run([("vector_fp_unary", FpUnaryOp.EXP, True, False),
                   ("vector_fp_ternary", FpTernaryOp.FMA_F, (0.5, 0.25), (2.0, -1.0)),
                   ("vector_fp_zip", FpBinaryOp.MUL_F(FpMulAlu.MUL1))], "pair_fma_exp")
    g0 = npu_opt.run(float_pair_kernel([("vector_fp_unary", FpUnaryOp.EXP, True, False),
                                        ("vector_fp_zip", FpBinaryOp.MUL_F(FpMulAlu.MUL1))], name="exp_only"),
                     np.stack([X[0], np.ones_like(X[1])]))  # the engine's exp of group 0 (its own table)
    want = _fma(g0, np.float32(0.5), np.float32(0.25)) * _fma(X[1], np.float32(2.0), np.float32(-1.0))
    np.testing.assert_array_equal(_bits(cpu), _bits(want))


def _vrf_kernel():
    from tests.vector_pair.test_pair_vrf import _kernel

    def pair(s, w, v):
        return (s.vector_narrow_split(m("A, E / 8, E / 4 % 2"), m("E % 4"))
                .vector_fp_ternary(FpTernaryOp.FMA_F, (w, 1.0), None))

    def merge(s):
        return s.vector_fp_zip(FpBinaryOp.ADD_F).vector_widen_concat(m("A, E / 8"), m("E % 8"))

    return _kernel(f32, pair, merge, "pair_fma_vrf")


@pytest.mark.parametrize("steps, code", [
    ([("vector_fp_ternary", FpTernaryOp.FMA_F, (2.0, 1.0), Lazy(lambda: Branched.imm(TagGuard.all(), (1.0, 0.0))))],
     "VE-TAG-3"),
    ([("vector_fp_ternary", FpTernaryOp.FMA_F, (Stash, 1.0), None)], "TYPE-6"),
    ([("vector_fp_ternary", FpTernaryOp.FMA_F, 2.0, None)], "TYPE-6"),
    ([("vector_fp_ternary", FpTernaryOp.FMA_F, (2.0, 1.0, 0.0), None)], "TYPE-6"),
    ([("vector_fp_ternary", FpTernaryOp.FMA_F, None, ())], "TYPE-6"),
    ([("vector_fp_ternary", FpTernaryOp.FMA_F, (2.0, 1.0), None), ("vector_fp_binary", FpBinaryOp.ADD_F, 1.0, None)],
     "VE-ALU-1"),
    ([("vector_fp_ternary", FpTernaryOp.FMA_F, (2.0, 1e39), None)], "VE-CONST-2"),
])
def test_refused_group_operands(steps, code):
    resolved = [tuple(a.fn() if isinstance(a, Lazy) else a for a in s) for s in steps]
    (d, *_) = npu_opt.check(float_pair_kernel(resolved + [("vector_fp_zip", FpBinaryOp.MUL_F(FpMulAlu.MUL0))],
                                              name="pair_fma_bad")).diagnostics
    assert d.code == code, d.render()
    assert d.file.endswith("kernels.py")  # the line of the kernel's step loop, the user's call


def test_a_vrf_operand_is_vrf_7():
    (d, *_) = npu_opt.check(_vrf_kernel()).diagnostics
    assert d.code == "VRF-7", d.render()
    assert d.file.endswith("test_pair_ternary.py")


def test_an_8_way_pair_offers_no_ternary():
    (d, *_) = npu_opt.check(pair_kernel(f32, [("vector_fp_ternary", FpTernaryOp.FMA_F, (2.0, 1.0), None)],
                                        name="pair_fma_8way")).diagnostics
    assert d.code == "TYPE-1", d.render()
