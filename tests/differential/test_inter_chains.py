"""Generated inter-slice reduce kernels (inter_chains.py): the cpu backend and the VISA
interpreter agree bit for bit, and the cpu backend equals the naive model (naive_inter.py),
which shares no code with the compiler. The summary is asserted so the property cannot pass
vacuously."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.differential.harness import differential, load_kernel
from tests.differential.inter_chains import inter_kernels
from tests.differential.test_naive_model import differences, wide_inputs


def _run(count: int, rng_seed: int) -> Counter:
    stats: Counter = Counter()

    @seed(rng_seed)
    @settings(max_examples=count, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(g=inter_kernels(), input_seed=st.integers(0, 2**32 - 1))
    def prop(g, input_seed):
        source, feats = g
        outcome = differential(source, input_seed)
        assert outcome.kind == "agree", (outcome, source)
        kernel = load_kernel(source)
        diff = differences(kernel, wide_inputs(kernel, np.random.default_rng(input_seed)))
        assert diff is None, f"cpu and the naive model disagree: {diff}\n{source}"
        stats["agree"] += 1
        stats.update(feats)

    prop()
    assert stats["agree"] == count, stats
    return stats


def test_generated_inter_slice_reduces_agree():
    stats = _run(4, 20261203)
    assert any(k.startswith("inter:i32") for k in stats) or any(k.startswith("inter:f32") for k in stats), stats


@pytest.mark.slow
def test_many_generated_inter_slice_reduces_agree():
    stats = _run(120, 7)
    for needed in ("inter_slot:dummy", "inter_slot:fresh", "inter_slot:promote", "inter_order:inter",
                   "inter_order:inter_chain", "inter_order:intra", *(f"inter:i32:{o}" for o in
                   ("ADD", "ADD_SAT", "MAX", "MIN")), *(f"inter:f32:{o}" for o in ("ADD", "MAX", "MIN", "MUL"))):
        assert stats[needed] > 0, (needed, stats)
