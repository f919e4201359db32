"""The inter-slice reducer on cpu and visa against numpy oracles: every op, exact for i32,
the f32 forms folded in the reference's order (slice-major, from the identity), the
InterFirst and IntraFirst orders, a broadcast and a promotion."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import InterSliceReduceOpF32 as F, InterSliceReduceOpI32 as I, f32, i32
from ir.dtypes import DType
from tu_ops.vector_inter import InterReduceName
from visa.interp import execute
from visa.parser import parse_visa

from tests.inter import kernels as K

RNG = np.random.default_rng(1207)


def _both(kernel, *arrays):
    cpu = npu_opt.run(kernel, *arrays)
    visa = execute(parse_visa(npu_opt.compile(kernel).text), list(arrays))
    np.testing.assert_array_equal(np.asarray(cpu).view(np.uint32), np.asarray(visa).view(np.uint32))
    return cpu


def _wrap(x):
    return ((x + 2**31) % 2**32 - 2**31).astype(np.int32)


def _i32_oracle(name, x):  # x: (A / 8, R, 8) int32; reduce R
    x64 = x.astype(np.int64)
    if name == "ADD":
        return _wrap(x64.sum(1))
    if name == "ADD_SAT":  # saturate after each add, in order
        acc = np.zeros(x64[:, 0].shape, np.int64)
        for r in range(x.shape[1]):
            acc = np.clip(acc + x64[:, r], -2**31, 2**31 - 1)
        return acc.astype(np.int32)
    return (x64.max(1) if name == "MAX" else x64.min(1)).astype(np.int32)


def _f32_oracle(name, x):  # left fold from the identity, in R order, rounding to f32 each step
    ident = {"ADD": 0.0, "MUL": 1.0, "MAX": -np.inf, "MIN": np.inf}[name]
    acc = np.full(x[:, 0].shape, ident, np.float32)
    for r in range(x.shape[1]):
        v = x[:, r]
        if name == "ADD":
            acc = (acc.astype(np.float64) + v).astype(np.float32)
        elif name == "MUL":
            acc = (acc.astype(np.float64) * v).astype(np.float32)
        else:
            acc = np.fmax(acc, v) if name == "MAX" else np.fmin(acc, v)
    return acc


@pytest.mark.parametrize("op", list(I), ids=lambda o: o.name)
def test_i32_ops_exact(op):
    x = RNG.integers(-2**31, 2**31, (64, 4, 8), dtype=np.int64).astype(np.int32)
    x[0] = 2**31 - 1  # saturating and wrapping adds differ here
    y = _both(K.inter_first(i32, op), x)
    np.testing.assert_array_equal(y.reshape(64, 8), _i32_oracle(op.name, x))


@pytest.mark.parametrize("op", list(F), ids=lambda o: o.name)
def test_f32_ops_in_the_reference_order(op):
    x = (RNG.standard_normal((64, 4, 8)) * 1e4).astype(np.float32)
    x[1, :, 0] = [1e8, 1.0, -1e8, 1.0]  # order-sensitive sum
    x[2, 1, :] = np.nan  # max / min ignore a NaN
    y = _both(K.inter_first(f32, op), x)
    np.testing.assert_array_equal(y.reshape(64, 8).view(np.uint32), _f32_oracle(op.name, x).view(np.uint32))


def test_inter_first_then_the_intra_chain():
    x = RNG.integers(-2**31, 2**31, (64, 4, 8), dtype=np.int64).astype(np.int32)
    x[3, 2] = 2**31 - 50
    y = _both(K.inter_then_chain, x)
    want = np.clip(x.astype(np.int64).max(1) + 100, -2**31, 2**31 - 1).astype(np.int32)
    np.testing.assert_array_equal(y.reshape(64, 8), want)


def test_intra_chain_then_inter():
    x = RNG.standard_normal((64, 4, 8)).astype(np.float32)
    y = _both(K.chain_then_inter, x)
    np.testing.assert_array_equal(y.reshape(64, 8).view(np.uint32),
                                  _f32_oracle("ADD", np.maximum(x, np.float32(0))).view(np.uint32))


def test_broadcast_into_a_fresh_axis():
    k = K.inter_first(i32, I.ADD, out_slice="A / 8, X", out_hbm="A, X")
    x = RNG.integers(-1000, 1000, (64, 4, 8)).astype(np.int32)
    y = _both(k, x).reshape(64, 8, 4)
    np.testing.assert_array_equal(y, np.repeat(x.sum(1)[:, :, None], 4, axis=2))


def test_promotion_from_time():
    k = K.inter_first(i32, I.ADD, hbm="A / 8, R, S, V, A % 8", elem="S, V, A % 8", time="S, V",
                      out_slice="A / 8, V", out_time="S", out_elem="S, A % 8", out_hbm="A / 8, S, V, A % 8")
    x = RNG.integers(-1000, 1000, (64, 4, 2, 4, 8)).astype(np.int32)
    y = _both(k, x).reshape(64, 2, 4, 8)
    np.testing.assert_array_equal(y, x.sum(1))


def test_a_good_record_verifies():
    from tu_ops import rngd

    from tests.inter.bad_ops import good

    for dtype, op in ((DType.I32, "ADD_SAT"), (DType.F32, "MUL")):
        rec = good(dtype, InterReduceName[op])
        assert rec.first_failure(rngd(), None) is None


@pytest.mark.parametrize("kernel, code", [
    (lambda: K.inter_first(i32, F.ADD), "VE-DTYPE-1"),
    (lambda: K.inter_first(f32, I.ADD_SAT), "VE-DTYPE-1"),
    (lambda: K.inter_first(i32, I.ADD, out_slice="A / 8, R", out_hbm="A / 8, R, A % 8"), None),  # a plain move
    (lambda: K.inter_first(i32, I.MAX, out_slice="A / 8, 1 # 2"), "VE-INTER-1"),
    (lambda: K.inter_first(i32, I.MIN, out_slice="A / 8, R % 2, 1 # 2"), "VE-INTER-3"),  # keeps the inner half of R
])
def test_refusals_carry_their_code(kernel, code):
    try:
        npu_opt.compile(kernel())
    except npu_opt.CompileError as e:
        assert code is not None and code in str(e), str(e)
        return
    assert code is None, f"compiled, expected {code}"


def test_promotion_under_a_padded_slice_prefix():
    """matmul_split_reduce2.rs's shape (issue 56, porting check): the slice `1 # 4, A / 32, R`
    keeps its padding and `A / 32` in place and promotes a time digit into R's slot. It was
    VE-INTER-4 (the padding was read as a displaced kept factor)."""
    k = K.inter_first(i32, I.ADD, slice_="1 # 4, A / 32, R", hbm="A / 32, R, A % 32", elem="A / 8 % 4, A % 8",
                      time="A / 8 % 4", out_slice="1 # 4, A / 32, A / 8 % 4", out_time="1", out_elem="A % 8",
                      out_hbm="A")
    x = RNG.integers(-1000, 1000, (16, 4, 32)).astype(np.int32)
    np.testing.assert_array_equal(_both(k, x), x.sum(1).reshape(512))


def test_a_kept_factor_moved_behind_the_padding_is_still_ve_inter_4():
    k = K.inter_first(i32, I.ADD, slice_="1 # 4, A / 32, R", hbm="A / 32, R, A % 32", elem="A / 8 % 4, A % 8",
                      time="A / 8 % 4", out_slice="A / 32, 1 # 4, A / 8 % 4", out_time="1", out_elem="A % 8",
                      out_hbm="A")
    with pytest.raises(npu_opt.CompileError) as caught:
        npu_opt.compile(k)
    assert "VE-INTER-4" in str(caught.value)
