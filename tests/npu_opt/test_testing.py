"""`npu_opt.testing` (the tolerance rule of docs/testing.md) and `npu_opt.testing.oracles`."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from npu_opt.testing import oracles as o
from npu_opt.testing import assert_close, assert_within_tolerance, to_bits

RNG = np.random.default_rng(20240611)


def bf16_inputs(*shape: int) -> np.ndarray:
    """docs/testing.md: uniform in [-1, 1), narrowed with f32_to_bf16_bits."""
    return o.f32_to_bf16_bits(RNG.uniform(-1, 1, shape).astype(np.float32))


def f64(bits: np.ndarray) -> np.ndarray:
    return o.bf16_bits_to_f32(bits).astype(np.float64)


def bf16(*values: float) -> np.ndarray:
    return o.f32_to_bf16_bits(np.array(values, np.float32))


def u32(x) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


# --- the docs/testing.md helpers, transcribed verbatim, to pin "numerically identical" ----

def spec_bf16_bits_to_f32(h):
    h = np.asarray(h, np.uint16).astype(np.uint32)
    exp, man = (h >> 7) & 0xFF, h & 0x7F
    out = h << 16
    out = np.where(exp == 0, (h >> 15) << 31, out)
    out = np.where((exp == 0xFF) & (man != 0), np.uint32(0x7FC00000), out)
    return out.astype(np.uint32).view(np.float32)


def spec_f32_to_bf16_bits(x):
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    exp, man, sign = (b >> 23) & 0xFF, b & 0x7FFFFF, b >> 31
    lower, upper = b & 0xFFFF, b >> 16
    up = (lower > 0x8000) | ((lower == 0x8000) & ((upper & 1) == 1))
    r = (upper + up) & 0xFFFF
    r = np.where(exp == 0, sign << 15, r)
    r = np.where((exp == 0xFF) & (man != 0), 0x7FC0, r)
    return r.astype(np.uint16)


def spec_gemm_bf16_oracle_exact(a_bits, w_bits, k):
    a, w = spec_bf16_bits_to_f32(a_bits), spec_bf16_bits_to_f32(w_bits)
    prod = o.fmul(a[:, None, :], w[None, :, :]).reshape(a.shape[0], w.shape[0], k // 32, 32)
    acc = np.zeros(prod.shape[:-2], np.float32)
    tree = prod
    while tree.shape[-1] > 1:
        tree = o.fadd(tree[..., 0::2], tree[..., 1::2])
    for t in range(tree.shape[-2]):
        acc = o.fadd(acc, tree[..., t, 0])
    return acc


def test_bf16_widening_matches_spec_on_every_pattern():
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    assert np.array_equal(u32(o.bf16_bits_to_f32(every)), u32(spec_bf16_bits_to_f32(every)))


def test_bf16_narrowing_matches_spec_on_random_and_special_patterns():
    patterns = RNG.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)
    special = np.array([0, 0x80000000, 0x00000001, 0x807FFFFF, 0x3F808000, 0x3F818000, 0x7F7FFFFF,
                        0x7F800000, 0xFF800000, 0x7F800001, 0xFFFFFFFF, 0x00800000], np.uint32)
    x = np.concatenate([patterns, special]).view(np.float32)
    assert np.array_equal(o.f32_to_bf16_bits(x), spec_f32_to_bf16_bits(x))


def test_gemm_bf16_oracle_matches_spec_transcription():
    a, w = bf16_inputs(16, 128), bf16_inputs(24, 128)
    a[0, :4] = [0x0001, 0x7F80, 0xFF80, 0x7FC1]  # subnormal, +inf, -inf, NaN operands
    got, want = o.gemm_bf16_oracle_exact(a, w), spec_gemm_bf16_oracle_exact(a, w, 128)
    assert np.array_equal(u32(got), u32(want))


# --- docs/numerics.md, one hand-computed case per oracle -------------------------------------------

TREE_LEAVES = (1.0, 2.0 ** -24, 2.0 ** -24, -1.0)  # tree: 2^-24; serial left fold: 0


def test_tree_order_flush_nan_and_signed_zero():
    assert u32(o.tree_sum(np.array(TREE_LEAVES, np.float32))) == 0x33800000
    assert u32(o.tree_sum(np.array([1.5 * 2.0 ** -126, -(2.0 ** -126)], np.float32))) == 0
    assert u32(o.fmul(o.bf16_bits_to_f32(bf16(2.0 ** -64)), o.bf16_bits_to_f32(bf16(2.0 ** -63)))) == 0
    assert u32(o.fmul(o.bf16_bits_to_f32(np.uint16(0x0001)), o.bf16_bits_to_f32(np.uint16(0x3F80)))) == 0
    assert u32(o.fadd(np.float32(np.inf), np.float32(-np.inf))) == 0x7FC00000
    assert u32(o.time_sum(np.array([-0.0], np.float32))) == 0x00000000


def packet(*leaves: float, length: int = 32) -> np.ndarray:
    return np.array(list(leaves) + [0.0] * (length - len(leaves)), np.float32)


def test_dot_oracle_uses_the_packet_tree():
    lhs = o.f32_to_bf16_bits(packet(*TREE_LEAVES, length=64))
    ones = bf16(*[1.0] * 64)
    assert o.dot_oracle_exact(lhs, ones).tolist() == [0x3380]  # bf16 of 2^-24


def test_gemv_oracle_rows():
    mat = np.stack([o.f32_to_bf16_bits(packet(*TREE_LEAVES)), bf16(*[1.0] * 32)])
    assert o.gemv_oracle_exact(mat, bf16(*[1.0] * 32)).tolist() == [0x3380, 0x4200]  # 2^-24, 32.0


def test_gemm_oracle_narrows_with_rne():
    a = bf16(*[1.0] * 32)[None, :]
    b = np.stack([bf16(1.0, 2.0 ** -8, *[0.0] * 30), bf16(1.0, 3 * 2.0 ** -8, *[0.0] * 30)])
    # 1 + 2^-8 is a tie between bf16 1.0 and 1 + 2^-7: even wins (0x3F80);
    # 1 + 3 * 2^-8 is a tie between 1 + 2^-7 and 1 + 2^-6: even wins (0x3F82).
    assert o.gemm_oracle_exact(a, b).tolist() == [[0x3F80, 0x3F82]]


def test_gemm_bf16_oracle_sums_packets_serially_in_time():
    # four packets whose tree sums are 1, 2^-24, 2^-24, -1: the time fold gives +0, a tree 2^-24
    a = np.concatenate([o.f32_to_bf16_bits(packet(v)) for v in TREE_LEAVES])[None, :]
    w = bf16(*[1.0] * 128)[None, :]
    out = o.gemm_bf16_oracle_exact(a, w)
    assert out.dtype == np.float32 and out.shape == (1, 1) and u32(out).tolist() == [[0]]


def test_gemm_i8_oracle_packet_and_wrap():
    a = np.full((1, 64), -128, np.int8)
    assert o.gemm_i8_oracle(a, a).tolist() == [[1_048_576]]  # 0x00100000
    big = np.full((1, 131_072), -128, np.int8)  # 2^31: wraps to -2^31
    assert o.gemm_i8_oracle(big, big).view(np.uint32).tolist() == [[0x80000000]]
    assert o.gemm_i8_oracle(a, a).dtype == np.int32


def test_row_sum_and_fetch_commit_oracles():
    x = np.array([[1, -2, 3, 127], [-128, -128, 5, 0]], np.int8)
    assert o.row_sum_oracle(x, np.ones(4, np.int8)).tolist() == [129, -251]
    assert o.row_sum_oracle(x, np.array([2, 1, 0, -1], np.int8)).tolist() == [-127, -384]
    y = o.fetch_commit_oracle(x)
    assert y.dtype == np.int32 and y.shape == (4, 2) and y[3, 0] == 127 and y.flags.c_contiguous


# --- the oracles agree with float64 math within the tolerance rule ------------------------------

def test_float_oracles_within_tolerance_of_exact_math():
    x, y = bf16_inputs(2048), bf16_inputs(2048)
    assert o.float_tolerance_ok(o.dot_oracle_exact(x, y), f64(x)[None, :], f64(y)[None, :], 2048)
    mat, vec = bf16_inputs(64, 2048), bf16_inputs(2048)
    assert o.float_tolerance_ok(o.gemv_oracle_exact(mat, vec), f64(mat), f64(vec)[None, :], 2048)
    a, b = bf16_inputs(96, 64), bf16_inputs(80, 64)
    assert_within_tolerance(o.gemm_oracle_exact(a, b), f64(a)[:, None, :], f64(b)[None, :, :])
    a, w = bf16_inputs(64, 128), bf16_inputs(48, 128)
    assert_within_tolerance(o.gemm_bf16_oracle_exact(a, w), f64(a)[:, None, :], f64(w)[None, :, :], 128)


def test_integer_oracles_match_float64_math():
    a = RNG.integers(-128, 128, (40, 128), dtype=np.int8)
    w = RNG.integers(-128, 128, (24, 128), dtype=np.int8)
    np.testing.assert_array_equal(o.gemm_i8_oracle(a, w), (a.astype(np.float64) @ w.astype(np.float64).T))
    ones = RNG.integers(-128, 128, 128, dtype=np.int8)
    np.testing.assert_array_equal(o.row_sum_oracle(a, ones), a.astype(np.float64) @ ones)


def test_tolerance_rejects_an_indexing_error():
    a, b = bf16_inputs(32, 64), bf16_inputs(32, 64)
    wrong = o.gemm_oracle_exact(a, b).T.copy()  # transposed: a classic indexing bug
    assert not o.float_tolerance_ok(wrong, f64(a)[:, None, :], f64(b)[None, :, :], 64)


# --- assert_close --------------------------------------------------------------------------------

def test_integers_exact():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert_close(x, x.copy())
    y = x.copy()
    y[1, 2] += 1
    with pytest.raises(AssertionError) as e:
        assert_close(y, x)
    text = str(e.value)
    assert "exact, i32" in text and "1 / 12" in text and "index (1, 2): actual 7, expected 6" in text


def test_integer_container_is_part_of_the_contract():
    x = np.arange(4, dtype=np.int32)
    with pytest.raises(AssertionError, match="dtype mismatch: actual is int64, the host form of i32 is int32"):
        assert_close(x.astype(np.int64), x)


def test_bf16_bits_and_ml_dtypes_compare_bit_exactly():
    bits = bf16_inputs(8, 8)
    assert_close(bits.view(ml_dtypes.bfloat16), bits)
    assert_close(bits, bits.view(ml_dtypes.bfloat16))
    off = bits.copy()
    off[2, 3] ^= 1  # one ulp
    off[5, 0] = 0x7FC0  # NaN: the worst
    with pytest.raises(AssertionError) as e:
        assert_close(off.view(ml_dtypes.bfloat16), bits, "bf16")
    lines = str(e.value).splitlines()
    assert lines[0] == "Arrays are not equal (bit-exact, bf16)"
    assert lines[1].startswith("Mismatched elements: 2 / 64")
    worst = [line for line in lines if line.startswith("  index")]
    assert worst[0].startswith("  index (5, 0): actual nan (0x7fc0)")
    assert f"(0x{off[2, 3]:04x})" in worst[1] and f"(0x{bits[2, 3]:04x})" in worst[1]


def test_f32_signed_zero_and_nan_bits():
    z = np.array([0.0, np.nan], np.float32)
    assert_close(z, z.copy())  # same NaN bits pass
    with pytest.raises(AssertionError, match=r"index \(0,\): actual -0.0 \(0x80000000\), expected 0.0"):
        assert_close(np.array([-0.0, np.nan], np.float32), z)


def test_shape_and_container_mismatch():
    bits = bf16_inputs(4)
    with pytest.raises(AssertionError, match=r"shape mismatch: actual \(4,\), expected \(2, 2\)"):
        assert_close(bits, bits.reshape(2, 2))
    with pytest.raises(AssertionError, match="dtype mismatch: expected bf16"):
        assert_close(bits.astype(np.float64), bits, "bf16")
    with pytest.raises(TypeError, match="pass dtype="):
        assert_close(np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError):
        assert_close(bits, None)


def test_f8_and_f4_bits():
    codes = np.arange(16, dtype=np.uint8)
    assert_close(codes.view(ml_dtypes.float4_e2m1fn), codes)
    f8 = np.arange(256, dtype=np.uint8)
    assert_close(f8, f8.view(ml_dtypes.float8_e4m3fn))
    assert to_bits(f8.view(ml_dtypes.float8_e5m2), "f8e5m2").dtype == np.uint8


def test_tolerance_pass_and_fail_message():
    a, b = bf16_inputs(16, 64), bf16_inputs(24, 64)
    a64, b64 = f64(a)[:, None, :], f64(b)[None, :, :]
    exact = o.gemm_oracle_exact(a, b)
    assert_close(exact, exact, operands=(a64, b64), n=64)
    assert_close(exact.view(ml_dtypes.bfloat16), None, operands=(a64, b64))
    wrong = exact.copy()
    wrong[3, 7] = o.f32_to_bf16_bits(np.float32(5.0))
    with pytest.raises(AssertionError) as e:
        assert_within_tolerance(wrong, a64, b64, 64)
    text = str(e.value)
    assert "not within tolerance (bf16, n=64)" in text and "1 / 384" in text
    assert "index (3, 7): actual 5.0 (0x40a0)" in text and "> bound" in text
    with pytest.raises(ValueError, match="bf16 and f32"):
        assert_within_tolerance(np.zeros(2, np.int32), a64[:2, 0], b64[0, :2])


def test_f32_tolerance_and_bit_exact_together():
    a, w = bf16_inputs(8, 64), bf16_inputs(8, 64)
    out = o.gemm_bf16_oracle_exact(a, w)
    assert_close(out, out, operands=(f64(a)[:, None, :], f64(w)[None, :, :]))
    nudged = (out.view(np.uint32) + 1).view(np.float32)  # 1 ulp: within tolerance, not bit-exact
    assert_within_tolerance(nudged, f64(a)[:, None, :], f64(w)[None, :, :])
    with pytest.raises(AssertionError, match="bit-exact, f32"):
        assert_close(nudged, out, operands=(f64(a)[:, None, :], f64(w)[None, :, :]))



def test_the_oracles_are_a_module_of_the_testing_package():
    import npu_opt

    assert npu_opt.testing.oracles is o and o.__name__ == "npu_opt.testing.oracles"
