"""Generated pair-mode and tagged (branched) passes (pair_branch_chains.py): every kernel
the trace accepts runs bit-identically on the cpu backend and the VISA interpreter, and
every refused one is refused alike by every backend with a documented code. The summary
is asserted, so the property cannot pass vacuously."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.differential.harness import differential
from tests.differential.pair_branch_chains import pair_source, tagged_source

SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]


def _run(strategy, count: int, rng_seed: int) -> Counter:
    stats: Counter = Counter()

    @seed(rng_seed)
    @settings(max_examples=count, deadline=None, database=None, suppress_health_check=SUPPRESS)
    @given(g=strategy(), input_seed=st.integers(0, 2**32 - 1))
    def prop(g, input_seed):
        source, feats = g
        outcome = differential(source, input_seed)
        stats[outcome.kind] += 1
        if outcome.code:
            stats[outcome.code] += 1
        if outcome.kind == "agree":
            stats.update(feats)

    prop()
    assert stats["agree"] >= 0.6 * count, stats
    return stats


def test_generated_pair_passes_agree():
    stats = _run(pair_source, 6, 20261213)
    assert stats["pair_pass:i32"] + stats["pair_pass:f32"] > 0 and any(k.startswith("pair_zip:") for k in stats), stats


def test_generated_float_pair_passes_agree():
    """Pair kernels drawn until a few take the 4-way float path (the paired FMA_F, `vector_fp_zip`)."""
    stats = _run(pair_source, 14, 20261215)
    assert stats["pair:vector_fp_ternary"] > 0 and stats["pair_zip:vector_fp_zip"] > 0, stats


def test_generated_tagged_passes_agree():
    stats = _run(tagged_source, 6, 20261214)
    assert any(k.startswith("branched:") for k in stats), stats


def test_generated_stash_reads_agree():
    """A few kernels whose stash is read in the newer positions (mode, rf slot, FMA_F)."""
    stats = _run(lambda: tagged_source(stashy=True), 10, 20261313)
    assert sum(1 for k in stats if k.startswith("stash:")) >= 2, stats


@pytest.mark.slow
def test_many_generated_pair_and_tagged_passes_agree():
    pair, tagged = _run(pair_source, 150, 7), _run(tagged_source, 150, 8)
    stashy = _run(lambda: tagged_source(stashy=True), 120, 9)
    for needed in ("stash:bare", "stash:mode", "stash:slot", "stash:fma", "VE-SLOT-6", "fma:branched"):
        assert stashy[needed] > 0, (needed, stashy)
    assert sum(1 for k in stashy if k.startswith("fma_mode:")) >= 3, stashy
    for needed in ("pair_zip:vector_logic_zip", "pair_zip:vector_fxp_zip", "pair_zip:vector_clip_zip",
                   "pair:vector_logic", "pair:vector_fxp", "pair:vector_clip", "pair_mode:MODE10",
                   "pair_merged:vector_clip", "pair:conversion", "pair_pass:f32", "pair:vector_fp_ternary",
                   "pair_zip:vector_fp_zip"):
        assert pair[needed] > 0, (needed, pair)
    for needed in ("tagged_pass:i32", "tagged_pass:f32", "branched:1", "branched:3", "branched:stash",
                   "branched_op:vector_fp_binary", "branched:rf_slot", "branched:plain_vrf", "fma",
                   "branched_op:vector_logic", "branched:mode"):  # the stash forms: the stashy run above
        assert tagged[needed] > 0, (needed, tagged)
