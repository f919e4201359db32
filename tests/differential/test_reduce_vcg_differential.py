"""Generated reduces over a padded axis (reduce_vcg_chains.py): the cpu backend, which
excludes the padding by the mappings, and the VISA interpreter, which excludes it by the
record's Valid Count Generator configuration, agree bit for bit, and both equal a numpy fold
over the cells the layout's own digits mark live; the placements the VCG cannot count are
refused with their rule. The same layouts reduced after a pair pass's zip are all refused
(PAIR-REDUCE-1). The summary is asserted so the property cannot pass vacuously."""

from __future__ import annotations

import runpy
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings

import npu_opt
from tests.differential.reduce_vcg_chains import fold, reduce_cases
from visa.interp import execute
from visa.parser import parse_visa


def _load(source: str):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.py"
        path.write_text(source)
        return runpy.run_path(str(path))["k"]


def _inputs(case, rng):
    e = int(np.prod([i[2] for i in case.time_items])) * 4
    if case.dtype == "f32":
        return (rng.integers(-64, 64, (256, e)) / 8).astype(np.float32)   # every sum of them is exact
    return rng.integers(-10**6, 10**6, (256, e), dtype=np.int64).astype(np.int32)


def _check(stats: Counter):
    def check(case, input_seed):
        kernel = _load(case.source())
        stats[f"layout:{case.layout}"] += 1
        if case.refusal:
            first = npu_opt.check(kernel).diagnostics[0]
            assert first.code == case.refusal, f"{first.render()}\n{case.source()}"
            stats["refused"] += 1
            return
        rng = np.random.default_rng(input_seed)
        xs = [_inputs(case, rng)]
        text = npu_opt.compile(kernel).text
        assert " vcg={" in text and " vector_pair " not in text, case.source()
        cpu = npu_opt.run(kernel, *xs)
        visa = execute(parse_visa(text), xs)
        np.testing.assert_array_equal(cpu.view(np.uint32), visa.view(np.uint32), err_msg=case.source())
        want, live = fold(case, xs[0])
        np.testing.assert_array_equal(cpu[live].astype(np.float64), want[live], err_msg=case.source())
        stats["agree"] += 1
        stats[f"slice_filter:{'slice_mask=' in text}"] += 1

    return check


def _run(count: int, rng_seed: int, paired: bool = False) -> Counter:
    stats: Counter = Counter()

    @seed(rng_seed)
    @settings(max_examples=count, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(case=reduce_cases(paired=paired), input_seed=__import__("hypothesis").strategies.integers(0, 2**32 - 1))
    def prop(case, input_seed):
        _check(stats)(case, input_seed)

    prop()
    if paired:
        assert stats["refused"] == count and stats["agree"] == 0, stats
    else:
        assert stats["agree"] >= 0.35 * count and stats["slice_filter:True"] > 0 and stats["refused"] > 0, stats
    return stats


def test_generated_padded_reduces_agree():
    _run(12, 20261213)


def test_generated_padded_reduces_after_a_zip_are_refused():
    """The same layouts reduced on the merged stream of a pair pass: PAIR-REDUCE-1, every one."""
    _run(12, 20261214, paired=True)


@pytest.mark.slow
def test_many_generated_padded_reduces_agree():
    stats = _run(200, 1313)
    paired = _run(100, 1316, paired=True)
    for layout in ("time", "slice_major", "time_major", "slice_packet", "interleaved"):
        assert stats[f"layout:{layout}"] > 0 and paired[f"layout:{layout}"] > 0, (stats, paired)
    assert stats["refused"] > 0 and paired["refused"] > 0, (stats, paired)
