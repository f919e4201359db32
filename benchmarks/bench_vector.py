"""Vector Engine kernels of many rows on the cpu backend and the VISA interpreter (issue #29).

Kernels: examples/softmax_rows.py and examples/masked_softmax.py at R = 1024, and
examples/rmsnorm.py at the largest R its VRF holds (R = 32: at R >= 64 the kernel stores x,
R x 64 f32, in one slice's VRF, which is refused, VRF-1). Printed per kernel, each ratio
against a baseline timed in the same rounds (the paths take turns, the order rotating round
by round, `--rounds` rounds, at least 5; min and median of each):
- the cpu backend (`npu_opt.run`, warm: its trace is cached) against a float32 numpy version
  of the kernel's math (goal for softmax_rows: <= 20x), in wall time and in process CPU time
  (steadier on a shared machine);
- the VISA interpreter on the parsed artifact (compile and parse excluded) against the cpu
  backend (goal: <= 1.5x), in wall time and in process CPU time.
Both results are first checked equal bit for bit (cpu against the interpreter), and close to
the numpy version. The machine may be shared: read the ratios, not the times.
Run: python benchmarks/bench_vector.py [--rounds N] [--size R] [kernel ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from bench_check import load  # noqa: E402

import npu_opt  # noqa: E402
from visa import parse_visa  # noqa: E402
from visa.interp import execute_inout  # noqa: E402

THRESHOLD = -2.0  # examples/masked_softmax.py


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def masked_softmax(x: np.ndarray) -> np.ndarray:
    keep = x >= THRESHOLD
    e = np.where(keep, np.exp(x - np.where(keep, x, -np.inf).max(axis=1, keepdims=True)), np.float32(0))
    return e / e.sum(axis=1, keepdims=True)


def rmsnorm(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + np.float32(1e-6)) * g


# name -> (example file, kernel function, numpy version, rows)
KERNELS = {
    "softmax_rows": ("softmax_rows.py", "softmax_rows_kernel", softmax, 1024),
    "masked_softmax": ("masked_softmax.py", "masked_softmax_kernel", masked_softmax, 1024),
    "rmsnorm": ("rmsnorm.py", "rmsnorm_kernel", rmsnorm, 32),
}


def kernel_at(name: str, rows: int):
    file, fn, _, _ = KERNELS[name]
    source = (ROOT / "examples" / file).read_text()
    if "axes(R=8, C=64)" not in source:
        raise SystemExit(f"examples/{file} no longer declares axes(R=8, C=64)")
    return load(source.replace("axes(R=8, C=64)", f"axes(R={rows}, C=64)"), f"bench_vector_{name}_{rows}", fn)


def inputs(name: str, rows: int) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((rows, 64)).astype(np.float32)
    if name == "masked_softmax":
        x[:, 0] = np.abs(x[:, 0])  # every row keeps a cell
    return [x, rng.standard_normal(64).astype(np.float32)] if name == "rmsnorm" else [x]


def turns(fns: dict, n: int) -> dict[str, tuple[list[float], list[float]]]:
    """(wall, process CPU) times of every fn of `fns`, taking turns for `n` rounds, the
    order rotating round by round."""
    names = list(fns)
    seen: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in names}
    for r in range(n):
        for k in names[r % len(names):] + names[:r % len(names)]:
            w, c = time.perf_counter(), time.process_time()
            fns[k]()
            seen[k][0].append(time.perf_counter() - w)
            seen[k][1].append(time.process_time() - c)
    return seen


def ratio(label: str, times: list[float], base: list[float], goal: float | None) -> str:
    lo, med = min(times) / min(base), statistics.median(times) / statistics.median(base)
    text = f"{label} {lo:7.2f}x ({med:7.2f}x)"
    return text + (f" goal <= {goal:g}x: {'met' if lo <= goal else 'MISSED'}" if goal else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"kernels (default: all of {', '.join(KERNELS)})")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--size", type=int, default=0, help="rows R (default: per kernel)")
    opts = ap.parse_args()
    n = max(opts.rounds, 5)
    print(f"numpy {np.__version__}; {n} rounds, taking turns; ratio of the min (of the median)")
    for name in opts.names or KERNELS:
        _, _, reference, default_rows = KERNELS[name]
        rows = opts.size or default_rows
        kernel = kernel_at(name, rows)
        arrays = inputs(name, rows)
        artifact = parse_visa(npu_opt.compile(kernel).text)
        cpu = npu_opt.run(kernel, *arrays)
        interp = execute_inout(artifact, arrays)[0][0]
        if not np.array_equal(np.asarray(cpu).view(np.uint32), np.asarray(interp).view(np.uint32)):
            raise SystemExit(f"{name}: cpu and interpreter differ")
        np.testing.assert_allclose(cpu, reference(*arrays), rtol=1e-5, atol=1e-6)
        t = turns({"numpy": lambda: reference(*arrays), "cpu": lambda: npu_opt.run(kernel, *arrays),
                   "interp": lambda: execute_inout(artifact, arrays)}, n)
        (w_np, c_np), (w_cpu, c_cpu), (w_int, c_int) = t["numpy"], t["cpu"], t["interp"]
        print(f"{name} R={rows}: numpy {min(w_np) * 1e3:.3f} ms, cpu {min(w_cpu) * 1e3:.2f} ms, "
              f"interp {min(w_int) * 1e3:.2f} ms (min wall)")
        print("  " + ratio("cpu / numpy      wall", w_cpu, w_np, 20 if name == "softmax_rows" else None))
        print("  " + ratio("cpu / numpy       CPU", c_cpu, c_np, None))
        print("  " + ratio("interp / cpu     wall", w_int, w_cpu, 1.5))
        print("  " + ratio("interp / cpu      CPU", c_int, c_cpu, 1.5))
    return 0


if __name__ == "__main__":
    sys.exit(main())
