"""How many candidates the tuner's next batch takes (driver/tune.py `_sweep`): batches sized
by the cost the workers measured, so they hold about the same work however the candidates'
prices vary across a space.

A candidate's price varies more than tenfold within one space: one pruned before its
lowering costs its trace and early bound, one lowered in full several times that, and
a lever's value can double the trace. Sized by count, a batch of dear candidates holds
several times the work of a batch of cheap ones, and the process holding it at the end of
the sweep keeps the others waiting. So every candidate's CPU seconds come back with its
batch (`time.thread_time`, which a busy machine does not stretch), and a queued candidate's
price is predicted from what the candidates measured so far cost with each of its lever
values (`Costs.predict`; the sweep's spread order samples the whole space early). On four
drawn spaces this prediction missed a candidate's price by 0.005-0.015 s, the plain mean
by 0.004-0.021 s; it matters where prices differ most. A batch then takes candidates from the head of the queue until
their predicted prices reach the target (`cut`): BATCH_SECONDS of work, or less when what
is left is short, 1/(SHARES * width) of the work still unsent, so the batches shrink as
the space drains and the last ones, which the other processes may wait for, are small.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["BATCH_SECONDS", "FEW_VALUES", "MAX_BATCH", "MIN_BATCH", "SHARES", "Costs", "batch_size", "cut",
           "slow_start"]

# Before any price is measured a batch is 1/(SHARES * width) of what is left, MIN_BATCH to
# MAX_BATCH candidates (a task's round trip is paid once per batch). After, it holds
# BATCH_SECONDS of predicted work, at most 1/(SHARES * width) of the predicted work left,
# MAX_BATCH candidates at most (a batch is sized before its prices are known: a long one can
# hold a run of dear candidates the prediction missed), and one candidate if that one alone
# reaches its share (at the end of a sweep whose last candidates are dear).
SHARES, MIN_BATCH, MAX_BATCH = 3, 2, 16
BATCH_SECONDS = 0.5
FEW_VALUES = 16  # a lever of more values than this: one not measured yet moves no price (`Costs.predict`)


class Costs:
    """The CPU seconds the candidates evaluated so far took, and a queued candidate's
    predicted price: the mean price, moved by each of its lever values by how far the mean
    of the candidates measured with that value lies from it (an additive model: it follows
    a dear value of a lever however fast that lever varies over the space's indices).
    `points` are the space's points (each a dict of lever values)."""

    def __init__(self, points: Sequence[dict[str, Any]]) -> None:
        self._points = points
        self._measured: set[int] = set()
        self._by_value: dict[tuple[str, str], list[float]] = {}  # (lever, repr(value)) -> [seconds, count]
        self._repeating: set[str] = set()  # the levers with a value measured twice
        values: dict[str, set[str]] = {}
        for point in points:
            for lever, value in _values(point):
                values.setdefault(lever, set()).add(value)
        # the levers of more than FEW_VALUES values: a value not measured yet moves no price
        self._many = {lever for lever, seen in values.items() if len(seen) > FEW_VALUES}
        self.total, self.least = 0.0, math.inf

    def add(self, indices: Sequence[int], seconds: Sequence[float]) -> None:
        for index, s in zip(indices, seconds):
            if index in self._measured:
                continue
            self._measured.add(index)
            self.total += s
            self.least = min(self.least, s)
            for value in _values(self._points[index]):
                entry = self._by_value.setdefault(value, [0.0, 0])
                entry[0] += s
                entry[1] += 1
                if entry[1] > 1 and value[0] not in self._many:
                    self._repeating.add(value[0])

    def mean(self) -> float | None:
        return self.total / len(self._measured) if self._measured else None

    def count(self) -> int:
        """How many candidates' prices are known."""
        return len(self._measured)

    def predict(self, index: int) -> float | None:
        """The predicted CPU seconds of candidate `index`; None when one of its lever values has
        no candidate measured yet, of a lever whose values repeat (the spread order sends a
        fast-varying lever's last values late: a value first seen may be the dear one). A
        lever whose every value was measured once so far (a list of whole configurations,
        say) says nothing of a value not yet seen, and moves no price; nor does a lever of
        more than FEW_VALUES values (a synth space's placements: 114 of them, 3 or 4
        candidates each), whose new values are what most of a spread sweep's first
        candidates bring: priced as unknown, each ended its batch, and the first third of a
        drawn space of 412 candidates travelled one or two at a time (65 tasks in all, 47
        with such a lever moving no price; a dask task costs its worker, the scheduler and
        this process about 8 ms of CPU together)."""
        mean = self.mean()
        if mean is None:
            return None
        moved = mean
        for value in _values(self._points[index]):
            entry = self._by_value.get(value)
            if entry is None:
                if value[0] in self._repeating:
                    return None
                continue
            moved += entry[0] / entry[1] - mean
        return max(moved, self.least)


def _values(point: dict[str, Any]) -> list[tuple[str, str]]:
    return [(lever, repr(value)) for lever, value in point.items()]


def cut(costs: Sequence[float], target: float) -> int:
    """How many of `costs` (the predicted prices of the candidates at the head of the queue,
    in order) a batch takes: the fewest whose sum reaches `target` (one, if it alone does),
    MAX_BATCH at most."""
    total, n = 0.0, 0
    for n, c in enumerate(costs[:MAX_BATCH], 1):
        total += c
        if total >= target:
            break
    return n


def batch_size(head: Sequence[int], left: int, width: int, costs: Costs) -> int:
    """The size of the next batch: `head` holds the first (up to MAX_BATCH) indices of the
    queue, `left` its length. Before anything is measured, by count: 1/(SHARES * width) of
    `left`; after, by predicted price (`cut`), and at most one candidate for every `width`
    priced so far (one at least: `slow_start`)."""
    mean = costs.mean()
    if mean is None or mean <= 0:
        return min(left, max(MIN_BATCH, min(MAX_BATCH, -(-left // (SHARES * width)))))
    target = min(BATCH_SECONDS, left * mean / (SHARES * width))
    return min(cut([target if (p := costs.predict(i)) is None else p for i in head], target),
               slow_start(costs.count(), width))


def slow_start(priced: int, width: int) -> int:
    """The most candidates a batch may take once `priced` candidates' prices are known: one
    for every `width` of them, one at least. The queue's head is its dearest part (the
    sweep sends candidates by ascending bound: the first are lowered in full, most later ones
    are pruned by the makespans the first find), so the first prices overstate what is left
    and a batch sized by them took the whole head: on a drawn space whose sweep lowers 7
    candidates, the first batch to one dask worker held all 6 still to lower (14 candidates:
    the other 8 pruned by then) and that worker did nearly all the sweep (0.98x serial); in
    batches of two, one worker still got 4 of the 6 (a dask worker holds two tasks at a
    time). Growing with what has been priced, the head goes out a candidate or two a batch
    to every worker, and a long sweep reaches full batches after some MAX_BATCH * width of
    its candidates (a few more round trips at its start, about 4 ms of a worker's CPU each)."""
    return max(1, priced // width)
