"""A dask worker runs a task on each of its threads, and a long-lived cluster serves several
sweeps (driver/tune_share.py): two tasks of two sweeps on one worker at once must each prune
against, and publish to, their own sweep's best makespan only."""

from __future__ import annotations

import threading

import pytest

from driver import tune_eval, tune_share
from driver.tune_share import ClusterBest, on_cluster


def test_two_sweeps_tasks_on_one_workers_threads_each_see_their_own_best(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[list] = []
    board = ClusterBest(sent.append)
    board.heard((0.0, ["B", 100]))          # sweep B's best, heard from another worker
    monkeypatch.setattr(tune_share, "_BOARD", [board])
    monkeypatch.setattr(tune_share, "freeze_heap", lambda: None)
    inside, read = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def task_b(batch: object) -> None:      # sweep B's task, on the worker's other thread
        inside.set()
        read.wait(10)

    def task_a(batch: object) -> None:      # sweep A's task: reads and finds while B's task runs
        other = threading.Thread(target=on_cluster, args=(task_b, _Batch("B")))
        other.start()
        inside.wait(10)
        seen["A's best"] = tune_eval.shared_best()
        tune_eval._found(500)               # a makespan sweep A's candidate gave
        read.set()
        other.join()

    on_cluster(task_a, _Batch("A"))
    assert seen["A's best"] is None         # nothing of sweep A yet (100 is B's)
    assert sent == [["A", 500]]             # published as sweep A's
    assert board.best_of("A") == 500 and board.best_of("B") == 100


class _Batch:
    def __init__(self, sweep: str) -> None:
        self.sweep = sweep
