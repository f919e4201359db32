"""Rolled loops in the schedule model (docs/loops.md#schedules).

The reference builds one schedule for a rolled loop's body and repeats it for every
iteration (its book's tuning chapter, "Double buffering"): nothing of one iteration
overlaps the next, nor the work before or after the loop. The model does the same
without simulating iterations:

- `fence_loops`: a `loop_begin` and a `loop_end` step claim every resource of the
  kernel's steps, so the body is scheduled alone, after everything before it, and
  everything after the loop starts after the body's end;
- `repeat_loops`: the body's span (from its `loop_begin`'s start to its `loop_end`'s end)
  is one iteration; the loop lasts `trips` times that, and every step after it moves by
  the extra iterations. Inner loops are expanded first, so an outer body holds them whole.

A loop with a runtime bound has no trip count the model can know: it counts one
iteration (the schedule of its body), as a guard's body counts as done.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.regions import loops

__all__ = ["fence_loops", "repeat_loops", "repeats"]


def fence_loops(steps: list[Any], kernel: Any) -> list[Any]:
    """`steps` with each loop's opener and end claiming every resource the steps claim."""
    spans = loops(kernel.steps)
    if not spans:
        return steps
    every = tuple(sorted({c for s in steps for c in s.claims}))
    fenced = {r.begin for r in spans} | {r.end for r in spans}
    return [attrs.evolve(s, claims=every) if s.index in fenced else s for s in steps]


def _trips(opener: Any) -> int:
    return opener.stop - opener.start if opener.stop is not None else 1


def repeats(kernel: Any) -> list[int]:
    """How many times each of `kernel`'s steps runs: the product of the trip counts of the
    loops whose body holds it (a loop's `loop_begin` and `loop_end` count once)."""
    times = [1] * len(kernel.steps)
    for r in loops(kernel.steps):
        trips = _trips(kernel.steps[r.begin])
        for k in range(r.begin + 1, r.end):
            times[k] *= trips
    return times


def repeat_loops(slots: list[Any], kernel: Any) -> list[Any]:
    """The slots with every loop's body lasting its trip count of iterations: the steps after a
    loop move by `(trips - 1) * body span`. The body's own slots are its first iteration."""
    out = list(slots)
    for r in loops(kernel.steps):    # inner loops first
        span = out[r.end].end - out[r.begin].start
        extra = (_trips(kernel.steps[r.begin]) - 1) * span
        if extra <= 0:
            continue
        last = out[r.end]
        out[r.end] = attrs.evolve(last, end=last.end + extra)   # the loop's end: after the last iteration
        for k in range(r.end + 1, len(out)):
            out[k] = attrs.evolve(out[k], start=out[k].start + extra, end=out[k].end + extra)
    return out
