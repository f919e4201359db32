"""Reference numpy oracles of examples/: the helpers of section 0 and one oracle per example.

These functions restate the spec's oracles independently of the compiler: they import
neither `ir.convert`, `ir.contract_arith` nor any backend, so a test comparing `npu_opt.run` with them
checks the project against the spec, not against itself. Every function is numerically
identical to its examples/ listing; the shapes the listings hard-code are derived from
the inputs instead, so the same oracles serve kernels with other sizes (the
benchmarks' K = 512 GEMMs), and large GEMMs are evaluated in row blocks to bound memory
(the arithmetic is elementwise per output, so blocking changes no bit).

Float oracles take and return bit patterns: `bf16` as `uint16`, `f32` results as
`float32` values (compare their `.view(np.uint32)`), exactly as examples/ does.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "F32_MIN_NORMAL", "QNAN_F32", "bf16_bits_to_f32", "f32_to_bf16_bits", "fmul", "fadd",
    "tree_sum", "time_sum", "float_tolerance_ok", "tolerance_bound", "BF16_PACKET",
    "dot_oracle_exact", "gemv_oracle_exact", "gemm_oracle_exact", "gemm_bf16_oracle_exact",
    "gemm_i8_oracle", "row_sum_oracle", "fetch_commit_oracle", "add_sat", "add_sat_chip_fold",
    "add_sat_serial_fold",
]

F32_MIN_NORMAL = np.float32(2.0 ** -126)
QNAN_F32 = np.uint32(0x7FC00000)
QNAN_BF16 = np.uint16(0x7FC0)

#: products per contraction packet for bf16 operands: two 32-byte flits of 16 elements.
BF16_PACKET = 32

#: output rows evaluated at once by the GEMM oracles (bounds the f32 product block).
_BLOCK_ELEMS = 1 << 23


# --- docs/testing.md: conversions and Contraction Engine arithmetic -------------------


def bf16_bits_to_f32(h) -> np.ndarray:
    """Widen bf16 bit patterns to f32 as the hardware does: a subnormal becomes a zero of
    its sign, every NaN becomes 0x7fc00000, everything else is exact (the upper half)."""
    h32 = np.asarray(h, np.uint16).astype(np.uint32)
    exponent = (h32 >> 7) & 0xFF
    mantissa = h32 & 0x7F
    widened = h32 << 16
    widened = np.where(exponent == 0, (h32 >> 15) << 31, widened)
    widened = np.where((exponent == 0xFF) & (mantissa != 0), QNAN_F32, widened)
    return widened.astype(np.uint32).view(np.float32)


def f32_to_bf16_bits(x) -> np.ndarray:
    """Narrow f32 to bf16 bit patterns as the hardware does: round to nearest, ties to even;
    a subnormal input becomes a zero of its sign; every NaN becomes 0x7fc0."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    exponent, mantissa, sign = (bits >> 23) & 0xFF, bits & 0x7FFFFF, bits >> 31
    low, high = bits & 0xFFFF, bits >> 16
    round_up = (low > 0x8000) | ((low == 0x8000) & ((high & 1) == 1))
    narrowed = (high + round_up) & 0xFFFF
    narrowed = np.where(exponent == 0, sign << 15, narrowed)
    narrowed = np.where((exponent == 0xFF) & (mantissa != 0), np.uint64(QNAN_BF16), narrowed)
    return narrowed.astype(np.uint16)


def _fix(x) -> np.ndarray:
    """Every f32 result of the Contraction Engine: flush subnormals to a signed zero and
    make every NaN the canonical 0x7fc00000."""
    x = np.asarray(x, np.float32)
    x = np.where(np.abs(x) < F32_MIN_NORMAL, np.copysign(np.float32(0), x), x)
    return np.where(np.isnan(x), QNAN_F32.view(np.float32), x).astype(np.float32)


def fmul(a, b) -> np.ndarray:
    """One f32 multiply of the Contraction Engine (IEEE product, then `_fix`)."""
    with np.errstate(all="ignore"):
        return _fix(np.multiply(a, b, dtype=np.float32))


