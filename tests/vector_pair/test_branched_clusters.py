"""Branched operands on the clusters added after Fxp / Clip / Float: the Logic cluster and the
FpDiv stage, and every `_with_mode` form (the mode is read by each slot, the stash slot's
included). cpu against numpy oracles, cpu == visa, and the VRF-7 refusals of an rf slot
where no register-file read is compiled."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from tests.agree import both_backends
from npu_opt import (BinaryArgMode, BitReq, Branched, ClipBinaryOpI32, Cmp, Context, DmTensor, HbmTensor, axes,
                     device, m, FpBinaryOp, FpDivBinaryOp, FxpBinaryOp, LogicBinaryOpF32,
                     LogicBinaryOpI32, FpTernaryOp, GroupId, Stash, TagGuard, TagMode, TernaryArgMode, f32, i32)

from tests.vector.kernels import float_kernel
from tests.vector_pair.kernels import Lazy, tagged_kernel

RNG = np.random.default_rng(4242)
XI = RNG.integers(-(2**31), 2**31, (4, 32), dtype=np.int64).astype(np.int32)
XF = (RNG.standard_normal((4, 32)) * 5).astype(np.float32)
XW = (RNG.standard_normal((8, 64)) * 5).astype(np.float32)
NEG = TagGuard.matches([BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE, BitReq.IGNORE])
BIG = TagGuard.matches([BitReq.ZERO, BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE])
SIGNS = TagMode.COMPARISON([Cmp.LESS(0), Cmp.GREATER(1000), Cmp.FALSE, Cmp.FALSE])


def _both(kernel, x):
    return both_backends(kernel, x, "vector_branch ")[0]


def _wrap(v):
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def test_logic_slots_flip_the_negatives_and_mask_the_big_ones():
    k = tagged_kernel(i32, SIGNS, [("vector_logic", LogicBinaryOpI32.BIT_XOR,
                                    Branched.imm(NEG, -1).imm(BIG, 0x0F0F0F0F))], name="logic_slots")
    want = np.where(XI < 0, ~XI, np.where(XI > 1000, XI ^ np.int32(0x0F0F0F0F), XI))
    np.testing.assert_array_equal(_both(k, XI), want)


def test_a_logic_shift_by_a_slot_under_mode_10():
    """MODE10 of LEFT_SHIFT: the slot's value shifted by the stream (mod 32 is the hardware's
    business, so the amounts are kept in 0 ... 31)."""
    x = (np.abs(XI) % 32).astype(np.int32) * np.where(np.arange(32) % 2, 1, -1).astype(np.int32)
    k = tagged_kernel(i32, SIGNS, [("vector_logic", LogicBinaryOpI32.BIT_AND, Branched.imm(NEG, 31)),
                                   ("vector_logic_with_mode", LogicBinaryOpI32.LEFT_SHIFT, BinaryArgMode.MODE10,
                                    Branched.imm(TagGuard.not_matches([BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE,
                                                                       BitReq.IGNORE]), 3))], name="logic_mode")
    a = np.where(x < 0, x & 31, x)
    want = np.where(x < 0, a, (np.uint32(3) << a.astype(np.uint32)).view(np.int32))
    np.testing.assert_array_equal(_both(k, x), want)


def test_an_f32_logic_slot_clears_the_sign_of_the_negatives():
    k = tagged_kernel(f32, TagMode.COMPARISON([Cmp.LESS(0.0), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE]),
                      [("vector_logic", LogicBinaryOpF32.BIT_XOR, Branched.imm(NEG, -0.0))], name="logic_f32")
    np.testing.assert_array_equal(_both(k, XF).view(np.uint32), np.abs(XF).view(np.uint32))


def test_the_stash_slot_under_a_mode():
    """y = x << 2; the negatives get 5 - y, the rest (the stash slot, MODE10) x - y."""
    k = tagged_kernel(i32, SIGNS, [("vector_stash",), ("vector_logic", LogicBinaryOpI32.LEFT_SHIFT, 2),
                                   ("vector_fxp_with_mode", FxpBinaryOp.SUB_FXP, BinaryArgMode.MODE10,
                                    Branched.imm(NEG, 5).rf(TagGuard.all(), Stash))], name="stash_mode")
    y = XI.astype(np.int64) << 2
    y = _wrap(y).astype(np.int64)
    np.testing.assert_array_equal(_both(k, XI), _wrap(np.where(XI < 0, 5 - y, XI - y)))


def test_the_logic_cluster_reads_the_stash_in_a_slot():
    k = tagged_kernel(i32, SIGNS, [("vector_stash",), ("vector_logic", LogicBinaryOpI32.LEFT_SHIFT, 4),
                                   ("vector_logic", LogicBinaryOpI32.BIT_OR, Branched.rf(NEG, Stash))],
                      name="logic_stash")
    y = (XI.view(np.uint32) << np.uint32(4)).view(np.int32)
    np.testing.assert_array_equal(_both(k, XI), np.where(XI < 0, y | XI, y))


def test_fp_div_slots_on_the_float_path():
    """The ZERO tag gives every element id 0: the first slot admitting 0 divides (by 4 here;
    a slot on bit 0 set never fires)."""
    never = TagGuard.matches([BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE, BitReq.IGNORE])
    k = float_kernel([("vector_fp_div", Branched.imm(never, 3.0).imm(TagGuard.all(), 4.0))], name="div_slots")
    np.testing.assert_array_equal(_both(k, XW), XW / np.float32(4.0))
    k = float_kernel([("vector_fp_binary", FpBinaryOp.ADD_F, 1.0),
                      ("vector_fp_div_with_mode", BinaryArgMode.MODE10, Branched.imm(TagGuard.all(), -2.0))],
                     name="div_mode")
    np.testing.assert_array_equal(_both(k, XW), np.float32(-2.0) / (XW + np.float32(1.0)))
    assert FpDivBinaryOp.DIV_F is not None


# --- refusals -------------------------------------------------------------------------------

axes(A=4, E=32)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")


def _vrf_kernel(call):
    """x[A, E] tagged by SIGNS, w[E] stored in the VRF, then `call(stream, w_vrf)`."""

    def body(ctx, x, w):
        w = w.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("E")])
        w_vrf = ctx.sub.begin(w.view()).fetch(m("E / 8"), m("E % 8")).collect(m("E / 8"), m("E % 8")).to_vrf(m("E"))
        x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("A, E")])
        s = (ctx.main.begin(x.view()).fetch(m("A, E / 8"), m("E % 8")).collect(m("A, E / 8"), m("E % 8"))
             .vector_init().vector_intra_slice_tag(SIGNS))
        s = call(s, w_vrf)
        return s.vector_final().commit_trim(m("E % 8")).commit().to_hbm(ctx.tdma)

    body.__annotations__ = {"ctx": Context, "x": HbmTensor[i32, Chip, m("A, E")], "w": HbmTensor[i32, Chip, m("E")],
                            "return": HbmTensor[i32, Chip, m("A, E")]}
    return device(chip=1)(body)


@pytest.mark.parametrize("call", [
    lambda s, w: s.vector_logic(LogicBinaryOpI32.BIT_AND, Branched.imm(NEG, 1).rf(BIG, w)),
    lambda s, w: s.vector_fxp_with_mode(FxpBinaryOp.SUB_FXP, BinaryArgMode.MODE10, Branched.rf(BIG, w)),
    lambda s, w: s.vector_logic(LogicBinaryOpI32.BIT_AND, w),
])  # a plain VRF operand under a mode is read (tests/vrf/test_rf_modes.py)
def test_a_vrf_read_where_none_is_compiled_is_vrf_7(call):
    d = npu_opt.check(_vrf_kernel(call)).diagnostics
    assert d and d[0].code == "VRF-7", d[0].render() if d else "accepted"
    assert "lambda s, w: s.vector_" in open(__file__).read().splitlines()[d[0].line - 1]  # the user's call


def test_the_same_vrf_slot_on_fxp_in_the_default_mode_runs():
    """The control of the refusals above: Fxp reads the rf slot (x + w where x > 1000)."""
    k = _vrf_kernel(lambda s, w: s.vector_fxp(FxpBinaryOp.ADD_FXP, Branched.rf(BIG, w)))
    w = (np.arange(32) * 7 - 100).astype(np.int32)
    x = (XI % 3000).astype(np.int32) - 1000
    want = np.where((x >= 0) & (x > 1000), x + w[None, :], x)
    np.testing.assert_array_equal(npu_opt.run(k, x, w), want)


# --- FMA_F with a branched operand: a pair per slot ------------------------------------------

def _float_tagged(mode, steps, name):
    """x[A, E] on the 4-way float path, tagged by `mode` at the entry, then `steps`."""

    def body(ctx, x):
        x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("A, E")])
        s = (ctx.main.begin(x.view()).fetch(m("A, E / 4"), m("E % 4")).collect(m("A, E / 4"), m("E % 4 # 8"))
             .vector_init().vector_intra_slice_tag(mode).vector_narrow_trim(m("E % 4")))
        for method, *args in steps:
            s = getattr(s, method)(*(a.fn() if isinstance(a, Lazy) else a for a in args))
        y = s.vector_widen_pad(m("E % 4 # 8")).vector_final().commit_trim(m("E % 4")).commit()
        return y.to_hbm(ctx.tdma)

    body.__name__ = name
    body.__annotations__ = {"ctx": Context, "x": HbmTensor[f32, Chip, m("A, E")],
                            "return": HbmTensor[f32, Chip, m("A, E")]}
    return device(chip=1)(body)


F_SIGNS = TagMode.COMPARISON([Cmp.LESS(0.0), Cmp.GREATER(4.0), Cmp.FALSE, Cmp.FALSE])
NOT_NEG = TagGuard.not_matches([BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE, BitReq.IGNORE])


def test_fma_slots_pick_a_pair_per_element():
    """x < 0: x * -1 + 0.25; x > 4: x * 0.5 + 3; else x * x + 1 (the stash slot, s = x)."""
    from tests.vector_pair.test_stash_operands import _fma_exact

    layout = Branched.imm(NEG, (-1.0, 0.25)).imm(BIG, (0.5, 3.0)).rf(TagGuard.all(), (Stash, 1.0))
    k = _float_tagged(F_SIGNS, [("vector_stash",), ("vector_fp_ternary", FpTernaryOp.FMA_F, layout)], "fma_slots")
    a = np.where(XF < 0, np.float32(-1), np.where(XF > 4, np.float32(0.5), XF))
    c = np.where(XF < 0, np.float32(0.25), np.where(XF > 4, np.float32(3.0), np.float32(1.0)))
    np.testing.assert_array_equal(_both(k, XF), _fma_exact(XF, a, c))


def test_fma_slots_under_a_mode():
    """MODE120 is a * c + x: the negatives get 2 * 0.5 + x, the rest keep x (no slot admits them)."""
    from tests.vector_pair.test_stash_operands import _fma_exact

    k = _float_tagged(F_SIGNS, [("vector_fp_ternary_with_mode", FpTernaryOp.FMA_F, TernaryArgMode.MODE120,
                                 Branched.imm(NEG, (2.0, 0.5)))], "fma_mode_slots")
    want = np.where(XF < 0, _fma_exact(np.float32(2.0), np.float32(0.5), XF), XF)
    np.testing.assert_array_equal(_both(k, XF), want)


@pytest.mark.parametrize("steps, code", [
    ([("vector_stash",), ("vector_fp_ternary", FpTernaryOp.FMA_F, Branched.rf(TagGuard.group(GroupId.ONE),
                                                                             (Stash, 1.0)))], "VE-SLOT-6"),
    ([("vector_fp_ternary", FpTernaryOp.FMA_F, Branched.rf(NEG, (Stash, 1.0)))], "VE-STASH-1"),
    ([("vector_fp_ternary", FpTernaryOp.FMA_F, Branched.imm(NEG, 2.0))], "VE-CONST-3"),        # no c
    ([("vector_fp_binary", FpBinaryOp.ADD_F, Branched.imm(NEG, (2.0, 1.0)))], "VE-CONST-3"),  # a pair, binary op
    ([("vector_fp_ternary", FpTernaryOp.FMA_F, Lazy(lambda: Branched.imm(NEG, (2.0, "c"))))], "VE-CONST-3"),
])
def test_refused_fma_layouts(steps, code):
    d = npu_opt.check(_float_tagged(F_SIGNS, steps, "refused_fma")).diagnostics
    assert d and d[0].code == code, d[0].render() if d else "accepted"
    assert d[0].line


def test_an_fma_vrf_slot_is_vrf_7():
    """No FP_TERNARY register-file read is compiled: `(vrf, c)` in the rf slot is refused."""
    def call(s, w):
        s = s.vector_fxp_to_fp(0).vector_narrow_split(m("A, E / 8, E / 4 % 2"), m("E % 4"))
        return s.vector_fp_ternary(FpTernaryOp.FMA_F, Branched.rf(BIG, (w, 1.0)))

    d = npu_opt.check(_vrf_kernel(call)).diagnostics
    assert d and d[0].code == "VRF-7", d[0].render() if d else "accepted"
