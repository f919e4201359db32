"""Issue 38 (3): the cpu backend on a batched bf16 GEMM without broadcast rows, against BLAS.

`batched_bf16_kernel` (benchmarks/kernels_batched.py: 256 independent 32 x 32 x 512
problems, one per slice, 2^27 products like the 512^3 GEMM) run bit-exact by the cpu
backend (compiled float core when numba is importable), against a batched float32 BLAS
matmul of the decoded operands (`np.matmul` over the batch), the two taking turns in 15
rounds. Printed: wall-time ratios, min and median (the verdict on the median), and the
goal (<= 3x). First checked once, bit for bit, against npu_opt.testing.oracles on four
batch entries. Threads: the BLAS pool at its default (stated), the backend's float threads
at its default.
Then `--drawn N` batched bf16 -> f32 kernels drawn by benchmarks/drawn_kernels.py (seed
`--seed`) at 1 and 2 threads, judged on the worst (benchmarks/bench_cpu_drawn.py's section).
Run: python benchmarks/bench_cpu_batched.py [--drawn N] [--seed S]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backends.cpu import CpuBackend, CpuOptions, contract_jit  # noqa: E402
from driver.discover import discover  # noqa: E402
from npu_opt.testing import oracles  # noqa: E402
from benchmarks.bench_cpu_drawn import bf16_section  # noqa: E402

GOAL = 3.0
ROUNDS = 15
B, M, N, K = 256, 32, 32, 512


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drawn", type=int, default=2, help="batched kernels drawn by benchmarks/drawn_kernels.py")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    found = discover([str(ROOT / "benchmarks" / "kernels_batched.py")])
    kernel = {k.name: k for k in found.kernels}["batched_bf16_kernel"]
    rng = np.random.default_rng(0)
    a = oracles.f32_to_bf16_bits(rng.uniform(-1, 1, (B, M, K)).astype(np.float32))
    w = oracles.f32_to_bf16_bits(rng.uniform(-1, 1, (B, N, K)).astype(np.float32))
    backend = CpuBackend(CpuOptions(jit=True))
    contract_jit.enabled(True)  # numba loaded before the rounds, as in a long process
    got = np.asarray(backend.run(kernel, (a, w)))
    for b in range(4):
        want = oracles.gemm_bf16_oracle_exact(a[b], w[b])
        assert np.array_equal(got[b].view(np.uint32), np.asarray(want).view(np.uint32)), f"batch {b} differs"
    a32 = oracles.bf16_bits_to_f32(a).astype(np.float32)
    w32t = np.ascontiguousarray(np.swapaxes(oracles.bf16_bits_to_f32(w).astype(np.float32), 1, 2))
    pools = ", ".join(f"{p['internal_api']} {p['num_threads']}" for p in threadpool_info()) or "none"
    print(f"batched bf16 GEMM, {B} x ({M} x {N} x {K}), 2^27 products, no broadcast rows; {os.cpu_count()} CPUs; "
          f"thread pools: {pools}; compiled core: {contract_jit.enabled(True)}")
    print("  bit-identical to gemm_bf16_oracle_exact on batch entries 0-3")
    times: dict[str, list[float]] = {"blas": [], "cpu": []}
    for _ in range(ROUNDS):
        for name, fn in (("blas", lambda: np.matmul(a32, w32t)), ("cpu", lambda: backend.run(kernel, (a, w)))):
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    lo, med = min(times["cpu"]) / min(times["blas"]), statistics.median(times["cpu"]) / statistics.median(times["blas"])
    print(f"  baseline: batched float32 BLAS matmul, wall median {statistics.median(times['blas']) * 1e3:.1f} ms")
    print(f"  cpu backend, bit-exact, wall median {statistics.median(times['cpu']) * 1e3:.1f} ms: "
          f"{med:.2f}x (min {lo:.2f}x); goal <= {GOAL:g}x: {'met' if med <= GOAL else 'NOT met'}")
    if args.drawn:
        bf16_section(args.seed, args.drawn, 5, forms=("batched",))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
