"""A tune worker's heap is frozen once it holds what every task reuses (driver/tune_eval.py
`freeze_heap`): its cyclic collections then skip the imports, the loaded space and the
compiler's caches (a full collection walked them about once a sweep, 45-65 ms, and in a
forked pool worker copied every page it touched), and the process that calls `tune` is
never frozen."""

from __future__ import annotations

import gc
import multiprocessing
import os
from pathlib import Path

import pytest

from driver import tune_eval, tune_exec, tune_share
from driver.tune_exec import FactoryRef, make_executor

FILE = str(Path(__file__).with_name("small_space.py"))


@pytest.fixture
def freezes(monkeypatch):
    """The calls of gc.freeze, counted instead of made (the test process stays unfrozen),
    with the once-per-process flag reset."""
    calls: list[int] = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append(1))
    monkeypatch.setattr(tune_eval, "_FROZEN", [False])
    return calls


def test_a_pool_worker_freezes_its_heap_at_its_start(freezes, monkeypatch):
    monkeypatch.setattr(tune_eval._HERE, "shared", None)
    tune_exec._warm(FactoryRef(FILE, "SPACE"), multiprocessing.Value("q", 0))
    tune_exec._warm(FactoryRef(FILE, "SPACE"), multiprocessing.Value("q", 0))
    assert freezes == [1]


def test_a_dask_worker_freezes_its_heap_after_its_first_task_only(freezes, monkeypatch):
    monkeypatch.setattr(tune_share, "_BOARD", [tune_share.ClusterBest(lambda message: None)])
    seen = []

    class _Batch:
        sweep = "s"

    def task(batch):
        seen.append(len(freezes))  # how often the heap was frozen before this task ran
        return batch.sweep

    assert [tune_share.on_cluster(task, _Batch()) for _ in range(3)] == ["s"] * 3
    assert seen == [0, 1, 1]  # the first task ran unfrozen (it loads the space), then once only
    assert freezes == [1]


def _frozen_objects(_: object) -> tuple[int, int]:
    return gc.get_freeze_count(), os.getpid()


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a --jobs 2 pool needs two cores (CI has them)")
def test_a_real_pool_worker_runs_frozen_and_this_process_does_not():
    before = gc.get_freeze_count()
    executor = make_executor(2, None, in_process=False, ref=FactoryRef(FILE, "SPACE"))
    try:
        frozen, pid = executor.result(executor.submit(_frozen_objects, None))
    finally:
        executor.close()
    assert pid != os.getpid() and frozen > 10_000  # the worker's start-up heap (the tuner's imports, the space)
    assert gc.get_freeze_count() == before  # the user's process is left as it was