def fadd(a, b) -> np.ndarray:
    """One f32 add of the Contraction Engine (IEEE sum, then `_fix`)."""
    with np.errstate(all="ignore"):
        return _fix(np.add(a, b, dtype=np.float32))


def tree_sum(x) -> np.ndarray:
    """The Packet Reducer: sum the last axis (length 2**d) by adjacent pairs, level by level."""
    x = np.asarray(x, np.float32)
    if x.shape[-1] & (x.shape[-1] - 1):
        raise ValueError(f"a packet tree needs a power-of-two length, got {x.shape[-1]}")
    while x.shape[-1] > 1:
        x = fadd(x[..., 0::2], x[..., 1::2])
    return x[..., 0]


def _in_stream_order(y: np.ndarray, add, dtype) -> np.ndarray:
    """An accumulator of `dtype` starting at zero adds the last axis of `y`, one `add` a step:
    the Time Reducer's order, and the saturating reduce's over whole flits."""
    acc = np.zeros(y.shape[:-1], dtype)
    for step in range(y.shape[-1]):
        acc = add(acc, y[..., step])
    return acc


def time_sum(y) -> np.ndarray:
    """The Time Reducer: an accumulator starting at +0.0 adds the last axis in stream order."""
    return _in_stream_order(np.asarray(y, np.float32), fadd, np.float32)


def _decoded(actual) -> np.ndarray:
    actual = np.asarray(actual)
    return (actual if actual.dtype == np.float32 else bf16_bits_to_f32(actual)).astype(np.float64)


def tolerance_bound(a64, b64, n: int) -> tuple[np.ndarray, np.ndarray]:
    """`(e, bound)` of docs/testing.md: the exact float64 sum `e = sum(a*b)` over the
    last axis and the allowed error `2^-7 |e| + n 2^-22 S + n 2^-126` with `S = sum|a*b|`."""
    products = np.asarray(a64, np.float64) * np.asarray(b64, np.float64)
    e = np.sum(products, axis=-1)
    s = np.sum(np.abs(products), axis=-1)
    return e, 2.0 ** -7 * np.abs(e) + n * 2.0 ** -22 * s + n * 2.0 ** -126


def float_tolerance_ok(actual, a64, b64, n: int) -> bool:
    """True when every output is within the tolerance of exact math (docs/testing.md).

    `actual`: bf16 bits (uint16) or f32 values; `a64`, `b64`: the decoded operands as
    float64, broadcastable, contracted axis last; `n`: the contracted length."""
    e, bound = tolerance_bound(a64, b64, n)
    return bool(np.all(np.abs(_decoded(actual) - e) <= bound))


# --- the examples' oracles ---------------------------------------------------------------


