"""Independent numpy oracles of examples/ (section 0 helpers and each example's oracle).

Copied from the spec as written; they use nothing from the project, so they check the
cpu backend against an implementation that shares no code with it.
"""

from __future__ import annotations

import numpy as np

F32_MIN_NORMAL = np.float32(2.0 ** -126)
QNAN_F32 = np.uint32(0x7FC00000)


def bf16_bits_to_f32(h):
    """Hardware bf16 -> f32 widening: subnormal -> signed zero, NaN -> 0x7fc00000."""
    h = np.asarray(h, np.uint16).astype(np.uint32)
    exp, man = (h >> 7) & 0xFF, h & 0x7F
    out = h << 16
    out = np.where(exp == 0, (h >> 15) << 31, out)
    out = np.where((exp == 0xFF) & (man != 0), QNAN_F32, out)
    return out.astype(np.uint32).view(np.float32)


def f32_to_bf16_bits(x):
    """Hardware f32 -> bf16 narrowing: RNE, subnormal -> signed zero, NaN -> 0x7fc0."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    exp, man, sign = (b >> 23) & 0xFF, b & 0x7FFFFF, b >> 31
    lower, upper = b & 0xFFFF, b >> 16
    up = (lower > 0x8000) | ((lower == 0x8000) & ((upper & 1) == 1))
    r = (upper + up) & 0xFFFF
    r = np.where(exp == 0, sign << 15, r)
    r = np.where((exp == 0xFF) & (man != 0), 0x7FC0, r)
    return r.astype(np.uint16)


def _fix(x):  # flush-to-zero and canonical NaN on every f32 result of the Contraction Engine
    x = np.asarray(x, np.float32)
    x = np.where(np.abs(x) < F32_MIN_NORMAL, np.copysign(np.float32(0), x), x)
    return np.where(np.isnan(x), QNAN_F32.view(np.float32), x).astype(np.float32)


def fmul(a, b):
    with np.errstate(all="ignore"):
        return _fix(np.multiply(a, b, dtype=np.float32))


def fadd(a, b):
    with np.errstate(all="ignore"):
        return _fix(np.add(a, b, dtype=np.float32))


def tree_sum(x):
    """Packet Reducer: adjacent-pair tree over the last axis (length 2**d)."""
    x = np.asarray(x, np.float32)
    while x.shape[-1] > 1:
        x = fadd(x[..., 0::2], x[..., 1::2])
    return x[..., 0]


def time_sum(y):
    """Time Reducer: start at +0.0, add the last axis in stream order."""
    acc = np.zeros(y.shape[:-1], np.float32)
    for t in range(y.shape[-1]):
        acc = fadd(acc, y[..., t])
    return acc


def float_tolerance_ok(actual, a64, b64, n):
    """actual: bf16 bits (uint16) or f32 values; a64, b64: decoded operands as float64,
    broadcastable, contracted axis last."""
    e = np.sum(a64 * b64, axis=-1)
    s = np.sum(np.abs(a64 * b64), axis=-1)
    actual = np.asarray(actual)
    y = (actual if actual.dtype == np.float32 else bf16_bits_to_f32(actual)).astype(np.float64)
    return bool(np.all(np.abs(y - e) <= 2.0 ** -7 * np.abs(e) + n * 2.0 ** -22 * s + n * 2.0 ** -126))


# --- example 1: dot product --------------------------------------------------------------

def dot_oracle_exact(lhs_bits, rhs_bits):
    x, y = bf16_bits_to_f32(lhs_bits), bf16_bits_to_f32(rhs_bits)
    prod = fmul(x, y).reshape(64, 32)                 # out_time A/32, out_packet A%32
    return f32_to_bf16_bits(time_sum(tree_sum(prod)[None, :])[0]).reshape(1)


# --- example 2: GEMV ---------------------------------------------------------------------

def gemv_oracle_exact(mat_bits, vec_bits):
    m, v = bf16_bits_to_f32(mat_bits), bf16_bits_to_f32(vec_bits)
    prod = fmul(m, v[None, :]).reshape(256, 64, 32)
    return f32_to_bf16_bits(time_sum(tree_sum(prod)))


# --- example 3: GEMM (bf16) --------------------------------------------------------------

def gemm_oracle_exact(a_bits, b_bits):
    a, b = bf16_bits_to_f32(a_bits), bf16_bits_to_f32(b_bits)
    prod = fmul(a[:, None, :], b[None, :, :]).reshape(512, 512, 2, 32)   # K/32 in time, K%32 in packet
    return f32_to_bf16_bits(time_sum(tree_sum(prod)))


# --- example 4: GEMM (i8 -> i32) -----------------------------------------------------------

def gemm_i8_oracle(a, w):
    acc = a.astype(np.int64) @ w.astype(np.int64).T
    return ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)   # i32 wrap (|acc| <= 2^21 here, never wraps)


# --- example 4b: GEMM (bf16 -> f32) ----------------------------------------------------------

def gemm_bf16_oracle_exact(a_bits, w_bits):
    a, w = bf16_bits_to_f32(a_bits), bf16_bits_to_f32(w_bits)
    prod = fmul(a[:, None, :], w[None, :, :]).reshape(512, 512, 4, 32)   # K/32 in time, K%32 in packet
    return time_sum(tree_sum(prod))                                       # f32 result: no narrowing


# --- example 5: row sums ---------------------------------------------------------------------

def row_sum_oracle(x, ones):
    return (x.astype(np.int64) @ ones.astype(np.int64)).astype(np.int32)


# --- example 6: widening copy ----------------------------------------------------------------

def fetch_commit_oracle(x):
    return x.astype(np.int32).T.copy()
