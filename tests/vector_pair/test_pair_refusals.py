"""Pair-mode kernels the compiler refuses, each at the user's line with its rule ID."""

from __future__ import annotations

import pytest

import npu_opt
from npu_opt import (BinaryArgMode, ClipBinaryOpF32, ClipBinaryOpI32, FpBinaryOp, FpUnaryOp, FxpBinaryOp, f32,
                     axes, i32, m)

from tests.vector_pair.kernels import float_pair_kernel, pair_kernel

axes(I=2, A=4, E=32, J=2)  # the axes of tests.vector_pair.kernels
ADD = ("vector_clip_zip", ClipBinaryOpI32.ADD_FXP)


def _first(kernel):
    report = npu_opt.check(kernel)
    assert report.diagnostics, "the kernel was accepted"
    return report.diagnostics[0]


@pytest.mark.parametrize("unzip, code", [
    ((m("A"), m("E / 8, I, 1 # 4"), m("E / 8, I")), "PAIR-UNZIP-1"),     # A has 4 positions
    ((m("A, I"), m("E / 8, 1 # 2"), m("E / 8")), "PAIR-UNZIP-1"),         # not one axis
    ((m("J"), m("A, E / 8, I"), m("A, E / 8, I")), "PAIR-UNZIP-2"),       # J is not in the time
    ((m("I"), m("A, E / 8, 1 # 2"), m("E / 8, A")), "PAIR-UNZIP-3"),      # reordered
    ((m("I"), m("A, E / 8, 1 # 2"), m("A, E / 8, I")), "PAIR-UNZIP-3"),   # still holds I
    ((m("I"), m("A, E / 8"), m("A, E / 8")), "PAIR-UNZIP-3"),             # tile time too short
    (("I", m("A, E / 8, 1 # 2"), m("A, E / 8")), "TYPE-6"),
])
def test_refused_unzip(unzip, code):
    d = _first(pair_kernel(i32, [ADD], unzip=unzip))
    assert d.code == code, d.render()
    assert d.file.endswith("kernels.py")


@pytest.mark.parametrize("steps, code", [
    ([("vector_fxp", FxpBinaryOp.ADD_FXP, 1, None), ("vector_fxp_zip", FxpBinaryOp.SUB_FXP)], "VE-ALU-1"),
    ([("vector_fxp", FxpBinaryOp.MUL_INT, 2, None), ("vector_fxp", FxpBinaryOp.MUL_INT, None, 3), ADD], "VE-ALU-1"),
    ([("vector_clip_zip", ClipBinaryOpF32.MAX)], "VE-DTYPE-1"),
    ([("vector_fxp", FxpBinaryOp.LEFT_SHIFT, 40, 1), ADD], "VE-SHIFT-1"),
    ([("vector_fxp", FxpBinaryOp.ADD_FXP, 2**31, None), ADD], "VE-CONST-1"),
    ([("vector_fxp", FxpBinaryOp.ADD_FXP, None, None), ADD], "TYPE-6"),     # both groups skipped
    ([("vector_fxp", FxpBinaryOp.ADD_FXP, "1", 2), ADD], "TYPE-6"),
    ([("vector_fxp", FxpBinaryOp.ADD_FXP, 1), ADD], "TYPE-6"),              # one operand per group
    ([("vector_fxp_zip_with_mode", FxpBinaryOp.ADD_FXP, ClipBinaryOpI32.MAX)], "VE-ENUM-4"),
    ([("vector_narrow_trim", m("E % 4")), ADD], "VE-TRIM-2"),               # E % 8 is a full flit: use narrow_split
    ([("vector_final",)], "TYPE-1"),                                        # the groups were never merged
    ([("vector_fxp_to_fp", 31), ("vector_fxp", FxpBinaryOp.ADD_FXP, 1, 1)], "TYPE-1"),   # fxp on f32
    ([("vector_clip", ClipBinaryOpI32.MAX, 0, 0), ("vector_fxp_zip", FxpBinaryOp.ADD_FXP)], "TYPE-1"),  # order
])
def test_refused_pair_chain(steps, code):
    d = _first(pair_kernel(i32, steps + [] if steps[-1][0] != "vector_final" else steps[:-1], name="refused"))
    assert d.code == code, d.render()


def test_unmerged_pair_cannot_leave_the_engine():
    d = _first(pair_kernel(i32, []))
    assert d.code == "TYPE-1" and "vector_clip_zip" in d.render()


