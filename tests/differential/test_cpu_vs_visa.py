"""Differential property test: generated contraction kernels on the `cpu` backend and on
the VISA interpreter (npu lowering -> VISA text -> parse -> execute) agree bit for bit.

Each example is a kernel generated as source text by `strategies.kernels()` plus an input
seed. `harness.differential` classifies it (legal and agreeing / refused at trace time
with the same documented code everywhere / refused by an [L] lowering rule) or raises
with the kernel source, which can be pasted into test_regressions.py. The summary
counter is asserted so the property cannot pass vacuously: most examples must execute
and compare.

Both sides use the compiler's own contraction geometry and conversions, so a bug there
makes them agree on a wrong answer; test_naive_model.py checks the cpu backend against an
independent naive model on the same generated kernels for that.

The normal suite runs 100 examples (fixed seed); `-m slow` runs 1000 more.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.differential.harness import differential
from tests.differential.strategies import kernels

OUTCOMES = ("agree", "refused", "lowering_refused")
SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]


def _summary(stats: Counter, features: Counter) -> str:
    total = sum(stats[k] for k in OUTCOMES)
    shares = ", ".join(f"{k} {stats[k]} ({100 * stats[k] / max(total, 1):.0f}%)" for k in OUTCOMES)
    codes = ", ".join(f"{c} x{n}" for c, n in stats.items() if c not in OUTCOMES)
    feats = ", ".join(f"{f} {n}" for f, n in sorted(features.items()))
    return (f"{total} kernels: {shares}\nrefusal codes: {codes}\n"
            f"features of the agreeing kernels: {feats}")


def _property(stats: Counter, features: Counter):
    def check(g, input_seed):
        outcome = differential(g.source, input_seed)
        stats[outcome.kind] += 1
        if outcome.code:
            stats[outcome.code] += 1
        if outcome.kind == "agree":
            features.update(g.features)

    return check


def _assert_healthy(stats: Counter, features: Counter) -> None:
    total = sum(stats[k] for k in OUTCOMES)
    print("\n" + _summary(stats, features))
    assert total > 0
    assert stats["agree"] >= 0.5 * total, "too few generated kernels execute and compare:\n" + _summary(stats, features)
    assert stats["refused"] >= 0.02 * total, "refusals are not exercised:\n" + _summary(stats, features)
    for needed in ("family:contraction", "family:copy", "lane_mode:INTERLEAVED", "lane_mode:SEQUENTIAL",
                   "pack:1", "pack:2", "dtype:bf16", "dtype:i8", "dtype:i4", "dtype:f8e4m3", "dtype:f8e5m2",
                   "in_place"):
        assert features[needed] > 0, f"no agreeing kernel has {needed}:\n" + _summary(stats, features)


def test_cpu_and_visa_agree_on_generated_kernels() -> None:
    stats: Counter = Counter()
    features: Counter = Counter()

    @seed(20240607)
    @settings(max_examples=50, deadline=None, database=None,
              suppress_health_check=SUPPRESS)
    @given(g=kernels(), input_seed=st.integers(0, 2**32 - 1))
    def prop(g, input_seed):
        _property(stats, features)(g, input_seed)

    prop()
    _assert_healthy(stats, features)


@pytest.mark.slow
def test_cpu_and_visa_agree_on_generated_kernels_slow() -> None:
    stats: Counter = Counter()
    features: Counter = Counter()

    @seed(77)
    @settings(max_examples=1000, deadline=None, database=None,
              suppress_health_check=SUPPRESS)
    @given(g=kernels(), input_seed=st.integers(0, 2**32 - 1))
    def prop(g, input_seed):
        _property(stats, features)(g, input_seed)

    prop()
    _assert_healthy(stats, features)
