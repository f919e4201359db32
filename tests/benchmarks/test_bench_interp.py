"""benchmarks/bench_interp.py measures each kernel in a fresh process of its own (issue 61:
in one process the cpu backend's time on a kernel depended on the kernels run before it, by
as much as the goal's margin)."""

from __future__ import annotations

import os

import numpy as np

from benchmarks import bench_interp


def test_each_kernel_is_measured_in_a_process_of_its_own() -> None:
    rows = [bench_interp.isolated(name, rounds=5, drawn=0, seed=1) for name in ("dot_product_kernel", "gemv_kernel")]
    pids = [row["pid"] for row in rows]
    assert len(set(pids)) == len(pids) and os.getpid() not in pids
    assert [row["name"] for row in rows] == ["dot_product_kernel", "gemv_kernel"]
    for row in rows:
        # the measuring process held its BLAS pools to one thread and states the workers
        assert row["blas"] and set(row["blas"]) == {1}
        assert "the cpu backend's own workers" in row["threads"]
        for clock in ("wall", "cpu"):
            low, mid = bench_interp.ratios(row, clock)
            assert 0 < low < 100 and 0 < mid < 100


def test_rounds_alternate_and_run_to_the_budget_or_the_cap() -> None:
    # a run of five rounds flipped a verdict (issue 61): rounds go on past `repeat` while
    # the budget lasts, at most `cap`, the two paths alternating which goes first
    order: list[str] = []
    fns = [lambda: order.append("cpu"), lambda: order.append("interp")]
    (_, c_cpu), (_, c_int) = bench_interp.interleaved(fns, 3, 1)
    assert len(c_cpu) == len(c_int) == 3 and order == ["cpu", "interp", "interp", "cpu", "cpu", "interp"]
    order.clear()
    (_, c_cpu), (_, c_int) = bench_interp.interleaved(fns, 3, 2, budget=1e9, cap=7)
    assert len(c_cpu) == len(c_int) == 7 and len(order) == 28


def test_pooled_rounds_give_the_median_ratio_and_its_interval() -> None:
    rng = np.random.default_rng(5)
    rows = []
    for pid in (11, 12):
        cpu, interp = rng.uniform(1.0, 1.2, 9), rng.uniform(1.3, 1.6, 9)
        rows.append(dict(name="k", pid=pid, rounds=dict(cpu=list(cpu), interp=list(interp)),
                         cpu=dict(cpu=[np.median(cpu), cpu.min()], interp=[np.median(interp), interp.min()])))
    row = bench_interp.pooled(rows)
    cpu = np.concatenate([r["rounds"]["cpu"] for r in rows])
    interp = np.concatenate([r["rounds"]["interp"] for r in rows])
    assert row["pids"] == [11, 12] and len(row["rounds"]["cpu"]) == 18
    assert bench_interp.ratios(row, "cpu") == (interp.min() / cpu.min(), np.median(interp) / np.median(cpu))
    assert row["each"] == [np.median(r["rounds"]["interp"]) / np.median(r["rounds"]["cpu"]) for r in rows]
    low, high = bench_interp.interval(list(interp), list(cpu))
    # a resample's medians lie among its rounds' times
    assert interp.min() / cpu.max() <= low <= np.median(interp) / np.median(cpu) <= high <= interp.max() / cpu.min()
    # the same rounds, the same interval; twice the interpreter's times, twice the interval
    assert bench_interp.interval(list(interp), list(cpu)) == (low, high)
    assert bench_interp.interval(list(2 * interp), list(cpu)) == (2 * low, 2 * high)
    assert bench_interp.interval([3.0] * 7, [2.0] * 7) == (1.5, 1.5)
    # near the line: the interval holds the goal or the median is within NEAR of it
    assert bench_interp.near(row)
    far = dict(row, rounds=dict(cpu=[1.0] * 9, interp=[1.0] * 9), cpu=dict(cpu=[1.0, 1.0], interp=[1.0, 1.0]))
    assert not bench_interp.near(far)
