"""Pruning before the lowering (driver/tune_eval.py `early_bound`) on spaces drawn at random
(benchmarks/drawn_kernels.py `draw_space`): the early bound is the DMA context's work of the
whole lowering, never above the candidate's makespan; a candidate it prunes is never lowered;
the winner and every scheduled candidate stay what an unpruned sweep finds.
The early bound counts a DMA record in a rolled loop's body once per iteration.

Expected bounds and makespans come from compiling each candidate through
`backends.npu.compile_kernel` and the schedule model's steps, not from the tuner."""

from __future__ import annotations

import attrs
import pytest

from backends.npu import compile_kernel
from benchmarks.drawn_kernels import draw_space
from driver import tune_eval
from driver.tune import tune
from ir.regions import loops
from synth.space import space_of
from tu_ops.target import for_chips, get_target
from visa.schedule import builtin_rates
from visa.schedule.loops import trips
from visa.schedule.model import busiest_context, launch_cycles, steps_makespan
from visa.schedule.steps import build_steps

RATES = builtin_rates("rngd")


def _drawn(seed: int, every: int) -> tuple[object, list[tuple[int, dict]]]:
    space = space_of(draw_space(seed), run=False)
    return space, list(enumerate(space.points()))[::every]


def _lowered(space, point) -> tuple[int, int, int, int] | None:
    """(early bound, launch + DMA-context work (a loop's body counted once per iteration), bound,
    makespan) of one candidate, by compiling it."""
    kernel = space.factory(**point)
    tgt = for_chips(get_target("rngd"), kernel.chips)
    traced = kernel.trace(tgt)
    if traced.errors:
        return None
    found = []

    def gate(lowered, gate_target):
        steps = build_steps(lowered, RATES, gate_target)
        times = [1] * len(steps)  # a step in a rolled loop's body: once per iteration
        for region in loops(lowered.steps):
            for k in range(region.begin + 1, region.end):
                times[k] *= trips(lowered.steps[region.begin])
        dma = sum(n * s.duration for n, s in zip(times, steps) if s.context == "tdma")
        found.append((launch_cycles(RATES) + dma, launch_cycles(RATES) + busiest_context(steps)[1],
                      steps_makespan(steps, RATES, lowered)))
        return 0

    compile_kernel(kernel, tgt, gate=gate, traced=traced)
    return (tune_eval.early_bound(traced, tgt, RATES), *found[0]) if found else None


@pytest.mark.parametrize("seed", [0, 1])
def test_early_bound_is_the_dma_work_of_the_lowering(seed: int) -> None:
    space, items = _drawn(seed, 5)
    seen = looped = 0
    for _, point in items:
        got = _lowered(space, point)
        if got is None:
            continue
        early, dma, bound, makespan = got
        assert early == dma, point
        assert space.bound(point, RATES) <= early, point  # synth's bound from the parameters (synth/bound.py)
        assert early <= makespan and bound <= makespan, point
        seen += 1
        looped += early > bound  # counting a loop's iterations bounds closer than the busiest context
    assert seen >= 10 and looped


def _subspace(seed: int):
    """A drawn space cut to about 40 candidates (every third placement, all of the rest: 46 for seed 0)."""
    space = space_of(draw_space(seed), run=False)
    params = {name: (values[::3] if name == "placement" else values) for name, values in space.params}
    return attrs.evolve(space, params=params)


def test_candidates_pruned_early_are_never_lowered(monkeypatch: pytest.MonkeyPatch) -> None:
    space = _subspace(0)
    full = tune(space, prune=False)
    lowered = []
    compile_ = tune_eval.compile_kernel
    monkeypatch.setattr(tune_eval, "compile_kernel", lambda k, *a, **kw: lowered.append(k.name) or compile_(k, *a, **kw))
    pruned = tune(space, prune=True)
    assert pruned.winner.index == full.winner.index and pruned.winner.makespan == full.winner.makespan
    skipped = [c for c in pruned.candidates if c.status == "pruned"]
    # 15 of 46 (before the space left out the 64-byte packets' twins, each pruned with its 32-byte one: more)
    assert len(skipped) > len(space.points()) // 4
    assert len(lowered) < len(space.points()) - len(skipped) // 2  # most pruned ones never lowered
    for c in skipped:
        assert full.candidates[c.index].status != "ok" or full.candidates[c.index].makespan > pruned.winner.makespan
    for c in pruned.candidates:
        if c.status == "ok":
            assert full.candidates[c.index] == c