@pytest.mark.parametrize("steps, code", [
    ([("vector_fp_unary", FpUnaryOp.EXP, False, False), ("vector_fp_zip", FpBinaryOp.ADD_F)], "TYPE-6"),
    ([("vector_fp_unary", FpUnaryOp.EXP, True, False), ("vector_fp_unary", FpUnaryOp.NEG_EXP, False, True),
      ("vector_fp_zip", FpBinaryOp.ADD_F)], "VE-ALU-1"),                    # FpExp for both groups
    ([("vector_fp_zip_with_mode", FpBinaryOp.ADD_F, "MODE10")], "VE-ENUM-4"),
])
def test_refused_float_pair_chain(steps, code):
    d = _first(float_pair_kernel(steps, name="refused_float"))
    assert d.code == code, d.render()


def test_narrow_split_must_regroup_the_flit():
    from tests.vector_pair import kernels as K

    def body(ctx, x):
        s = K._unzipped(ctx, x, f32).vector_narrow_split(m("A, E / 8, E % 2"), m("E / 2 % 4"))
        y = s.vector_fp_zip(FpBinaryOp.ADD_F).vector_widen_pad(m("E / 2 % 4 # 8"))
        return y.vector_final().commit_trim(m("E / 2 % 4")).commit().to_hbm(ctx.tdma)

    d = _first(K._annotate(body, "bad_split", f32, f32))
    assert d.code == "PAIR-SPLIT-1", d.render()


def test_a_zip_mode_is_an_enum_value():
    d = _first(pair_kernel(i32, [("vector_clip_zip_with_mode", ClipBinaryOpI32.ADD_FXP, BinaryArgMode.MODE01),
                                 ("vector_clip_zip", ClipBinaryOpI32.MAX)]))
    assert d.code == "TYPE-1"  # a merged stream has no zip


def test_two_vrf_tensors_are_refused_in_one_pair_op():
    """PAIR-VRF-1 on the traced op (tests/vector_pair/test_pair_vrf.py reaches it from a kernel)."""
    from ir.vector import pair_ops as pops
    from ir.ops import Value
    from ir.vector.operands import VrfOperand

    t = npu_opt.check(pair_kernel(i32, [ADD])).diagnostics
    assert t == ()
    src = Value(1, None)
    a, b = VrfOperand("vrf_a", "i32"), VrfOperand("vrf_b", "i32")
    op = pops.PairFxp(input=src, op=FxpBinaryOp.ADD_FXP, c0=a, c1=b, result=Value(2, None))
    assert op.check().code == "PAIR-VRF-1"
    same = pops.PairFxp(input=src, op=FxpBinaryOp.ADD_FXP, c0=a, c1=a, result=Value(2, None))
    assert same._one_vrf() is None


def _interleaved(y_dtype=i32, axis="I", rhs_view=True):
    from npu_opt import Context, DmTensor, HbmTensor, device

    Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")

    def body(ctx, x, y):
        x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("A, E")])
        y = y.to_dm(ctx.tdma, DmTensor[y_dtype, Chip, Cluster, Slice, m("A, E")])
        s = (ctx.main.begin_interleaved(x.view(), y.view() if rhs_view else y, m(axis))
             .fetch(m("A, E / 8, I"), m("E % 8")).collect(m("A, E / 8, I"), m("E % 8")).vector_init()
             .vector_intra_slice_unzip(m("I"), m("A, E / 8, 1 # 2"), m("A, E / 8"))
             .vector_clip_zip(ClipBinaryOpI32.ADD_FXP))
        return s.vector_final().commit_trim(m("E % 8")).commit().to_hbm(ctx.tdma)

    body.__annotations__ = {"ctx": Context, "x": HbmTensor[i32, Chip, m("A, E")],
                            "y": HbmTensor[y_dtype, Chip, m("A, E")], "return": HbmTensor[i32, Chip, m("A, E")]}
    return device(chip=1)(body)


@pytest.mark.parametrize("kwargs, code", [
    ({"y_dtype": f32}, "INTERLEAVE-1"),
    ({"axis": "A"}, "INTERLEAVE-2"),        # an axis of the element
    ({"axis": "J, I"}, "INTERLEAVE-2"),     # not one axis
    ({"rhs_view": False}, "TYPE-6"),        # a DmTensor, not its view
])
def test_refused_begin_interleaved(kwargs, code):
    d = _first(_interleaved(**kwargs))
    assert d.code == code, d.render()
    assert d.file.endswith("test_pair_refusals.py")


@pytest.mark.parametrize("unzip", [
    (m("I"), m("E / 8")),                              # two-mapping form, A dropped
    (m("I"), m("A, E / 8, 1 # 2"), m("E / 8, A")),     # three-mapping form, reordered
])
def test_unzip_help_names_the_two_mapping_call_that_fits(unzip):
    d = _first(pair_kernel(i32, [ADD], unzip=unzip))
    assert d.code == "PAIR-UNZIP-3", d.render()
    assert 'vector_intra_slice_unzip(m("I"), m("A, E / 8"))' in d.help, d.help
    assert "tile_time" not in d.help
