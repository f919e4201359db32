"""A tagged pass that reads the VRF (`vector_branch_rf`) and carries a `_with_mode` op: cpu
against a numpy oracle, the artifact parsing back to itself and verifying, the interpreter
agreeing with cpu, and a damaged record refused."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *  # noqa: F403
from tu_ops import rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

axes(A=8, E=64)  # noqa: F405
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405
NEG = TagGuard.matches([BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE, BitReq.IGNORE])  # noqa: F405


@device(chip=1)  # noqa: F405
def tagged_vrf(ctx: Context, x: HbmTensor[i32, Chip, m("A, E")],  # noqa: F405
               b: HbmTensor[i32, Chip, m("E")]) -> HbmTensor[i32, Chip, m("A, E")]:  # noqa: F405
    """y = min(7 - (x < 0 ? 3 x : x), b[e])."""
    b = b.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("E")])  # noqa: F405
    b_vrf = ctx.sub.begin(b.view()).fetch(m("E / 8"), m("E % 8")).collect(m("E / 8"), m("E % 8")).to_vrf(m("E"))  # noqa: F405
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
    y = (ctx.main.begin(x.view()).fetch(m("A, E / 8"), m("E % 8")).collect(m("A, E / 8"), m("E % 8"))  # noqa: F405
         .vector_init()
         .vector_intra_slice_tag(TagMode.COMPARISON([Cmp.LESS(0), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE]))  # noqa: F405
         .vector_fxp(FxpBinaryOp.MUL_INT, Branched.imm(NEG, 3))  # noqa: F405
         .vector_fxp_with_mode(FxpBinaryOp.SUB_FXP, BinaryArgMode.MODE10, 7)  # noqa: F405
         .vector_clip(ClipBinaryOpI32.MIN, b_vrf)  # noqa: F405
         .vector_final().commit_trim(m("E % 8")).commit())  # noqa: F405
    return y.to_hbm(ctx.tdma)


RNG = np.random.default_rng(77)
X = RNG.integers(-10**6, 10**6, (8, 64)).astype(np.int32)
B = RNG.integers(-10**6, 10**6, 64).astype(np.int32)


def test_tagged_pass_reads_the_vrf():
    x64 = X.astype(np.int64)
    want = np.minimum(7 - np.where(x64 < 0, 3 * x64, x64), B.astype(np.int64)[None, :]).astype(np.int32)
    np.testing.assert_array_equal(npu_opt.run(tagged_vrf, X, B), want)
    text = npu_opt.compile(tagged_vrf).text
    assert print_artifact(parse_visa(text)) == text
    verify_text(text, rngd())
    (rec,) = [t for t in text.splitlines() if " = vector_branch_rf " in t]
    assert "{unit=FXP, op=SUB_FXP, arg=7, slots=[], stash=0, mode=MODE10}" in rec
    assert "{unit=CLIP_I32_RF, op=MIN, arg=0, slots=[], stash=0}" in rec and "rf=[%" in rec
    np.testing.assert_array_equal(execute(parse_visa(text), [X, B]), want)


@pytest.mark.parametrize("old, new", [
    ("rf_read=[{time=[8:0, 8:8], packet=[8:1]}]", "rf_read=[{time=[8:0, 8:8], packet=[8:9]}]"),  # past the tensor
    ("{unit=CLIP_I32_RF, op=MIN, arg=0,", "{unit=CLIP_I32_RF, op=MIN, arg=1,"),                     # no tensor 1
])
def test_a_damaged_branch_rf_record_is_refused(old, new):
    text = npu_opt.compile(tagged_vrf).text
    assert old in text
    with pytest.raises(npu_opt.NpuOptError) as info:
        verify_text(text.replace(old, new), rngd())
    assert info.value.code == "VBR-1"


POS = TagGuard.matches([BitReq.IGNORE, BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE])  # noqa: F405  (bit 1)


def _guarded_rf_kernel(layout, name):
    """y = op(x, slot value) per element: bit 0 is x < 0, bit 1 is x > 1000."""

    def body(ctx, x, b):
        b = b.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("E")])  # noqa: F405
        b_vrf = (ctx.sub.begin(b.view()).fetch(m("E / 8"), m("E % 8")).collect(m("E / 8"), m("E % 8"))  # noqa: F405
                 .to_vrf(m("E")))  # noqa: F405
        x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
        y = (ctx.main.begin(x.view()).fetch(m("A, E / 8"), m("E % 8")).collect(m("A, E / 8"), m("E % 8"))  # noqa: F405
             .vector_init()
             .vector_intra_slice_tag(TagMode.COMPARISON([Cmp.LESS(0), Cmp.GREATER(1000), Cmp.FALSE,  # noqa: F405
                                                         Cmp.FALSE]))  # noqa: F405
             .vector_fxp(FxpBinaryOp.ADD_FXP, layout(b_vrf))  # noqa: F405
             .vector_final().commit_trim(m("E % 8")).commit())  # noqa: F405
        return y.to_hbm(ctx.tdma)

    body.__name__ = name
    body.__annotations__ = {"ctx": Context, "x": HbmTensor[i32, Chip, m("A, E")],  # noqa: F405
                            "b": HbmTensor[i32, Chip, m("E")], "return": HbmTensor[i32, Chip, m("A, E")]}  # noqa: F405
    return device(chip=1)(body)  # noqa: F405


def test_branched_rf_slot_reads_the_vrf():
    """Negative elements add 5, elements above 1000 add their column's b (the rf slot), the rest stay."""
    k = _guarded_rf_kernel(lambda v: Branched.imm(NEG, 5).rf(POS, v), "guarded_rf")  # noqa: F405
    x64, b64 = X.astype(np.int64), B.astype(np.int64)[None, :]
    want = np.where(x64 < 0, x64 + 5, np.where(x64 > 1000, x64 + b64, x64)).astype(np.int32)
    np.testing.assert_array_equal(npu_opt.run(k, X, B), want)
    text = npu_opt.compile(k).text
    assert print_artifact(parse_visa(text)) == text
    verify_text(text, rngd())
    (rec,) = [t for t in text.splitlines() if " = vector_branch_rf " in t]
    assert "slots=[{mask=1, want=1, neg=0, value=5}, {mask=2, want=2, neg=0, value=0, port=1}]" in rec
    np.testing.assert_array_equal(execute(parse_visa(text), [X, B]), want)
    damaged = {"value=0, port=1}": ("value=3, port=1}", "VBR-1"),              # no VRF tensor 3 (VEOP-5)
               "{mask=1, want=1, neg=0, value=5}, {mask=2, want=2, neg=0, value=0, port=1}":
               ("{mask=2, want=2, neg=0, value=0, port=1}, {mask=1, want=1, neg=0, value=5}", "VBR-3")}  # not last
    for old, (new, code) in damaged.items():
        with pytest.raises(npu_opt.NpuOptError) as info:
            verify_text(text.replace(old, new), rngd())
        assert info.value.code == code


