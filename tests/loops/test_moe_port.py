"""The reference's bounded MoE kernels (moe.rs, v0.9) ported with rolled loops
(tests/loops/moe.py): every expert (group) below the launch value n is computed, the rest
stay zero, on cpu and in the VISA interpreter alike, rolled and unrolled, against numpy
(small integer bf16 operands, so every f32 sum is exact). At the reference's 1024 experts
the rolled kernel compiles one guarded body."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from tests.loops import moe

E = 8
SMALL = moe.sized(E)
RNG = np.random.default_rng(1024)


def _groups_want(x: np.ndarray, n: int) -> np.ndarray:
    want = np.zeros_like(x)
    want[:, :n] = x[:, :n]
    return want


@pytest.mark.parametrize("kernel", ["groups_rolled", "groups_unrolled"])
@pytest.mark.parametrize("n", [0, 2, 4, 9])
def test_active_groups_are_copied(kernel, n):
    x = RNG.integers(-2**31, 2**31, (64, 4, 8), dtype=np.int64).astype(np.int32)
    want = _groups_want(x, n)
    for backend in ("cpu", "visa"):
        assert np.array_equal(npu_opt.run(getattr(SMALL, kernel), x, n, backend=backend), want)


def _experts_want(act: np.ndarray, weight: np.ndarray, n: int) -> np.ndarray:
    """out[s, e, o] = sum_r act[s, r] weight[s, e, o, r] for e < n, else 0."""
    exact = np.einsum("sr,seor->seo", act.astype(np.float64), weight.astype(np.float64))
    exact[:, n:] = 0.0
    return exact.astype(np.float32)


@pytest.mark.parametrize("kernel", ["experts_rolled", "experts_unrolled"])
@pytest.mark.parametrize("n", [0, 3, 8, 20])
def test_active_experts_are_contracted(kernel, n):
    act = RNG.integers(-4, 5, (64, 16)).astype(ml_dtypes.bfloat16)
    weight = RNG.integers(-4, 5, (64, E, 8, 16)).astype(ml_dtypes.bfloat16)
    want = _experts_want(act, weight, n)
    outs = [npu_opt.run(getattr(SMALL, kernel), act, weight, n, backend=b) for b in ("cpu", "visa")]
    for got in outs:
        assert got.dtype == np.float32 and np.array_equal(got.view(np.uint32), want.view(np.uint32))


def _loops(text: str) -> str:
    """The records from the first `loop_begin` to the last `loop_end`, numbers blanked."""
    return re.sub(r"\d+", "#", text[text.index("= loop_begin "):text.rindex("= loop_end ")])


def test_the_reference_size_compiles_one_guarded_body():
    text = npu_opt.compile(moe.sized(1024).experts_rolled).text
    assert text.count("= loop_begin ") == 1 and "loop_begin start=0 stop=1024 " in text
    assert text.count("= guard_begin ") == 1 and text.count("contract_outer") == 1
    small = npu_opt.compile(SMALL.experts_rolled).text
    assert _loops(text) == _loops(small)   # the loops' records differ only in numbers (sizes, bounds)
