"""The best makespan the workers of a dask cluster share during a sweep (docs/tuning.md
"Workers"): what a `--jobs` pool's `multiprocessing.Value` is to its processes
(driver/tune_eval.py `PoolBest`), for processes that may run on other machines.

A worker that finds a makespan below the best it knows of publishes it as a dask event
(`Worker.log_event` on `TOPIC`: queued on the worker's connection to the scheduler, so the
task thread does not wait). Each worker process subscribes to the topic once, through its
worker client, and the scheduler forwards every event to it; the worker's event loop
records it (`ClusterBest.heard`) while the task thread compiles, and the task thread reads
it before each candidate (`share_best`): a worker prunes against a makespan another worker
found from its next candidate on, not when its next batch leaves the client. A worker
subscribes at its first task and reads the events published before it (the scheduler
keeps them), so one that joins a sweep late starts from the best found so far. Events carry
the sweep's id, so a sweep never prunes against another's makespans. Only improvements are
published: a handful of events a sweep.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from driver.tune_eval import freeze_heap, share_best

__all__ = ["TOPIC", "ClusterBest", "heard_best", "on_cluster"]

TOPIC = "npu-opt-tune-best"
_SWEEPS = 64  # the sweeps' bests a worker remembers (a long-lived cluster serves many runs)


class ClusterBest:
    """What one worker process knows of each sweep's best makespan: what it found itself
    (`offer`, published through `publish`) and what the cluster's other workers published
    (`heard`). `sweep` is the sweep of the batch being evaluated."""

    def __init__(self, publish: Callable[[list[Any]], None]) -> None:
        self._publish = publish
        self._best: dict[str, int] = {}
        self.sweep = ""

    def best(self) -> int | None:
        return self._best.get(self.sweep)

    def best_of(self, sweep: str) -> int | None:
        return self._best.get(sweep)

    def offer(self, makespan: int) -> None:
        self.offer_to(self.sweep, makespan)

    def offer_to(self, sweep: str, makespan: int) -> None:
        if self._lower(sweep, makespan):
            self._publish([sweep, makespan])

    def heard(self, event: tuple[float, Any]) -> None:
        """A dask event handler: `event` is (the scheduler's timestamp, [sweep, makespan])."""
        sweep, makespan = event[1]
        self._lower(sweep, makespan)

    def _lower(self, sweep: str, makespan: int) -> bool:
        """Record `makespan` for `sweep` if it is the best known; whether it was. (The event
        loop and the task thread both call this: a race can at worst keep a larger makespan
        for a moment, which prunes less, never wrongly: every value is a real makespan.)"""
        old = self._best.get(sweep)
        if old is not None and old <= makespan:
            return False
        if old is None and len(self._best) >= _SWEEPS:
            self._best.clear()
        self._best[sweep] = makespan
        return True


class _SweepBest:
    """One sweep's best on a worker's `ClusterBest`, for one task (`share_best`): the board's
    `sweep` is one for the whole process, and two tasks of two sweeps may run at once on two
    of the worker's threads."""

    def __init__(self, board: ClusterBest, sweep: str) -> None:
        self._board, self._sweep = board, sweep

    def best(self) -> int | None:
        return self._board.best_of(self._sweep)

    def offer(self, makespan: int) -> None:
        self._board.offer_to(self._sweep, makespan)


_BOARD: list[ClusterBest | None] = [None]


def _board() -> ClusterBest:
    """This worker process's `ClusterBest`, subscribed to `TOPIC` at its first task."""
    if _BOARD[0] is None:
        from distributed import get_client, get_worker  # a dask worker's task: dask is imported

        worker, client = get_worker(), get_client()
        board = ClusterBest(lambda message: worker.log_event(TOPIC, message))
        client.subscribe_topic(TOPIC, board.heard)
        for event in client.get_events(TOPIC):  # what was published before this worker's first task
            board.heard(event)
        _BOARD[0] = board
    return _BOARD[0]


def on_cluster(fn: Callable[[Any], Any], batch: Any) -> Any:
    """A dask worker's task: `fn(batch)` (driver/tune_eval.py `evaluate_timed`) pruning
    against, and publishing to, the best makespan of `batch.sweep` across the cluster. The
    first task leaves the worker's heap frozen (`freeze_heap`)."""
    share_best(_SweepBest(_board(), batch.sweep))  # this thread's: another may run another sweep's task
    try:
        return fn(batch)
    finally:
        share_best(None)
        freeze_heap()  # after the first task: the space and the compiler's caches are loaded by then


def heard_best(sweep: str) -> int | None:
    """The best makespan of `sweep` this worker process knows of (None: none, or no task yet)."""
    return None if _BOARD[0] is None else _BOARD[0].best_of(sweep)