def test_branched_rf_alone_opens_the_layout():
    k = _guarded_rf_kernel(lambda v: Branched.rf(POS, v), "rf_only")  # noqa: F405
    x64, b64 = X.astype(np.int64), B.astype(np.int64)[None, :]
    want = np.where(x64 > 1000, x64 + b64, x64).astype(np.int32)
    np.testing.assert_array_equal(npu_opt.run(k, X, B), want)
    np.testing.assert_array_equal(execute(parse_visa(npu_opt.compile(k).text), [X, B]), want)


@pytest.mark.parametrize("layout, code", [
    (lambda v: Branched.rf(POS, v).imm(NEG, 1), "VE-SLOT-3"),     # noqa: F405  an immediate after the rf slot
    (lambda v: Branched.rf(POS, v).rf(NEG, v), "VE-SLOT-3"),      # noqa: F405  the rf slot twice
    (lambda v: Branched.imm(NEG, 1).rf(POS, 7), "VE-CONST-3"),      # noqa: F405  a constant on the rf slot
    (lambda v: Branched.imm(TagGuard.all(), 1).rf(POS, v), "VE-SLOT-5"),  # noqa: F405  after an unconditional slot
])
def test_refused_rf_slot(layout, code):
    d = npu_opt.check(_guarded_rf_kernel(layout, "refused_rf")).diagnostics[0]
    assert d.code == code, d.render()
    assert d.file.endswith("test_branch_rf.py")
