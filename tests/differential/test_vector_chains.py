"""Generated kernels whose 32-bit stream runs a Vector Engine pass (vector_chains.py) after
its contraction or collect: the cpu backend and the VISA interpreter agree bit for bit,
and the cpu backend equals the naive model (naive_vector.py), which shares no code with
the compiler. The model is element by element in Python, so the quick test runs it on the
kernels of at most NAIVE_LIMIT input elements (counted: most must be checked); the slow
test runs it on every kernel. The summary is asserted so the property cannot pass vacuously."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.differential.harness import differential, load_kernel
from tests.differential.strategies import kernels, make_inputs
from tests.differential.test_naive_model import differences, wide_inputs

NAIVE_LIMIT = 4096
SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
            HealthCheck.filter_too_much]


def _check(stats: Counter, limit: int | None):
    def check(g, input_seed):
        outcome = differential(g.source, input_seed)
        stats[outcome.kind] += 1
        if outcome.code:
            stats[outcome.code] += 1
        if outcome.kind != "agree":
            return
        stats.update(f for f in g.features if f.startswith("vector"))
        kernel = load_kernel(g.source)
        arrays = wide_inputs(kernel, np.random.default_rng(input_seed)) if input_seed % 3 else \
            make_inputs(kernel, input_seed)
        if limit is not None and sum(a.size for a in arrays) > limit:
            return
        stats["naive"] += 1
        diff = differences(kernel, arrays)
        assert diff is None, f"cpu and the naive model disagree: {diff}\n--- kernel (seed {input_seed}) ---\n{g.source}"

    return check


def _run(count: int, rng_seed: int, limit: int | None = None) -> Counter:
    stats: Counter = Counter()

    @seed(rng_seed)
    @settings(max_examples=count, deadline=None, database=None, suppress_health_check=SUPPRESS)
    @given(g=kernels(illegal_rate=0, copy_rate=40, vector_rate=100).filter(
        lambda g: any(f.startswith("vector_pass") for f in g.features)), input_seed=st.integers(0, 2**32 - 1))
    def prop(g, input_seed):
        _check(stats, limit)(g, input_seed)

    prop()
    assert stats["agree"] >= 0.8 * count and stats["naive"] >= 0.5 * count, stats
    return stats


def test_generated_vector_passes_agree_everywhere():
    stats = _run(10, 20261202, NAIVE_LIMIT)
    for needed in ("vector_pass:i32", "vector_pass:f32", "vector:vector_logic", "vector:vector_fxp",
                   "vector:vector_clip", "vector:vector_fp_binary", "vector_way:trim"):
        assert stats[needed] > 0, (needed, stats)


@pytest.mark.slow
def test_many_generated_vector_passes_agree_everywhere():
    stats = _run(300, 99)
    for needed in ("vector_way:split", "vector:vector_fp_ternary", "vector:vector_fp_div", "vector:conversions",
                   "vector:vector_reinterpret", "vector_mode:MODE10", "vector_mode:MODE11"):
        assert stats[needed] > 0, (needed, stats)
