"""VISA interpreter versus the cpu backend on every GEMM example and on the 512^3 GEMMs of
benchmarks/kernels_512.py (goal: interpreter <= 1.5x cpu).

For each kernel both paths run on the same random inputs; the outputs are checked equal
bit for bit once (that run also compiles numba's kernels: both are timed warm; both paths'
compiled cores are loaded first, so every kernel takes them on both), then timed
in `--repeat` rounds (at least 5) in which the two take turns (which goes first rotating),
so a change of the shared machine's load hits both alike; min and median are printed. The
cpu time is the baseline of the ratio (same rounds). The interpreter is timed on an
already parsed artifact (compile and parse excluded); `npu_opt.run` caches its trace, so
the cpu side is timed warm too. Two ratios per kernel: wall time, and process CPU time
(every thread's, so it does not flatter a path that spreads over more cores, and it is
steadier on a shared machine).
Run: python benchmarks/bench_interp.py [--repeat N] [kernel ...]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import ml_dtypes
import numpy as np

import npu_opt
from backends.cpu import contract_jit as cpu_jit
from npu_opt.compile_api import compile_kernel
from driver.discover import discover
from visa import parse_visa
from visa.interp.fast import contract_jit as interp_jit
from visa.interp import execute_inout

ROOT = Path(__file__).resolve().parents[1]


def inputs(kernel, rng):
    arrays = []
    for _, t in kernel.signature().params:
        shape = tuple(f.extent for f in t.element.factors()) or (1,)
        d = str(t.dtype)
        if d == "bf16":
            arrays.append(rng.uniform(-1, 1, shape).astype(np.float32).astype(ml_dtypes.bfloat16))
        elif d == "f32":
            arrays.append(rng.uniform(-1, 1, shape).astype(np.float32))
        else:
            arrays.append(rng.integers(-128, 128, shape, dtype=np.int8))
    return arrays


def raw(x):
    outs = x if isinstance(x, tuple) else (x,)
    return [np.ascontiguousarray(o).view(np.uint8).tobytes() for o in outs]


def interpret(artifact, arrays):
    """The interpreter's results, then the final contents of the in-out parameters (what
    `npu_opt.run` returns for them)."""
    results, finals = execute_inout(artifact, arrays)
    out = results + finals
    return out[0] if len(out) == 1 else out


def interleaved(fns: list, repeat: int) -> list[tuple[list[float], list[float]]]:
    """Per fn of `fns`: (wall times, process CPU times) of `repeat` rounds, the fns taking
    turns within each round, which goes first rotating round by round (neither a warm
    cache nor the machine's load favours one), in seconds."""
    seen: list[tuple[list[float], list[float]]] = [([], []) for _ in fns]
    for r in range(repeat):
        for k in [*range(r % len(fns), len(fns)), *range(r % len(fns))]:
            walls, cpus = seen[k]
            w, c = time.perf_counter(), time.process_time()
            fns[k]()
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
    return seen


def gemm_kernels() -> dict:
    files = sorted(str(p) for p in (ROOT / "examples").glob("gemm*.py")) + [str(ROOT / "benchmarks" / "kernels_512.py")]
    found = discover(files)
    if found.errors:
        raise SystemExit(f"cannot load the GEMM examples: {found.errors[0].message}")
    return {k.name: k for k in found.kernels}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="kernels to run (default: every GEMM example)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    kernels = gemm_kernels()
    # both paths take their compiled cores from the first kernel on (each loads them on its
    # own only for a large contraction, or once loaded: otherwise the kernel order decides)
    if not (cpu_jit.enabled(True) and interp_jit.enabled(1 << 40)):
        print("numba is not importable: both paths run their numpy cores")
    rng = np.random.default_rng(0)
    repeat = max(args.repeat, 5)
    print(f"{repeat} interleaved rounds; ratio interp / cpu of the min (and of the median)")
    print(f"{'kernel':24} {'cpu wall':>9} {'interp':>9} {'ratio':>13}   {'cpu CPU':>9} {'interp':>9} {'ratio':>13}")
    worst = 0.0
    for name in args.names or kernels:
        kernel = kernels[name]
        arrays = inputs(kernel, rng)
        artifact = parse_visa(compile_kernel(kernel).text)
        cpu = npu_opt.run(kernel, *[a.copy() for a in arrays])
        assert raw(cpu) == raw(interpret(artifact, arrays)), name  # also warms numba
        (w_cpu, c_cpu), (w_int, c_int) = interleaved(
            [lambda: npu_opt.run(kernel, *[a.copy() for a in arrays]), lambda: interpret(artifact, arrays)], repeat)
        med = statistics.median
        worst = max(worst, min(c_int) / min(c_cpu))
        print(f"{name:24} {min(w_cpu) * 1e3:7.1f}ms {min(w_int) * 1e3:7.1f}ms {min(w_int) / min(w_cpu):5.2f} "
              f"({med(w_int) / med(w_cpu):5.2f})   {min(c_cpu) * 1e3:7.1f}ms {min(c_int) * 1e3:7.1f}ms "
              f"{min(c_int) / min(c_cpu):5.2f} ({med(c_int) / med(c_cpu):5.2f})")
    print(f"worst CPU-time ratio of the min {worst:.2f} (goal <= 1.5)")

if __name__ == "__main__":
    main()
