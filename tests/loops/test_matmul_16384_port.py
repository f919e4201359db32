"""The reference's matmul_16384.rs ported with rolled tile loops (tests/loops/matmul_16384.py).

At reduced sizes (B stays 16384; one or two 1024-row tiles, two or four 64-column tiles) the
product is exact: cpu == visa == an independent numpy product wrapped to i8 (every narrowing
of the kernel keeps the low 8 bits, so the result is the product modulo 256). At the
reference's size (256 x 16 tiles) the rolled kernel compiles its body once: under `-m slow`.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import npu_opt
from tests.loops import matmul_16384 as port

RNG = np.random.default_rng(16384)


def _operands(ta: int, tc: int) -> tuple[np.ndarray, np.ndarray]:
    lhs = RNG.integers(-128, 128, (1024 * ta, 16384), dtype=np.int8)
    rhs = RNG.integers(-128, 128, (16384, 64 * tc), dtype=np.int8)
    return lhs, rhs


def _product_mod_256(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The i8 product wrapped to i8: float64 holds every sum exactly (|sum| < 2^28)."""
    exact = lhs.astype(np.float64) @ rhs.astype(np.float64)
    return exact.astype(np.int64).astype(np.int8)


@pytest.fixture(scope="module")
def columns_case():
    lhs, rhs = _operands(1, 2)
    return lhs, rhs, _product_mod_256(lhs, rhs)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_the_column_rolled_port_is_exact(columns_case, backend):
    lhs, rhs, want = columns_case
    got = npu_opt.run(port.sized(1, 2).matmul_columns_rolled, lhs, rhs, backend=backend)
    assert got.dtype == np.int8 and got.shape == want.shape
    assert np.array_equal(got, want)


def _counts(text: str) -> tuple[int, int, int]:
    return text.count("= loop_begin "), text.count("config=CUSTOM_BROADCAST"), text.count("config=INTER_TRANSPOSE")


def test_a_rolled_loop_compiles_its_body_once():
    """Four quarters per output tile, each with one custom broadcast and one inter-transpose:
    the rolled column loop holds them once whatever its trip count; unrolled, once per tile."""
    rolled = [npu_opt.compile(port.sized(1, tc).matmul_columns_rolled).text for tc in (2, 4)]
    assert [_counts(t) for t in rolled] == [(1, 4, 4), (1, 4, 4)]
    assert "loop_begin start=0 stop=4 " in rolled[1]
    assert abs(len(rolled[1]) - len(rolled[0])) < 64
    unrolled = npu_opt.compile(port.sized(1, 2).matmul_unrolled).text
    assert _counts(unrolled) == (0, 8, 8)


@pytest.mark.slow
def test_the_reference_size_compiles_rolled():
    """256 column tiles rolled, the 16 row tiles of each unrolled in the body: 64 quarters."""
    kernel = port.sized(16, 256).matmul_columns_rolled
    start = time.perf_counter()
    text = npu_opt.compile(kernel).text
    seconds = time.perf_counter() - start
    assert _counts(text) == (1, 64, 64)
    assert "loop_begin start=0 stop=256 " in text
    print(f"matmul_16384 (columns rolled): {seconds:.1f} s, {len(text.encode())} bytes of VISA")
