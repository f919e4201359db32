"""The compiled float core's fast path (the register-tiled exact kernel,
ir/exact_kernels/tiles.py) against an oracle written here from docs/numerics.md
("The order of the sums") alone: bf16 products in float32 (exact), the packet's products
added in adjacent pairs level by level, the packet sums added in stream order from +0,
every operation a float32 round to nearest even.

The inputs spread over 2^-40 .. 2^40 (and hold zeros), so that almost every other
grouping of the same sums rounds differently: the test checks that a serial fold, the
time steps added in reverse and the tree paired by halves each change many results, so
a kernel that summed in any of those orders would fail it. The magnitudes stay where no
product or sum can be subnormal or overflow (`contract_float.exact_f32` holds), the case
the fast path takes; the test checks that it ran.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions, contract_jit
from tests.backends.examples import example

M = N = 512
K = 128
PACKET = 32


def _wide_bf16(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """bf16 patterns: random sign and mantissa, exponents uniform over 2^-40 .. 2^40, one
    in 16 a zero of either sign."""
    sign = rng.integers(0, 2, shape, dtype=np.uint16) << 15
    exponent = rng.integers(127 - 40, 127 + 41, shape).astype(np.uint16) << 7
    mantissa = rng.integers(0, 128, shape, dtype=np.uint16)
    bits = sign | exponent | mantissa
    bits[rng.random(shape) < 1 / 16] &= np.uint16(0x8000)
    return bits


def _f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _products(a: np.ndarray, w: np.ndarray, rows: slice) -> np.ndarray:
    """(rows, N, K / PACKET, PACKET) float32 products: exact (8 x 8 significant bits)."""
    return (a[rows, None, :] * w[None, :, :]).reshape(-1, N, K // PACKET, PACKET)


def _tree(p: np.ndarray, halves: bool = False) -> np.ndarray:
    """The packet sum: adjacent pairs level by level ((p0 + p1) + (p2 + p3)) ...; with
    `halves`, leaf l paired with leaf l + n / 2 instead (a wrong order, for the check)."""
    while p.shape[-1] > 1:
        n = p.shape[-1]
        p = p[..., :n // 2] + p[..., n // 2:] if halves else p[..., 0::2] + p[..., 1::2]
    return p[..., 0]


def _time(y: np.ndarray, reverse: bool = False) -> np.ndarray:
    """+0, then each step's packet sum added in stream order (or reversed, for the check)."""
    acc = np.zeros(y.shape[:-1], np.float32)
    for t in (range(y.shape[-1] - 1, -1, -1) if reverse else range(y.shape[-1])):
        acc = acc + y[..., t]
    return acc


def _serial(p: np.ndarray) -> np.ndarray:
    """One fold over every product, ((0 + p0) + p1) + ... (furiosa-opt's serial order)."""
    flat = p.reshape(*p.shape[:2], -1)
    acc = np.zeros(flat.shape[:2], np.float32)
    for k in range(flat.shape[-1]):
        acc = acc + flat[..., k]
    return acc


def oracle(a_bits: np.ndarray, w_bits: np.ndarray, order: str = "chip") -> np.ndarray:
    """C = A W^T (A (M, K), W (N, K) bf16 patterns) as float32, summed in `order`: "chip"
    (docs/numerics.md), or a wrong one: "serial", "reverse_time", "halves"."""
    a, w = _f32(a_bits), _f32(w_bits)
    out = np.empty((M, N), np.float32)
    with np.errstate(all="raise"):  # no overflow, no invalid operation on these inputs
        for r0 in range(0, M, 64):
            p = _products(a, w, slice(r0, r0 + 64))
            if order == "serial":
                out[r0:r0 + 64] = _serial(p)
            else:
                out[r0:r0 + 64] = _time(_tree(p, order == "halves"), order == "reverse_time")
    return out


@pytest.fixture(scope="module")
def inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20261204)
    return _wide_bf16(rng, (M, K)), _wide_bf16(rng, (N, K))


def test_the_oracle_tells_the_orders_apart(inputs) -> None:
    """On these inputs every other order changes many results: the comparison below
    would catch a kernel summing in any of them."""
    want = oracle(*inputs).view(np.uint32)
    for order in ("serial", "reverse_time", "halves"):
        differ = np.count_nonzero(oracle(*inputs, order).view(np.uint32) != want)
        assert differ > want.size // 20, (order, differ)


@pytest.mark.parametrize("threads", [1, 2])
def test_the_fast_path_sums_in_the_documented_order(monkeypatch: pytest.MonkeyPatch, inputs,
                                                    threads: int) -> None:
    """examples/gemm_bf16.py (512 x 512 x 128: 4 time steps of 32-leaf packets) by the
    compiled core's tiled kernel, bit for bit the oracle, on one thread and on two."""
    pytest.importorskip("numba")  # here, not at the top: collecting this file must not load numba in every worker
    kernels = contract_jit._compiled()
    assert kernels is not None
    ran = []
    tiles = kernels["tiles"]
    monkeypatch.setitem(kernels, "tiles", lambda *args: ran.append(args[-1] - args[-2]) or tiles(*args))
    monkeypatch.setattr(contract_jit.contract_float, "PARALLEL_MIN", 1)
    got = CpuBackend(CpuOptions(jit=True, threads=threads)).run(example("gemm_bf16", "gemm_bf16_kernel"), inputs)
    assert len(ran) == threads and sum(ran) > 0  # the fast path ran, in `threads` blocks of rows
    np.testing.assert_array_equal(np.asarray(got, np.float32).view(np.uint32), oracle(*inputs).view(np.uint32))
