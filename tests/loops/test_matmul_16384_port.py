"""The reference's matmul_16384.rs ported with rolled tile loops (tests/loops/matmul_16384.py).

At reduced sizes (B stays 16384; one or two 1024-row tiles by two 64-column tiles) the
product is exact: cpu == visa == an independent numpy product wrapped to i8 (every
narrowing of the kernel keeps the low 8 bits, so the result is the product modulo 256).
At the reference's size (256 x 16 tiles) the rolled kernel compiles its body once.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import npu_opt
from tests.loops import matmul_16384 as port


def _case(ta: int, tc: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(16384 + 10 * ta + tc)
    lhs = rng.integers(-128, 128, (1024 * ta, 16384), dtype=np.int8)
    rhs = rng.integers(-128, 128, (16384, 64 * tc), dtype=np.int8)
    exact = lhs.astype(np.float64) @ rhs.astype(np.float64)   # float64 holds every sum (|sum| < 2^28)
    return lhs, rhs, exact.astype(np.int64).astype(np.int8)


@pytest.fixture(scope="module")
def one_by_two():
    return _case(1, 2)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_the_rolled_port_is_exact(one_by_two, backend):
    lhs, rhs, want = one_by_two
    got = npu_opt.run(port.sized(1, 2).matmul_rolled, lhs, rhs, backend=backend)
    assert got.dtype == np.int8 and got.shape == want.shape
    assert np.array_equal(got, want)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_the_rolled_port_is_exact_with_two_trips_of_each_loop(backend):
    lhs, rhs, want = _case(2, 2)
    assert np.array_equal(npu_opt.run(port.sized(2, 2).matmul_rolled, lhs, rhs, backend=backend), want)


def test_the_unrolled_port_alternates_its_trf_rows_and_is_exact(one_by_two):
    # outside a rolled loop the lowering keeps each TRF tensor off the previous one's rows
    # (tu_ops/trf_place.py): the values stay those of numpy on cpu and visa
    lhs, rhs, want = one_by_two
    kernel = port.sized(1, 2).matmul_unrolled
    assert re.findall(r"= trf_load .* base_row=(\d+) ", npu_opt.compile(kernel).text) == ["0", "16"] * 4
    for backend in ("cpu", "visa"):
        assert np.array_equal(npu_opt.run(kernel, lhs, rhs, backend=backend), want), backend


def _counts(text: str) -> tuple[int, int, int]:
    return text.count("= loop_begin "), text.count("config=CUSTOM_BROADCAST"), text.count("config=INTER_TRANSPOSE")


def _loops(text: str) -> str:
    """The records from the first `loop_begin` to the last `loop_end`, numbers blanked."""
    return re.sub(r"\d+", "#", text[text.index("= loop_begin "):text.rindex("= loop_end ")])


def test_the_reference_size_compiles_its_body_once():
    """Four quarters per output tile, each with one custom broadcast and one inter-transpose:
    the rolled kernel holds them once, at 2 x 2 tiles as at the reference's 16 x 256, and
    its artifact does not grow; unrolled, they come once per tile."""
    small, full = (npu_opt.compile(port.sized(ta, tc).matmul_rolled).text for ta, tc in ((2, 2), (16, 256)))
    assert _counts(small) == _counts(full) == (2, 4, 4)
    assert "loop_begin start=0 stop=256 " in full and "loop_begin start=0 stop=16 " in full
    assert _loops(full) == _loops(small)   # the loops' records differ only in numbers (sizes, bounds)
    assert _counts(npu_opt.compile(port.sized(1, 2).matmul_unrolled).text) == (0, 8, 8)
