"""Comparison tags and branched operands: cpu against numpy oracles, VISA round trip and
cpu == visa bit for bit, and the refusals at the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import (BitReq, Branched, ClipBinaryOpF32, ClipBinaryOpI32, Cmp, FxpBinaryOp, GroupId, TagGuard,
                     TagMode, axes, f32, i32)
from tu_ops import rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

from tests.vector_pair.kernels import Lazy, pair_kernel, tagged_kernel

axes(I=2, A=4, E=32, J=2)
RNG = np.random.default_rng(17)
XI = RNG.integers(-300, 300, (4, 32)).astype(np.int32)
XF = (RNG.standard_normal((4, 32)) * 2).astype(np.float32)
XF[0, :4] = [np.nan, -0.0, 0.0, np.inf]
I_, O_, Z_ = BitReq.IGNORE, BitReq.ONE, BitReq.ZERO
B0 = TagGuard.matches([O_, I_, I_, I_])     # comparison 0 held
B1 = TagGuard.matches([I_, O_, I_, I_])     # comparison 1 held
NOT0 = TagGuard.not_matches([O_, I_, I_, I_])
RANGE = TagMode.COMPARISON([Cmp.LESS(-100), Cmp.GREATER(100), Cmp.FALSE, Cmp.TRUE])


def _roundtrip(kernel, x):
    text = npu_opt.compile(kernel).text
    assert print_artifact(parse_visa(text)) == text
    verify_text(text, rngd())
    assert " = vector_branch " in text and "dest=(VECTOR_BRANCH, " in text
    cpu = npu_opt.run(kernel, x)
    np.testing.assert_array_equal(cpu.view(np.uint32), execute(parse_visa(text), [x]).view(np.uint32))
    return cpu


def test_clamp_outside_a_range_by_two_slots():
    k = tagged_kernel(i32, RANGE, [("vector_clip", ClipBinaryOpI32.MAX, Branched.imm(B0, -100)),
                                   ("vector_clip", ClipBinaryOpI32.MIN, Branched.imm(B1, 100))], name="clamp")
    np.testing.assert_array_equal(_roundtrip(k, XI), np.clip(XI, -100, 100))


def test_first_matching_slot_wins_and_the_rest_keep_their_value():
    k = tagged_kernel(i32, RANGE, [("vector_fxp", FxpBinaryOp.MUL_INT, Branched.imm(B0, 3).imm(B1, -1))], name="mul")
    want = np.where(XI < -100, XI * 3, np.where(XI > 100, -XI, XI))
    np.testing.assert_array_equal(_roundtrip(k, XI), want)


def test_else_slot_after_guarded_ones():
    """bit 3 is TRUE for every element: the TagGuard.all() slot takes what bit 0 left."""
    k = tagged_kernel(i32, RANGE, [("vector_fxp", FxpBinaryOp.ADD_FXP, Branched.imm(B0, 1000).imm(TagGuard.all(), 7))],
                      name="else")
    np.testing.assert_array_equal(_roundtrip(k, XI), np.where(XI < -100, XI + 1000, XI + 7))


def test_f32_comparisons_and_not_matches():
    """NaN compares false, -0.0 is not below 0.0; not_matches takes the complement."""
    mode = TagMode.COMPARISON([Cmp.LESS(0.0), Cmp.EQUAL(0.0), Cmp.FALSE, Cmp.FALSE])
    k = tagged_kernel(f32, mode, [("vector_clip", ClipBinaryOpF32.ADD, Branched.imm(NOT0, 10.0))], name="f32_not")
    with np.errstate(invalid="ignore"):
        want = np.where(XF < 0, XF, XF + np.float32(10.0))
    np.testing.assert_array_equal(_roundtrip(k, XF).view(np.uint32), want.view(np.uint32))


def test_unsigned_comparison_reads_the_bit_pattern():
    mode = TagMode.COMPARISON([Cmp.GREATER_UNSIGNED(1000), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE])
    k = tagged_kernel(i32, mode, [("vector_clip", ClipBinaryOpI32.MIN, Branched.imm(B0, 0))], name="unsigned")
    want = np.where(XI.view(np.uint32) > 1000, np.minimum(XI, 0), XI)   # every negative and everything above 1000
    np.testing.assert_array_equal(_roundtrip(k, XI), want)


def test_zero_tag_with_a_group_guard():
    """TagMode.ZERO gives id 0: group 0 admits every element, group 1 none."""
    k = tagged_kernel(i32, TagMode.ZERO, [("vector_fxp", FxpBinaryOp.ADD_FXP, Branched.imm(TagGuard.group(GroupId.ONE), 5)
                                           .imm(TagGuard.group(GroupId.ZERO), 9))], name="zero_tag")
    np.testing.assert_array_equal(_roundtrip(k, XI), XI + 9)


def test_matches_all_ignore_is_the_unconditional_guard():
    assert TagGuard.matches([I_, I_, I_, I_]) == TagGuard.all()
    assert TagGuard.not_matches([I_, I_, I_, O_]) == TagGuard.group(GroupId.ZERO)


def _first(kernel):
    report = npu_opt.check(kernel)
    assert report.diagnostics, "the kernel was accepted"
    return report.diagnostics[0]


def _lazy(*slots):
    def build():
        layout = Branched
        for guard, value in slots:
            layout = layout.imm(guard(), value)
        return layout
    return Lazy(build)


@pytest.mark.parametrize("mode, steps, code", [
    (TagMode.AXIS_TOGGLE(axis="A"), [], "VE-TAG-1"),
    (TagMode.COMPARISON([Cmp.LESS(0.5), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE]), [], "VE-TAG-2"),
    (RANGE, [("vector_clip", ClipBinaryOpI32.MAX, _lazy((lambda: TagGuard.not_matches([I_] * 4), 0)))], "VE-SLOT-2"),
    (RANGE, [("vector_clip", ClipBinaryOpI32.MAX, _lazy(*[(lambda: B0, k) for k in range(4)]))], "VE-SLOT-4"),
    (RANGE, [("vector_clip", ClipBinaryOpI32.MAX, _lazy((TagGuard.all, 1), (lambda: B0, 2)))], "VE-SLOT-5"),
    (RANGE, [("vector_clip", ClipBinaryOpI32.MAX, Branched.imm(B0, 1.5))], "VE-CONST-3"),
    (RANGE, [("vector_fxp", FxpBinaryOp.LEFT_SHIFT, Branched.imm(B0, 33))], "VE-SHIFT-1"),
    (RANGE, [("vector_fxp", FxpBinaryOp.MUL_INT, Branched.imm(B0, 2)),
             ("vector_fxp", FxpBinaryOp.MUL_FXP, Branched.imm(B1, 2))], "VE-ALU-1"),
    (RANGE, [("vector_clip", ClipBinaryOpF32.MAX, Branched.imm(B0, 0))], "VE-DTYPE-1"),
    (RANGE, [("vector_clip", ClipBinaryOpI32.MAX, Lazy(lambda: Branched.imm("bit 0", 1)))], "VE-ENUM-3"),
])
def test_refused_tagged_chain(mode, steps, code):
    d = _first(tagged_kernel(i32, mode, steps, name="refused"))
    assert d.code == code, d.render()
    assert d.file.endswith(("kernels.py", "test_branches.py"))  # the op's call, or where the layout is built


def test_pair_ops_take_no_branched_operand():
    d = _first(pair_kernel(i32, [("vector_fxp", FxpBinaryOp.MUL_INT, Branched.imm(B0, 2), None),
                                 ("vector_clip_zip", ClipBinaryOpI32.ADD_FXP)]))
    assert d.code == "VE-TAG-3", d.render()


def test_a_zipped_stream_has_no_tags():
    d = _first(pair_kernel(i32, [("vector_clip_zip", ClipBinaryOpI32.ADD_FXP),
                                 ("vector_clip", ClipBinaryOpI32.MAX, Branched.imm(B0, 2))]))
    assert d.code == "VE-TAG-3", d.render()
