"""Issue 38 (1): what `npu_opt.run(kernel, ..., backend="visa")` costs per call in a test loop.

The kernel is benchmarks/kernels_512.py's 512 x 512 x 512 i8 GEMM. Each round, taking turns:
- cpu: `npu_opt.run(..., backend="cpu")` (the baseline);
- visa, every call afresh: the backend's caches emptied before the call (`clear_caches`), so
  it traces, lowers, emits, parses and runs, as every call did before the caches;
- visa, repeat: the call a test loop repeats (traced again, lowering and parsing answered
  from the caches).
Printed: medians (and minima) of each, and the ratios to cpu; the goal is that a test loop
pays the compile and the parse once, so a repeat visa call costs the interpreter's run plus
a trace. BLAS pools held to one thread.
Run: python benchmarks/bench_run_visa.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import npu_opt  # noqa: E402
from backends import visa_backend  # noqa: E402
from benchmarks.kernels_512 import gemm_i8_512_kernel as KERNEL  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (512, 512), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 512), dtype=np.int8)
    want = (a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32)

    def fresh():
        visa_backend.clear_caches()
        return npu_opt.run(KERNEL, a, w, backend="visa")

    runs = {"cpu": lambda: npu_opt.run(KERNEL, a, w, backend="cpu"), "visa afresh": fresh,
            "visa repeat": lambda: npu_opt.run(KERNEL, a, w, backend="visa")}
    times: dict[str, list[float]] = {n: [] for n in runs}
    print(f"kernel {KERNEL.name}; BLAS threads 1; load average {os.getloadavg()}")
    with threadpool_limits(1):
        for fn in runs.values():  # warm-up: numba compiles, the caches fill
            np.testing.assert_array_equal(fn(), want)
        for _ in range(args.rounds):
            for name, fn in runs.items():
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    base = statistics.median(times["cpu"])
    for name, t in times.items():
        med = statistics.median(t)
        print(f"{name:12} median {med * 1e3:7.1f} ms  min {min(t) * 1e3:7.1f} ms  {med / base:5.2f}x cpu")
    print(f"repeat / afresh: {statistics.median(times['visa repeat']) / statistics.median(times['visa afresh']):.2f}x")


if __name__ == "__main__":
    main()
