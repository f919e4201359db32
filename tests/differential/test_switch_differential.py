"""Differential property test of the Switch Engine: generated switch kernels (every
SwitchConfig variant, tiles as bare integers or new axes, conversions before the switch,
both contexts, a few mutations) agree bit for bit between the cpu backend and the VISA
interpreter, or are refused with the same documented code everywhere
(`harness.differential`). 30 examples by default, 400 more under `-m slow`."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.differential.harness import differential
from tests.differential.switch_strategies import CONFIG_NAMES, switch_kernel, switch_kernels

SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]


def _run(examples: int, at: int) -> Counter:
    stats: Counter = Counter()

    @seed(at)
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=SUPPRESS)
    @given(g=switch_kernels(), input_seed=st.integers(0, 2**32 - 1))
    def prop(g, input_seed):
        outcome = differential(g.source, input_seed)
        stats[outcome.kind] += 1
        if outcome.kind == "agree":
            stats.update(g.features)
        elif outcome.code:
            stats[outcome.code] += 1

    prop()
    print(dict(stats))
    return stats


def _assert_healthy(stats: Counter, total: int) -> None:
    assert stats["agree"] >= 0.6 * total, dict(stats)
    named = ("FORWARDING", "BROADCAST01", "BROADCAST1", "TRANSPOSE", "INTER_TRANSPOSE", "CUSTOM_BROADCAST",
             "TRANSPOSED_BROADCAST1")
    missing = [n for n in named if not stats[f"switch:{n}"]]
    assert not missing, f"no agreeing kernel switches with {missing}: {dict(stats)}"


def test_cpu_and_visa_agree_on_generated_switches() -> None:
    """Four kernels of each variant (fixed seeds): every variant is exercised every run."""
    stats: Counter = Counter()
    for i in range(4 * len(CONFIG_NAMES)):
        g = switch_kernel(random.Random(i), CONFIG_NAMES[i % len(CONFIG_NAMES)])
        outcome = differential(g.source, i)
        stats[outcome.kind] += 1
        stats.update(g.features if outcome.kind == "agree" else [outcome.code or outcome.kind])
    print(dict(stats))
    _assert_healthy(stats, 4 * len(CONFIG_NAMES))


@pytest.mark.slow
def test_cpu_and_visa_agree_on_generated_switches_slow() -> None:
    _assert_healthy(_run(400, 2026), 400)