def _contract_bf16(x, y) -> np.ndarray:
    """Hardware-order f32 contraction of the last axis of two broadcastable f32 arrays:
    products in f32, a 32-leaf tree per packet, packets summed in time from +0."""
    products = fmul(x, y)
    k = products.shape[-1]
    if k % BF16_PACKET:
        raise ValueError(f"the contracted length {k} is not a multiple of the {BF16_PACKET}-product packet")
    packets = products.reshape(*products.shape[:-1], k // BF16_PACKET, BF16_PACKET)
    return time_sum(tree_sum(packets))


def _gemm_f32(a_bits, b_bits) -> np.ndarray:
    """`C[i, j] = sum_k A[i, k] B[j, k]` in hardware order, f32, evaluated in row blocks."""
    a, b = bf16_bits_to_f32(a_bits), bf16_bits_to_f32(b_bits)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"expected (I, K) and (J, K) operands, got {a.shape} and {b.shape}")
    rows = max(1, _BLOCK_ELEMS // max(1, b.shape[0] * b.shape[1]))
    out = np.empty((a.shape[0], b.shape[0]), np.float32)
    for start in range(0, a.shape[0], rows):
        out[start:start + rows] = _contract_bf16(a[start:start + rows, None, :], b[None, :, :])
    return out


def dot_oracle_exact(lhs_bits, rhs_bits) -> np.ndarray:
    """Example 1: `uint16[A]`, `uint16[A]` -> the bf16 bits of the dot product, shape (1,)."""
    x, y = bf16_bits_to_f32(lhs_bits), bf16_bits_to_f32(rhs_bits)
    return f32_to_bf16_bits(_contract_bf16(x, y)).reshape(1)


def gemv_oracle_exact(mat_bits, vec_bits) -> np.ndarray:
    """Example 2: `uint16[I, J]`, `uint16[J]` -> bf16 bits of `y[i] = sum_j M[i, j] v[j]`."""
    mat, vec = bf16_bits_to_f32(mat_bits), bf16_bits_to_f32(vec_bits)
    return f32_to_bf16_bits(_contract_bf16(mat, vec[None, :]))


def gemm_oracle_exact(a_bits, b_bits) -> np.ndarray:
    """Example 3: `uint16[I, K]`, `uint16[J, K]` -> bf16 bits of `C = A B^T`, `uint16[I, J]`."""
    return f32_to_bf16_bits(_gemm_f32(a_bits, b_bits))


def gemm_bf16_oracle_exact(a_bits, w_bits) -> np.ndarray:
    """Example 4b: `uint16[M, K]`, `uint16[N, K]` -> `float32[M, N]`, no narrowing."""
    return _gemm_f32(a_bits, w_bits)


def _wrap_i32(acc: np.ndarray) -> np.ndarray:
    return ((acc + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)


def gemm_i8_oracle(a, w) -> np.ndarray:
    """Example 4: `int8[M, K]`, `int8[N, K]` -> `int32[M, N]`, exact with i32 wrap."""
    return _wrap_i32(np.asarray(a).astype(np.int64) @ np.asarray(w).astype(np.int64).T)


def row_sum_oracle(x, ones) -> np.ndarray:
    """Example 5: `int8[I, J]`, `int8[J]` -> `int32[I]` (a GEMV with i32 output)."""
    return _wrap_i32(np.asarray(x).astype(np.int64) @ np.asarray(ones).astype(np.int64))


def fetch_commit_oracle(x) -> np.ndarray:
    """Example 6: `int8[A, B]` -> `int32[B, A]`, sign-extended and transposed."""
    return np.asarray(x).astype(np.int32).T.copy()


# --- docs/numerics.md: the order of a saturating reduction ----------------------------


_I32_MIN, _I32_MAX = -2 ** 31, 2 ** 31 - 1


def add_sat(a, b) -> np.ndarray:
    """One saturating i32 add (`ADD_SAT`): the exact sum clamped to the i32 range."""
    return np.clip(np.asarray(a, np.int64) + np.asarray(b, np.int64), _I32_MIN, _I32_MAX)


def add_sat_chip_fold(x, lanes: int = 4) -> np.ndarray:
    """An `ADD_SAT` intra-slice reduce over the last axis whose innermost `lanes` values
    are one flit's packet, as the chip and npu-opt fold it: each flit collapses as a tree of
    adjacent pairs (`(a + b) + (c + d)` for 4 lanes), then an accumulator starting at 0 adds
    the flits in stream order. Returns int32."""
    x = np.asarray(x, np.int64)
    if x.shape[-1] % lanes or lanes & (lanes - 1):
        raise ValueError(f"the last axis ({x.shape[-1]}) must be whole flits of a power-of-two {lanes} lanes")
    flits = x.reshape(*x.shape[:-1], x.shape[-1] // lanes, lanes)
    while flits.shape[-1] > 1:
        flits = add_sat(flits[..., 0::2], flits[..., 1::2])
    return _in_stream_order(flits[..., 0], add_sat, np.int64).astype(np.int32)


def add_sat_serial_fold(x) -> np.ndarray:
    """The same reduce as furiosa-opt's CPU backend folds it: one accumulator starting at 0
    adds every reduced value in wire order, `((0 + x0) + x1) + ...`, with no packet tree.
    Returns int32."""
    return _in_stream_order(np.asarray(x, np.int64), add_sat, np.int64).astype(np.int32)
