"""The differential tests with the interpreter's speed switch off (`NPU_OPT_INTERP_FAST=0`,
visa/interp/shortcuts.py): generated kernels run on the `cpu` backend and on the plain VISA
interpreter, the executable spec, agree bit for bit. The suite's one pytest command (README.md,
which CI runs) runs these, so the spec path is checked against the cpu backend on every run,
not only against the fast path (tests/visa/test_interp_plain.py). Fewer examples than the fast
runs: the plain path writes every stream out and memoises nothing."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from tests.differential import test_cpu_vs_visa as contractions
from tests.differential import test_vector_chains as chains
from tests.differential.strategies import kernels
from visa.interp import shortcuts


@pytest.fixture(autouse=True)
def switch_off(monkeypatch):
    monkeypatch.setenv(shortcuts.ENV, "0")
    assert not shortcuts.on()


def test_cpu_and_the_plain_interpreter_agree_on_generated_kernels() -> None:
    stats: Counter = Counter()
    features: Counter = Counter()

    @seed(20240607)
    @settings(max_examples=20, deadline=None, database=None, suppress_health_check=contractions.SUPPRESS)
    @given(g=kernels(), input_seed=st.integers(0, 2**32 - 1))
    def prop(g, input_seed):
        contractions._property(stats, features)(g, input_seed)

    prop()
    total = sum(stats[k] for k in contractions.OUTCOMES)
    assert total > 0 and stats["agree"] >= 0.5 * total, stats


def test_generated_vector_passes_agree_with_the_plain_interpreter() -> None:
    stats = chains._run(6, 20261202, chains.NAIVE_LIMIT)
    assert stats["vector_pass:f32"] + stats["vector_pass:i32"] > 0, stats
