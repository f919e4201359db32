"""Issue 38 (4): the first run of a process, numpy path against the compiled (numba) path.

Each measurement is a fresh process that imports npu-opt, builds the inputs, then runs one
shipped 512 x 512 x 128 bf16 example once (`examples/gemm_bf16.py`, 2^25 products) on the
cpu backend or in the VISA interpreter, either on the numpy path (`NPU_OPT_CPU_JIT=0` /
`NPU_OPT_INTERP_JIT=0`) or compiled (numba loaded first, its kernels from the disk cache
that a warm-up process fills). Printed, as medians over `--runs` rounds taken in turns: the
CPU seconds of the whole process and of the run alone (numba's import and cache load
counted in the compiled run), and the ratio compiled / numpy. The run's CPU time is what
the threshold (`JIT_MIN`: 2^26 products on the cpu backend, 2^24 in the interpreter) trades:
below it a fresh process keeps the numpy path. BLAS pools: one thread.
Run: python benchmarks/bench_first_run.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import os, sys, time
c0 = time.process_time()
sys.path.insert(0, {root!r}); sys.path.insert(0, {root!r} + "/examples")
import numpy as np, ml_dtypes
import npu_opt
import gemm_bf16
rng = np.random.default_rng(0)
a = rng.standard_normal((512, 128), dtype=np.float32).astype(ml_dtypes.bfloat16)
w = rng.standard_normal((512, 128), dtype=np.float32).astype(ml_dtypes.bfloat16)
backend, mode = {backend!r}, {mode!r}
c1 = time.process_time()
if mode == "jit" and backend == "cpu":
    from backends.cpu import contract_jit
    contract_jit._compiled()
npu_opt.run(gemm_bf16.gemm_bf16_kernel, a, w, backend=backend)
c2 = time.process_time()
print(c2 - c0, c2 - c1, "numba" in sys.modules)
"""


def _once(backend: str, mode: str) -> tuple[float, float, bool]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    env["NPU_OPT_CPU_JIT" if backend == "cpu" else "NPU_OPT_INTERP_JIT"] = "0" if mode == "numpy" else "1"
    done = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT), backend=backend, mode=mode)],
                          capture_output=True, text=True, env=env, check=True)
    total, run, numba = done.stdout.split()
    return float(total), float(run), numba == "True"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    cases = [(b, m) for b in ("cpu", "visa") for m in ("numpy", "jit")]
    print(f"gemm_bf16 (512 x 512 x 128 bf16, 2^25 products), first run of a fresh process; BLAS threads 1; "
          f"load average {os.getloadavg()}")
    for case in cases:  # warm-up: fills numba's disk cache and the bytecode
        _once(*case)
    seen: dict[tuple[str, str], list[tuple[float, float, bool]]] = {c: [] for c in cases}
    for _ in range(args.runs):
        for case in cases:
            seen[case].append(_once(*case))
    for backend in ("cpu", "visa"):
        med = {m: (statistics.median(x[0] for x in seen[(backend, m)]), statistics.median(x[1] for x in seen[(backend, m)]))
               for m in ("numpy", "jit")}
        for m in ("numpy", "jit"):
            print(f"{backend:5} {m:6} process CPU {med[m][0]:.3f} s, the run (with numba's load) {med[m][1]:.3f} s, "
                  f"numba loaded: {seen[(backend, m)][-1][2]}")
        print(f"{backend:5} compiled / numpy, the run: {med['jit'][1] / med['numpy'][1]:.2f}x; "
              f"the process: {med['jit'][0] / med['numpy'][0]:.2f}x")


if __name__ == "__main__":
    main()
