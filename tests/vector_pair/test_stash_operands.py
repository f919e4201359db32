"""The stash in every operand position the reference gives it: FMA_F's first operand
(`vector_fp_ternary(op, (Stash, c))`, every TernaryArgMode), the `_with_mode` forms, the
Logic cluster and the FpDiv stage, and the register-file slot of a branched operand
(`Branched.rf(guard, Stash)`). cpu against oracles written here (FMA_F against exact
rational arithmetic rounded once to f32), cpu == visa bit for bit, and the refusals."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import npu_opt
from tests.agree import both_backends
from npu_opt import (BinaryArgMode, Context, DmTensor, HbmTensor, axes, device, m, BitReq, Branched, ClipBinaryOpF32, ClipBinaryOpI32, Cmp, FpBinaryOp, FpMulAlu,
                     FpTernaryOp, FxpBinaryOp, GroupId, LogicBinaryOpF32, LogicBinaryOpI32, Stash, TagGuard, TagMode,
                     TernaryArgMode, f32, i32)

from tests.vector.kernels import chain_kernel, float_kernel
from tests.vector_pair.kernels import Lazy, tagged_kernel

RNG = np.random.default_rng(1313)
XF = (RNG.standard_normal((8, 64)) * 4).astype(np.float32)
XI = RNG.integers(-(2**31), 2**31, (8, 64), dtype=np.int64).astype(np.int32)
XT = RNG.integers(-(2**31), 2**31, (4, 32), dtype=np.int64).astype(np.int32)
STASH = ("vector_stash",)
MUL3 = ("vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.MUL0), 3.0)


def _both(kernel, x):
    return both_backends(kernel, x, " stash_at=")[0]


def _f32_nearest(q: Fraction) -> np.float32:
    """The f32 nearest the rational `q`, ties to the even significand (normal range)."""
    guess = np.float32(float(q))
    around = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    return min(around, key=lambda c: (abs(Fraction(float(c)) - q), int(np.array(c).view(np.uint32)) & 1))


def _fma_exact(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    a, b, c = np.broadcast_arrays(a, b, c)
    out = [_f32_nearest(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r)))
           for p, q, r in zip(a.ravel(), b.ravel(), c.ravel())]
    return np.array(out, np.float32).reshape(a.shape)


def test_the_oracle_rounds_once():
    """(1 + 2^-12)^2 + 2^-60 lies just above a tie of f32: rounding it to float64 first would
    lose the 2^-60 and round the tie down to even; one rounding goes up."""
    x = np.float32(1 + 2**-12)
    assert _fma_exact(x, x, np.float32(2**-60)) == np.float32(1 + 2**-11 + 2**-23)
    assert np.float32(np.float64(x) * np.float64(x) + 2**-60) == np.float32(1 + 2**-11)


def test_fma_of_the_stream_and_the_stash_rounds_once():
    """x * x + 2^-60 with x stashed at the Narrow stage: the halfway inputs go up."""
    x = XF.copy()
    x[0, :16] = np.float32(1 + 2**-12)
    x[1, :16] = np.float32(-(1 + 2**-12))
    k = float_kernel([STASH, ("vector_fp_ternary", FpTernaryOp.FMA_F, (Stash, 2.0**-60))], name="fma_sq")
    out = _both(k, x)
    np.testing.assert_array_equal(out, _fma_exact(x, x, np.float32(2**-60)))
    assert out[0, 0] == out[1, 0] == np.float32(1 + 2**-11 + 2**-23)


@pytest.mark.parametrize("mode", [None, *[getattr(TernaryArgMode, n) for n in
                                          ("MODE012", "MODE002", "MODE102", "MODE112", "MODE020", "MODE021",
                                           "MODE120")]])
def test_fma_reads_the_stash_as_operand_0_under_each_mode(mode):
    """s = x is stashed, y = 3x runs on; FMA_F(pick of (y, s, c)) with c = -0.75."""
    method, args = (("vector_fp_ternary", ()) if mode is None else ("vector_fp_ternary_with_mode", (mode,)))
    k = float_kernel([STASH, MUL3, (method, FpTernaryOp.FMA_F, *args, (Stash, -0.75))], name="fma_mode")
    y = XF * np.float32(3.0)
    pick = {"0": y, "1": XF, "2": np.float32(-0.75)}
    name = "MODE012" if mode is None else mode.name
    want = _fma_exact(pick[name[4]], pick[name[5]], pick[name[6]])
    np.testing.assert_array_equal(_both(k, XF), want)


@pytest.mark.parametrize("mode, want", [
    (None, lambda y, s: y / s),
    (BinaryArgMode.MODE10, lambda y, s: s / y),
    (BinaryArgMode.MODE11, lambda y, s: s / s),
])
def test_fp_div_by_the_stash(mode, want):
    steps = [STASH, MUL3, ("vector_fp_div", Stash) if mode is None else ("vector_fp_div_with_mode", mode, Stash)]
    y = XF * np.float32(3.0)
    np.testing.assert_array_equal(_both(float_kernel(steps, name="div_stash"), XF), want(y, XF))


@pytest.mark.parametrize("method, mode, want", [
    ("vector_fxp_with_mode", BinaryArgMode.MODE10, lambda y, s: s - y),           # SUB_FXP, stash - stream
    ("vector_fxp_with_mode", BinaryArgMode.MODE00, lambda y, s: y - y),
    ("vector_fxp_with_mode", BinaryArgMode.MODE01, lambda y, s: y - s),
])
def test_fxp_with_mode_reads_the_stash(method, mode, want):
    """s = x stashed at the Tag, y = x + 12345 (wrapping), then SUB_FXP under the mode."""
    k = chain_kernel(i32, [STASH, ("vector_logic", LogicBinaryOpI32.BIT_XOR, 12345),
                           (method, FxpBinaryOp.SUB_FXP, mode, Stash)], name="fxp_mode")
    y = XI ^ np.int32(12345)
    wrapped = ((want(y.astype(np.int64), XI.astype(np.int64)) + 2**31) % 2**32 - 2**31).astype(np.int32)
    np.testing.assert_array_equal(_both(k, XI), wrapped)


def test_clip_and_fp_binary_with_mode_read_the_stash():
    k = chain_kernel(i32, [("vector_fxp", FxpBinaryOp.ARITH_RIGHT_SHIFT, 3), STASH,
                           ("vector_fxp", FxpBinaryOp.MUL_INT, -2),
                           ("vector_clip_with_mode", ClipBinaryOpI32.ADD_FXP_SAT, BinaryArgMode.MODE11, Stash)],
                     name="clip_mode")
    s = XI.astype(np.int64) >> 3
    np.testing.assert_array_equal(_both(k, XI), np.clip(s + s, -(2**31), 2**31 - 1).astype(np.int32))
    k = float_kernel([STASH, MUL3, ("vector_fp_binary_with_mode", FpBinaryOp.SUB_F, BinaryArgMode.MODE10, Stash)],
                     name="fp_mode")
    np.testing.assert_array_equal(_both(k, XF), XF - XF * np.float32(3.0))


def test_the_logic_cluster_reads_the_stash():
    """i32: y = x << 3 stashed at Logic, z = y | m, then (MODE10) y ^ z = ~y & m; f32: the sign
    bit of x (x & -0.0) xor-ed with the stashed x is |x|."""
    mask = 0x00FF0F0F
    k = chain_kernel(i32, [("vector_logic", LogicBinaryOpI32.LEFT_SHIFT, 3), STASH,
                           ("vector_logic", LogicBinaryOpI32.BIT_OR, mask),
                           ("vector_logic_with_mode", LogicBinaryOpI32.BIT_XOR, BinaryArgMode.MODE10, Stash)],
                     name="logic_i32")
    y = (XI.view(np.uint32) << np.uint32(3))
    np.testing.assert_array_equal(_both(k, XI).view(np.uint32), ~y & np.uint32(mask))
    k = chain_kernel(f32, [STASH, ("vector_logic", LogicBinaryOpF32.BIT_AND, -0.0),
                           ("vector_logic", LogicBinaryOpF32.BIT_XOR, Stash)], name="logic_f32")
    np.testing.assert_array_equal(_both(k, XF).view(np.uint32), XF.view(np.uint32) & np.uint32(0x7FFFFFFF))


# --- the branched register-file slot --------------------------------------------------------

NEG = TagGuard.matches([BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE, BitReq.IGNORE])
NOT_NEG = TagGuard.not_matches([BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE, BitReq.IGNORE])
LESS0 = TagMode.COMPARISON([Cmp.LESS(0), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE])


def test_a_guarded_stash_slot_adds_the_input_back_to_the_negatives():
    """t = 3x (wrapping); negatives (tagged at the input) get t + x, the rest t + 9."""
    k = tagged_kernel(i32, LESS0, [STASH, ("vector_fxp", FxpBinaryOp.MUL_INT, 3),
                                   ("vector_clip", ClipBinaryOpI32.ADD_FXP, Branched.imm(NOT_NEG, 9).rf(NEG, Stash))],
                      name="neg_back")
    x = XT.astype(np.int64)
    t = (x * 3 + 2**31) % 2**32 - 2**31
    want = np.where(x < 0, t + x, t + 9)
    np.testing.assert_array_equal(_both(k, XT), ((want + 2**31) % 2**32 - 2**31).astype(np.int32))


def test_a_stash_slot_alone_leaves_the_unadmitted_elements():
    """Only the rf slot, guarded on bit 1 (x > 100 at the input): t = x - 1000 (saturating),
    then max(t, x) there and t elsewhere."""
    big = TagGuard.matches([BitReq.IGNORE, BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE])
    mode = TagMode.COMPARISON([Cmp.FALSE, Cmp.GREATER(100), Cmp.FALSE, Cmp.FALSE])
    x = (XT % 5000).astype(np.int32) - 2500
    k = tagged_kernel(i32, mode, [STASH, ("vector_fxp", FxpBinaryOp.SUB_FXP_SAT, 1000),
                                  ("vector_clip", ClipBinaryOpI32.MAX, Branched.rf(big, Stash))], name="stash_alone")
    t = x.astype(np.int64) - 1000
    np.testing.assert_array_equal(_both(k, x), np.where(x > 100, np.maximum(t, x), t).astype(np.int32))


def test_a_stash_slot_on_an_f32_stream():
    """f32: t = min(x, 2); where x < 0 (tagged at the input) t + x, else t + 0.5."""
    x = (XT % 1000).astype(np.float32) / np.float32(64) - np.float32(7)
    k = tagged_kernel(f32, TagMode.COMPARISON([Cmp.LESS(0.0), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE]),
                      [STASH, ("vector_clip", ClipBinaryOpF32.MIN, 2.0),
                       ("vector_clip", ClipBinaryOpF32.ADD, Branched.imm(NOT_NEG, 0.5).rf(NEG, Stash))],
                      name="f32_slot")
    t = np.minimum(x, np.float32(2))
    np.testing.assert_array_equal(_both(k, x), np.where(x < 0, t + x, t + np.float32(0.5)))


# --- refusals -------------------------------------------------------------------------------

def _first(kernel):
    report = npu_opt.check(kernel)
    assert report.diagnostics, "the kernel was accepted"
    return report.diagnostics[0]


@pytest.mark.parametrize("steps, code", [
    ([("vector_fp_ternary", FpTernaryOp.FMA_F, (Stash, 1.0))], "VE-STASH-1"),
    ([STASH, ("vector_fp_ternary", FpTernaryOp.FMA_F, (Stash, 1.0)), ("vector_fp_div", Stash)], "VE-STASH-2"),
    ([STASH, MUL3, ("vector_fp_ternary", FpTernaryOp.FMA_F, (1.0, Stash))], "TYPE-6"),     # c is a constant
    ([STASH, ("vector_fp_ternary", FpTernaryOp.FMA_F, (Stash, "c"))], "TYPE-6"),
    ([STASH, ("vector_fp_binary", FpBinaryOp.ADD_F, Branched.rf(TagGuard.group(GroupId.ONE), Stash))], "VE-SLOT-6"),
])
def test_refused_float_stash_reads(steps, code):
    d = _first(float_kernel(steps, name="refused"))
    assert d.code == code, d.render()
    assert d.file.endswith("kernels.py")


axes(A=8, E=64)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")


@device(chip=1)
def stashed_8_way(ctx: Context, x: HbmTensor[f32, Chip, m("A, E")]) -> HbmTensor[f32, Chip, m("A, E")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("A, E")])
    s = (ctx.main.begin(x.view()).fetch(m("A, E / 4"), m("E % 4")).collect(m("A, E / 4"), m("E % 4 # 8"))
         .vector_init().vector_intra_slice_tag(TagMode.ZERO).vector_stash()
         .vector_narrow_trim(m("E % 4"))
         .vector_fp_ternary(FpTernaryOp.FMA_F, (Stash, 1.0)))  # STASHED_8_WAY_LINE
    y = s.vector_widen_pad(m("E % 4 # 8")).vector_final().commit_trim(m("E % 4")).commit()
    return y.to_hbm(ctx.tdma)


def test_a_stash_written_8_way_is_not_read_by_fma():
    """Stashed before the narrow (8-way), read by FMA_F on the 4-way float path: VE-STASH-4."""
    d = _first(stashed_8_way)
    assert d.code == "VE-STASH-4", d.render()
    lines = open(__file__).read().splitlines()
    assert d.file.endswith("test_stash_operands.py") and "STASHED_8_WAY_LINE" in lines[d.line - 1]


@pytest.mark.parametrize("steps, code", [
    ([STASH, ("vector_clip", ClipBinaryOpI32.MAX, Branched.rf(TagGuard.group(GroupId.ZERO), Stash))], "VE-SLOT-6"),
    ([STASH, ("vector_clip", ClipBinaryOpI32.MAX,
              Branched.rf(TagGuard.not_matches([BitReq.IGNORE] * 3 + [BitReq.ONE]), Stash))], "VE-SLOT-6"),
    ([("vector_clip", ClipBinaryOpI32.MAX, Branched.rf(NEG, Stash))], "VE-STASH-1"),
    ([STASH, ("vector_fxp", FxpBinaryOp.ADD_FXP, Stash), ("vector_clip", ClipBinaryOpI32.MAX, Branched.rf(NEG, Stash))],
     "VE-STASH-2"),
    ([STASH, ("vector_fxp", FxpBinaryOp.ADD_FXP, Branched.rf(NEG, Stash)), ("vector_clip", ClipBinaryOpI32.MAX, Stash)],
     "VE-STASH-2"),
    ([STASH, ("vector_fxp_to_fp", 31), ("vector_clip", ClipBinaryOpF32.MAX, Branched.rf(NEG, Stash))], "VE-STASH-4"),
    ([STASH, ("vector_clip", ClipBinaryOpI32.MAX, Lazy(lambda: Branched.rf(NEG, 3)))], "VE-CONST-3"),
])
def test_refused_branched_stash_reads(steps, code):
    d = _first(tagged_kernel(i32, LESS0, steps, name="refused"))
    assert d.code == code, d.render()
    assert d.file.endswith(("kernels.py", "test_stash_operands.py")) and d.line  # the slot, or the op
