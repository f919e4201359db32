"""VRF operands of the paired ops: a group reads a VRF tensor through the pass's one
register-file port (`vector_pair_rf`), cpu against a numpy oracle and the interpreter
agreeing with cpu bit for bit; a second VRF tensor in one op is PAIR-VRF-1 at the user's line."""

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

axes(I=2, A=4, E=32)  # noqa: F405
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405


def _kernel(dtype, pair_ops, zip_op, name, second=False):
    """x[I, A, E] unzipped along I; w[E] (and v[E]) in the VRF; `pair_ops(s, w, v)` on the pair,
    then `zip_op(s)` merges it; the [A, E] result is committed."""

    def body(ctx, x, w, v):
        def vrf(t):
            t = t.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("E")])  # noqa: F405
            return (ctx.sub.begin(t.view()).fetch(m("E / 8"), m("E % 8"))  # noqa: F405
                    .collect(m("E / 8"), m("E % 8")).to_vrf(m("E")))  # noqa: F405

        w_vrf, v_vrf = vrf(w), vrf(v) if second else None
        x = x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("I, A, E")])  # noqa: F405
        s = (ctx.main.begin(x.view()).fetch(m("A, E / 8, I"), m("E % 8"))  # noqa: F405
             .collect(m("A, E / 8, I"), m("E % 8")).vector_init()  # noqa: F405
             .vector_intra_slice_unzip(m("I"), m("A, E / 8, 1 # 2"), m("A, E / 8")))  # noqa: F405
        s = zip_op(pair_ops(s, w_vrf, v_vrf))
        return s.vector_final().commit_trim(m("E % 8")).commit().to_hbm(ctx.tdma)  # noqa: F405

    body.__name__ = name
    body.__annotations__ = {"ctx": Context, "x": HbmTensor[dtype, Chip, m("I, A, E")],  # noqa: F405
                            "w": HbmTensor[dtype, Chip, m("E")], "v": HbmTensor[dtype, Chip, m("E")],  # noqa: F405
                            "return": HbmTensor[dtype, Chip, m("A, E")]}  # noqa: F405
    return device(chip=1)(body)  # noqa: F405


RNG = np.random.default_rng(13)
X = RNG.integers(-10**6, 10**6, (2, 4, 32)).astype(np.int32)
W = RNG.integers(-10**6, 10**6, 32).astype(np.int32)
V = RNG.integers(-10**6, 10**6, 32).astype(np.int32)

# group 0: min(x0 - w, 9); group 1: min(x1 - 5, w); then their wrapping i32 sum
FXP_CLIP = _kernel(i32, lambda s, w, v: s.vector_fxp(FxpBinaryOp.SUB_FXP, w, 5)  # noqa: F405
                   .vector_clip(ClipBinaryOpI32.MIN, 9, w),  # noqa: F405
                   lambda s: s.vector_clip_zip(ClipBinaryOpI32.ADD_FXP), "pair_vrf_i32")  # noqa: F405


def _wrap(a):
    return ((a + 2**31) % 2**32 - 2**31).astype(np.int32)


def _fxp_clip_oracle(x, w):
    x64, w64 = x.astype(np.int64), w.astype(np.int64)[None, :]
    g0 = np.minimum(_wrap(x64[0] - w64).astype(np.int64), 9)
    g1 = np.minimum(_wrap(x64[1] - 5).astype(np.int64), w64)
    return _wrap(g0 + g1)


def _check(kernel, args, want):
    np.testing.assert_array_equal(npu_opt.run(kernel, *args), want)
    text = npu_opt.compile(kernel).text
    assert print_artifact(parse_visa(text)) == text
    verify_text(text, rngd())
    np.testing.assert_array_equal(execute(parse_visa(text), list(args)), want)
    return text


def test_groups_read_one_vrf_tensor():
    text = _check(FXP_CLIP, (X, W, V), _fxp_clip_oracle(X, W))
    (rec,) = [t for t in text.splitlines() if " = vector_pair_rf " in t]
    assert "{unit=FXP, op=SUB_FXP, side=BOTH, arg0=0, arg1=5, rf=1}" in rec, rec
    assert "{unit=CLIP_I32, op=MIN, side=BOTH, arg0=9, arg1=0, rf=2}" in rec, rec
    assert "rf=[%" in rec and "rf_read=[" in rec


