"""The tuner's process takes back the candidates a pool worker has not started
(driver/tune.py `_sweep`, driver/tune_eval.py `PoolClaims`): the worker is simulated, so
these tests time nothing."""

from __future__ import annotations

import multiprocessing

import pytest

from driver import tune as tune_mod
from driver import tune_eval
from driver.tune_eval import Batch, Candidate, PoolClaims


class _IdleWorker:
    """One simulated pool worker beside this process (`helps`), sharing claim flags with it:
    it starts the first candidate of its first batch when that batch arrives, and runs the
    rest of its batches, in order and skipping what this process claimed, only when this
    process blocks on it (`wait(block=True)`): until then this process could take back
    everything else it sent."""

    width, workers, helps, description = 2, 1, True, "one simulated worker"

    def __init__(self, count: int) -> None:
        self.flags = [0] * count
        self.ran: list[int] = []  # what the worker evaluated
        self.handles: list[list[int]] = []
        self.started: set[int] = set()

    def starting(self) -> bool:
        return False

    def claim(self, index: int) -> bool:
        if self.flags[index]:
            return False
        self.flags[index] = 1
        return True

    def submit(self, fn, batch):
        indices = [i for i, _ in batch.items]
        if not self.handles:
            self.claim(indices[0])  # the worker is on its first candidate at once
            self.started.add(indices[0])
        self.handles.append(indices)
        return len(self.handles) - 1

    def wait(self, handles, block):
        return [min(handles)] if block else []

    def result(self, handle):
        out = []
        for i in self.handles[handle]:
            if i in self.started or self.claim(i):
                self.ran.append(i)
                out.append(Candidate(i, {"k": i}, "ok", makespan=1, bound=1))
        return tuple(0.01 for _ in out), out


def test_this_process_takes_back_what_the_worker_has_not_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """With its own queue empty, this process evaluates the candidates of the batches out that
    the worker has not reached, the last of the latest batch first, and the worker skips
    them: every candidate comes back once. Before, this process waited for the worker's
    batches while it had nothing to do."""
    points = [{"k": k} for k in range(40)]
    here: list[int] = []

    def evaluate_timed(batch: Batch):
        here.extend(i for i, _ in batch.items)
        return (0.01,) * len(batch.items), [Candidate(i, p, "ok", makespan=1, bound=1) for i, p in batch.items]

    monkeypatch.setattr(tune_mod, "evaluate_timed", evaluate_timed)
    executor, seen = _IdleWorker(len(points)), []
    tune_mod._sweep(executor, points, lambda idx: Batch(None, "rngd", None, True, tuple((i, points[i]) for i in idx)),
                    lambda cs: seen.extend(c.index for c in cs), order=list(range(len(points))))
    assert sorted(seen) == list(range(len(points)))  # each once
    assert set(executor.ran) == executor.started and len(executor.ran) == 1  # the worker ran what it had started
    sent = [i for batch in executor.handles for i in batch]
    taken = [i for i in here if i in sent]
    assert sorted(taken) == sorted(set(sent) - executor.started)
    latest = executor.handles[-1]
    assert taken[:len(latest)] == latest[::-1]  # the latest batch first, from its end


def test_a_worker_skips_the_candidates_another_process_claimed(monkeypatch: pytest.MonkeyPatch) -> None:
    """`evaluate_batch` under a pool's claim flags: a candidate claimed before the worker
    reaches it is left out (no candidate, no seconds), the others are claimed as it goes."""
    evaluated: list[int] = []

    def evaluate(space, index, params, target, cutoff, lead=False):
        evaluated.append(index)
        return Candidate(index, params, "ok", makespan=100, bound=100)

    monkeypatch.setattr(tune_eval, "evaluate", evaluate)
    monkeypatch.setattr(tune_eval, "resolve_space", lambda ref: ref)
    flags = multiprocessing.get_context("spawn").Array("b", 6)
    claims = PoolClaims(flags)
    assert claims.claim(3) and not claims.claim(3)
    tune_eval.share_claims(claims)
    try:
        seconds: list[float] = []
        out = tune_eval.evaluate_batch(Batch(None, "rngd", None, True, tuple((i, {"k": i}) for i in (1, 3, 4)),
                                             "claims"), seconds)
    finally:
        tune_eval.share_claims(None)
    assert evaluated == [1, 4] and [c.index for c in out] == [1, 4] and len(seconds) == 2
    assert list(flags) == [0, 1, 0, 1, 1, 0]
