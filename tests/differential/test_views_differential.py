"""Generated view and tile kernels (view_strategies.py): the cpu backend and the VISA
interpreter agree bit for bit (harness.differential), and the cpu backend agrees with the
naive model (naive_model.py), which evaluates windows from cell positions of its own."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import npu_opt
from tests.differential.harness import differential, load_kernel
from tests.differential.strategies import make_inputs
from tests.differential.test_naive_model import differences
from tests.differential.view_strategies import view_kernels

SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]


def _cpu_vs_visa(count: int, rng_seed: int) -> Counter:
    stats: Counter = Counter()

    @seed(rng_seed)
    @settings(max_examples=count, deadline=None, database=None, suppress_health_check=SUPPRESS)
    @given(g=view_kernels(extras=True), input_seed=st.integers(0, 2**32 - 1))
    def prop(g, input_seed):
        outcome = differential(g.source, input_seed)
        stats[outcome.kind] += 1
        if outcome.code:
            stats[outcome.code] += 1
        if outcome.kind == "agree":
            stats.update(g.features)

    prop()
    return stats


def test_cpu_and_visa_agree_on_generated_view_kernels() -> None:
    stats = _cpu_vs_visa(30, 21)
    assert stats["agree"] >= 15, stats
    assert stats["refused"] >= 1, stats
    for needed in ("route:dm", "route:hbm", "route:dm_write", "digit:whole", "digit:outer", "digit:inner", "len:1", "len:2",
                   "in_place", "memset"):
        assert stats[needed] > 0, (needed, stats)


@pytest.mark.slow
def test_cpu_and_visa_agree_on_many_generated_view_kernels() -> None:
    stats = _cpu_vs_visa(400, 99)
    assert stats["agree"] >= 200, stats


def test_cpu_matches_the_naive_model_on_generated_view_kernels() -> None:
    stats: Counter = Counter()

    @seed(7)
    @settings(max_examples=20, deadline=None, database=None, suppress_health_check=SUPPRESS)
    @given(g=view_kernels(illegal_rate=0), input_seed=st.integers(0, 2**32 - 1))
    def prop(g, input_seed):
        kernel = load_kernel(g.source)
        if not npu_opt.check(kernel).ok:
            stats["refused"] += 1
            return
        diff = differences(kernel, make_inputs(kernel, input_seed))
        assert diff is None, f"cpu and the naive model disagree: {diff}\n{g.source}"
        stats["agree"] += 1

    prop()
    assert stats["agree"] >= 10, stats
