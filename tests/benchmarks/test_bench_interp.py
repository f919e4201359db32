"""benchmarks/bench_interp.py measures each kernel in a fresh process of its own (issue 61:
in one process the cpu backend's time on a kernel depended on the kernels run before it, by
as much as the goal's margin)."""

from __future__ import annotations

import os

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
