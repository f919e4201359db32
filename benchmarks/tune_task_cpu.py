"""bench_tune.py's count of a dask worker's task CPU: what the worker spends on candidates,
apart from its event loop. These run on the workers (`Client.run`); they live in a module
the workers import by name, not in the benchmark's `__main__`, which dask would pickle by
value with every module it refers to."""

from __future__ import annotations

from typing import Any

import driver.tune_eval

__all__ = ["count_task_cpu", "task_cpu"]


def count_task_cpu() -> None:
    """Wrap this worker's tuner task function so the CPU seconds of its candidates add up. The
    client sends `evaluate_timed` by reference, so the name resolves to the wrapper here."""
    task = driver.tune_eval.evaluate_timed
    if getattr(task, "total", None) is not None:
        return

    def counted(batch: Any) -> Any:
        out = task(batch)
        counted.total += sum(out[0])  # type: ignore[attr-defined]
        counted.tasks += 1  # type: ignore[attr-defined]
        return out

    counted.total, counted.tasks = 0.0, 0  # type: ignore[attr-defined]
    driver.tune_eval.evaluate_timed = counted


def task_cpu() -> tuple[float, int]:
    """The CPU seconds this worker's candidates took since `count_task_cpu`, and how many
    tasks (batches) it ran: each costs the worker's event loop its messages (receiving the
    task, reporting it done, sending the result to the client), more on a loaded machine."""
    task = driver.tune_eval.evaluate_timed
    return getattr(task, "total", 0.0), getattr(task, "tasks", 0)