XF = RNG.standard_normal((2, 4, 32)).astype(np.float32)
WF = RNG.standard_normal(32).astype(np.float32)


def test_float_groups_read_the_vrf_on_the_4_way_path():
    """group 0 times w, group 1 times 3 (MUL0) and then w (MUL1), f32 after a narrow split; then their sum."""

    def pair(s, w, v):
        return (s.vector_narrow_split(m("A, E / 8, E / 4 % 2"), m("E % 4"))  # noqa: F405
                .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), w, 3.0)  # noqa: F405
                .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL1), None, w))  # noqa: F405

    def merge(s):
        return (s.vector_fp_zip(FpBinaryOp.ADD_F).vector_widen_concat(m("A, E / 8"), m("E % 8")))  # noqa: F405

    k = _kernel(f32, pair, merge, "pair_vrf_f32")  # noqa: F405
    want = (XF[0] * WF[None, :]) + ((XF[1] * np.float32(3)) * WF[None, :])  # float32 throughout, one rounding per op
    _check(k, (XF, WF, WF), want.astype(np.float32))


def test_two_vrf_tensors_in_one_op_are_pair_vrf_1():
    k = _kernel(i32, lambda s, w, v: s.vector_fxp(FxpBinaryOp.ADD_FXP, w, v),  # noqa: F405
                lambda s: s.vector_fxp_zip(FxpBinaryOp.ADD_FXP), "pair_two_vrf", second=True)  # noqa: F405
    d = npu_opt.check(k).diagnostics[0]
    assert d.code == "PAIR-VRF-1", d.render()
    assert d.file.endswith("test_pair_vrf.py") and d.line == 107


@pytest.mark.parametrize("pair_ops, code", [
    (lambda s, w, v: s.vector_logic(LogicBinaryOpI32.BIT_AND, w, None), "VRF-7"),  # noqa: F405  no rf input
    (lambda s, w, v: s.vector_fxp_with_mode(FxpBinaryOp.SUB_FXP, BinaryArgMode.MODE10, w, 1), "VRF-7"),  # noqa: F405
    (lambda s, w, v: s.vector_fxp(FxpBinaryOp.ADD_FXP, "w", None), "TYPE-6"),  # noqa: F405
])
def test_refused_vrf_group_operands(pair_ops, code):
    k = _kernel(i32, pair_ops, lambda s: s.vector_fxp_zip(FxpBinaryOp.ADD_FXP), "pair_vrf_refused")  # noqa: F405
    d = npu_opt.check(k).diagnostics[0]
    assert d.code == code, d.render()
    assert d.file.endswith("test_pair_vrf.py")


@pytest.mark.parametrize("old, new", [
    ("rf_read=[{time=[4:0, 4:8], packet=[8:1]}]", "rf_read=[{time=[4:0, 4:8], packet=[8:9]}]"),  # past the tensor
    ("arg1=5, rf=1}", "arg1=5, rf=3}"),                                                      # group 1's arg 5: no tensor 5
    ("arg0=9, arg1=0, rf=2}", "arg0=9, arg1=1, rf=2}"),                                      # no tensor 1
    ("rf=[%5] rf_read=[{time=[4:0, 4:8], packet=[8:1]}]", "rf=[] rf_read=[]"),               # no tensor at all
])
def test_a_damaged_pair_rf_record_is_refused(old, new):
    text = npu_opt.compile(FXP_CLIP).text
    assert old in text
    with pytest.raises(npu_opt.NpuOptError) as info:
        verify_text(text.replace(old, new), rngd())
    assert info.value.code == "VPAIR-3"


def test_a_vrf_step_in_a_plain_pair_record_is_refused():
    """Without `rf`, the record cannot name the tensor a group reads."""
    text = npu_opt.compile(FXP_CLIP).text
    rec = next(t for t in text.splitlines() if " = vector_pair_rf " in t)
    plain = rec.replace("vector_pair_rf", "vector_pair").replace(" rf=[%5]", "").replace(
        " rf_read=[{time=[4:0, 4:8], packet=[8:1]}]", "")
    with pytest.raises(npu_opt.NpuOptError) as info:
        verify_text(text.replace(rec, plain), rngd())
    assert info.value.code == "VPAIR-3"
