"""Issue 38 (4): the first run of a process, numpy path against the compiled (numba) path.

Each measurement is a fresh process that imports npu-opt, builds the inputs, then runs one
shipped 512 x 512 x 128 bf16 example once (`examples/gemm_bf16.py`, 2^25 products) on the
cpu backend or in the VISA interpreter, either on the numpy path (`NPU_OPT_CPU_JIT=0` /
`NPU_OPT_INTERP_JIT=0`) or compiled (numba loaded first, its kernels from the disk cache
that a warm-up process fills). Printed, as medians over `--runs` rounds taken in turns: the
CPU seconds of the whole process and of the run alone (numba's import and cache load
counted in the compiled run), and the ratio compiled / numpy. The run's CPU time is what
the one threshold of both backends trades (`ir.exact_kernels.compile.JIT_MIN`): below it a
fresh process keeps the numpy path. Each process runs the example twice; the second run
(numba and its kernels loaded) gives the contraction's own cost, so numba's load is the
first-run excess of the compiled path over the numpy path's, and the break-even
`2^25 x load / (numpy run - compiled run)` is the product count from which loading numba
pays for one contraction. The goal: the one threshold is the power of two nearest the
geometric mean of the two backends' break-evens. One more
process per backend starts with an empty disk cache (`NUMBA_CACHE_DIR`: a new directory):
what the cache saves. BLAS pools: one thread.
Run: python benchmarks/bench_first_run.py [--runs N]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ir.exact_kernels.compile import JIT_MIN  # noqa: E402

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
npu_opt.run(gemm_bf16.gemm_bf16_kernel, a, w, backend=backend)
c2 = time.process_time()
npu_opt.run(gemm_bf16.gemm_bf16_kernel, a, w, backend=backend)
c3 = time.process_time()
print(c2 - c0, c2 - c1, c3 - c2, "numba" in sys.modules)
"""


def _once(backend: str, mode: str, cache: str | None = None) -> tuple[float, float, float, bool]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    env["NPU_OPT_CPU_JIT" if backend == "cpu" else "NPU_OPT_INTERP_JIT"] = "0" if mode == "numpy" else "1"
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    code = CHILD.format(root=str(ROOT), backend=backend, mode=mode)
    if mode == "jit" and backend == "cpu":    # numba loaded first (counted in the run)
        code = code.replace("c1 = time.process_time()\n", "c1 = time.process_time()\n"
                            "from backends.cpu import contract_jit\ncontract_jit._compiled()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    total, run, second, numba = done.stdout.split()
    return float(total), float(run), float(second), numba == "True"


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
    evens = []
    for backend in ("cpu", "visa"):
        med = {m: [statistics.median(x[k] for x in seen[(backend, m)]) for k in range(3)] for m in ("numpy", "jit")}
        for m in ("numpy", "jit"):
            print(f"{backend:5} {m:6} process CPU {med[m][0]:.3f} s, the run (with numba's load) {med[m][1]:.3f} s, "
                  f"a second run {med[m][2]:.4f} s, numba loaded: {seen[(backend, m)][-1][3]}")
        print(f"{backend:5} compiled / numpy, the run: {med['jit'][1] / med['numpy'][1]:.2f}x; "
              f"the process: {med['jit'][0] / med['numpy'][0]:.2f}x; a second run: {med['jit'][2] / med['numpy'][2]:.2f}x")
        load = (med["jit"][1] - med["jit"][2]) - (med["numpy"][1] - med["numpy"][2])
        saved = med["numpy"][2] - med["jit"][2]
        even = (1 << 25) * load / saved if saved > 0 else float("inf")
        evens.append(math.log2(even))
        print(f"{backend:5} numba's load {load:.3f} s, saved a 2^25 run {saved * 1e3:.1f} ms: break-even "
              f"2^{evens[-1]:.1f} products")
        with tempfile.TemporaryDirectory() as empty:
            cold = _once(backend, "jit", empty)
        print(f"{backend:5} jit, empty disk cache: the run {cold[1]:.3f} s, {cold[1] / med['jit'][1]:.1f}x the run "
              f"from the cache (the cache's saving)")
    goal = round(sum(evens) / len(evens))
    print(f"threshold JIT_MIN 2^{JIT_MIN.bit_length() - 1} for both backends; goal: the power of two nearest the "
          f"break-evens' geometric mean, 2^{goal}: {'met' if JIT_MIN == 1 << goal else 'NOT met'}")


if __name__ == "__main__":
    main()
