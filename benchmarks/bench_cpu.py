"""Speed and memory of the `cpu` backend on 512 x 512 x 512 GEMMs, against BLAS.

Printed, each ratio against a baseline measured in the same run:
- exact i8 GEMM (i32 result, `gemm_i8_512_kernel`) vs a float64 BLAS matmul of the same
  inputs (operands converted beforehand; exact here, since |sum| <= 2^23) in wall time
  with BLAS at its default threads (every BLAS thread working for the baseline), the two
  taking turns in 20 rounds (min and median); goal <= 2x; then the run with the BLAS pool
  at 1, 2 and 4 threads around it, the order rotating round by round (goal: never slower
  with more);
- bit-exact bf16 GEMM in hardware order (f32 result, `gemm_bf16_512_kernel`) vs a
  float32 BLAS matmul of the decoded inputs; goal <= 10x; by the compiled float core
  (numba, backends/cpu/contract_jit.py) and by the numpy core, side by side, in wall
  time and in process CPU time (every thread counted), and the CPU time inside the
  contraction and inside the float core alone (`contract_jit.core` /
  `contract_float.float_core`: the tree and time sums, operand gathers included);
- peak memory of the bf16 GEMM, by tracemalloc (numpy reports its buffers to it); goal < 1 GiB.
Both results are first checked once, exactly, against npu_opt.testing.oracles. Times are the best
of several runs. Kernels: benchmarks/kernels_512.py (examples 4 and 4b with K = 512).
Then `--drawn N` GEMMs (plain and tiled) drawn by benchmarks/drawn_kernels.py (seed
`--seed`), bf16 -> f32 at 1 and 2 threads against BLAS, judged on the worst
(benchmarks/bench_cpu_drawn.py's section; goal <= 3x).
Run: python benchmarks/bench_cpu.py [--drawn N] [--seed S]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backends.cpu import CpuBackend, CpuOptions, contract_fast, contract_float, contract_jit  # noqa: E402
from ir.exact_kernels import compile as kernels_compile  # noqa: E402
from npu_opt.testing import oracles  # noqa: E402
from driver.discover import discover  # noqa: E402
from npu_opt.run import run  # noqa: E402
from npu_opt.testing import assert_close  # noqa: E402
from benchmarks.bench_cpu_drawn import bf16_section as drawn_bf16_section  # noqa: E402

KERNELS = ROOT / "benchmarks" / "kernels_512.py"
SIZE = 512
GiB = 1 << 30


def load_kernels() -> dict:
    found = discover([str(KERNELS)])
    if found.errors:
        raise SystemExit(f"cannot load {KERNELS}: {found.errors[0].message}")
    return {k.name: k for k in found.kernels}


def best(fn, repeat: int, clock=time.perf_counter) -> float:
    """Best time of `repeat` calls, in seconds: wall time, or process CPU time (every
    thread) with `clock=time.process_time`."""
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times)


def turns(fns: dict, repeat: int) -> dict[str, tuple[list[float], list[float]]]:
    """Per fn of `fns`: (wall times, process CPU times, every thread's) of `repeat` rounds,
    the fns taking turns and the order rotating round by round (so neither the machine's
    load nor a warm cache favours one)."""
    names = list(fns)
    seen: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in names}
    for r in range(repeat):
        for name in names[r % len(names):] + names[:r % len(names)]:
            wall, cpu = time.perf_counter(), time.process_time()
            fns[name]()
            seen[name][0].append(time.perf_counter() - wall)
            seen[name][1].append(time.process_time() - cpu)
    return seen


def spread(times: list[float]) -> str:
    return f"min {min(times) * 1e3:.1f} ms, median {statistics.median(times) * 1e3:.1f} ms"


def peak_bytes(fn) -> int:
    """Peak traced allocation while `fn` runs (inputs already allocated are not counted)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def line(label: str, seconds: float, baseline: float | None = None, goal: float | None = None) -> None:
    text = f"  {label:58} {seconds * 1e3:9.1f} ms"
    if baseline is not None:
        ratio = seconds / baseline
        verdict = "" if goal is None else (f"  (goal <= {goal:g}x: {'met' if ratio <= goal else 'MISSED'})")
        text += f"  {ratio:7.2f}x{verdict}"
    print(text)


def interleaved(cores: dict, fn, repeat: int) -> dict[str, tuple[float, ...]]:
    """Per backend of `cores`: the best wall time, process CPU time, CPU time inside
    `contract_fast.contract` and CPU time inside the float core alone (`contract_jit.core`
    or `contract_float.float_core`) of `fn(backend)`, the backends taking turns (so a
    change of the machine's load hits them alike)."""
    spent = [0.0, 0.0]
    patched = [(contract_fast, "contract", 0), (contract_jit, "core", 1), (contract_float, "float_core", 1)]
    originals = [getattr(mod, name) for mod, name, _ in patched]

    def timed(inner, slot):
        def call(*args, **kwargs):
            start = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[slot] += time.process_time() - start
        return call

    seen: dict[str, list[tuple[float, ...]]] = {name: [] for name in cores}
    for (mod, name, slot), inner in zip(patched, originals):
        setattr(mod, name, timed(inner, slot))
    try:
        for _ in range(repeat):
            for name, backend in cores.items():
                spent[:] = [0.0, 0.0]
                wall, cpu = time.perf_counter(), time.process_time()
                fn(backend)
                seen[name].append((time.perf_counter() - wall, time.process_time() - cpu, *spent))
    finally:
        for (mod, name, _), inner in zip(patched, originals):
            setattr(mod, name, inner)
    return {name: tuple(min(t[k] for t in times) for k in range(4)) for name, times in seen.items()}


def bf16_section(k_bf16, a_bf, w_bf, a64, w64, t_oracle_bf: float) -> None:
    """The bf16 GEMM by both float cores (the compiled one when numba is importable, and
    the numpy reference), in wall time and in process CPU time, against float32 BLAS."""
    print("bf16 GEMM, f32 result, hardware order:")
    jit = contract_jit.enabled(True)
    print(f"  compiled float core: {'numba ' + kernels_compile.numba_version() if jit else 'numba not importable'}")
    a_f32, w_f32t = a64.astype(np.float32), np.ascontiguousarray(w64.astype(np.float32).T)
    cores = {"numpy core": CpuBackend(CpuOptions(jit=False))}
    if jit:
        cores["compiled core"] = CpuBackend(CpuOptions(jit=True))
        got = [np.asarray(b.run(k_bf16, (a_bf, w_bf))).view(np.uint32) for b in cores.values()]
        assert np.array_equal(got[0], got[1]), "the compiled and the numpy float core differ"
        print("  the compiled and the numpy core give bit-identical results")
    base = turns({"blas": lambda: a_f32 @ w_f32t, **{name: (lambda b=b: b.run(k_bf16, (a_bf, w_bf)))
                                                      for name, b in cores.items()}}, 7)
    base_bf, base_cpu = min(base["blas"][0]), min(base["blas"][1])
    for name in cores:  # the baseline and the cores in the same rounds (the detail below is its own rounds)
        print(f"  {name} against float32 BLAS, same rounds: wall min {min(base[name][0]) / base_bf:.2f}x, median "
              f"{statistics.median(base[name][0]) / statistics.median(base['blas'][0]):.2f}x")
    line("baseline: float32 BLAS matmul (operands pre-decoded), wall", base_bf)
    line("baseline: float32 BLAS matmul, process CPU time", base_cpu)
    for name, (t_wall, t_cpu, t_contract, t_core) in interleaved(cores, lambda b: b.run(k_bf16, (a_bf, w_bf)),
                                                                 7).items():
        line(f"gemm_bf16_512_kernel, bit-exact, {name}, wall", t_wall, base_bf, 10)
        line(f"gemm_bf16_512_kernel, bit-exact, {name}, process CPU time", t_cpu, base_cpu, 10)
        line("  of which the contraction (contract_fast.contract), CPU time", t_contract, base_cpu)
        line("    of which the float core alone, CPU time", t_core, base_cpu)
    line("reference oracle gemm_bf16_oracle_exact (row-blocked)", t_oracle_bf, base_bf)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drawn", type=int, default=2, help="GEMMs drawn by benchmarks/drawn_kernels.py")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    kernels = load_kernels()
    k_i8, k_bf16 = kernels["gemm_i8_512_kernel"], kernels["gemm_bf16_512_kernel"]
    rng = np.random.default_rng(0)
    a_i8 = rng.integers(-128, 128, (SIZE, SIZE), dtype=np.int8)
    w_i8 = rng.integers(-128, 128, (SIZE, SIZE), dtype=np.int8)
    a_bf = oracles.f32_to_bf16_bits(rng.uniform(-1, 1, (SIZE, SIZE)).astype(np.float32))
    w_bf = oracles.f32_to_bf16_bits(rng.uniform(-1, 1, (SIZE, SIZE)).astype(np.float32))
    print(f"cpu backend, M = N = K = {SIZE}; numpy {np.__version__}, {os.cpu_count()} CPUs")

    print("verification (once, exact):")
    start = time.perf_counter()
    want_i8 = oracles.gemm_i8_oracle(a_i8, w_i8)
    t_oracle_i8 = time.perf_counter() - start
    assert_close(run(k_i8, a_i8, w_i8), want_i8, "i32")
    start = time.perf_counter()
    want_bf = oracles.gemm_bf16_oracle_exact(a_bf, w_bf)
    t_oracle_bf = time.perf_counter() - start
    a64 = oracles.bf16_bits_to_f32(a_bf).astype(np.float64)
    w64 = oracles.bf16_bits_to_f32(w_bf).astype(np.float64)
    assert_close(run(k_bf16, a_bf, w_bf), want_bf, "f32", operands=(a64[:, None, :], w64[None, :, :]))
    print("  i8 GEMM equals gemm_i8_oracle; bf16 GEMM is bit-identical to gemm_bf16_oracle_exact "
          "and within tolerance")

    print("i8 GEMM, i32 result (wall time; the BLAS baseline at its default threads, all of them working):")
    a_f64, w_f64t = a_i8.astype(np.float64), np.ascontiguousarray(w_i8.astype(np.float64).T)

    def blas_one():
        with threadpool_limits(1, "blas"):
            a_f64 @ w_f64t

    t = turns({"blas": lambda: a_f64 @ w_f64t, "blas1": blas_one, "run": lambda: run(k_i8, a_i8, w_i8)}, 20)
    base_i8, t_i8 = min(t["blas"][0]), min(t["run"][0])
    line("baseline: float64 BLAS matmul, default BLAS threads (operands pre-converted)", base_i8)
    print(f"    {spread(t['blas'][0])}; process CPU time {spread(t['blas'][1])}")
    line("float64 BLAS matmul, 1 BLAS thread", min(t["blas1"][0]), base_i8)
    line("npu_opt.run(gemm_i8_512_kernel), exact", t_i8, base_i8, 2)
    print(f"    {spread(t['run'][0])}; median ratio {statistics.median(t['run'][0]) / statistics.median(t['blas'][0]):.2f}x; "
          f"process CPU time {spread(t['run'][1])}")
    line("reference oracle gemm_i8_oracle (int64 numpy matmul)", t_oracle_i8, base_i8)

    def at(n):
        def go():
            with threadpool_limits(n, "blas"):
                run(k_i8, a_i8, w_i8)
        return go

    sweep = turns({n: at(n) for n in (1, 2, 4)}, 9)  # the order rotates: 1 2 4, 2 4 1, 4 1 2, ...
    by_threads = {n: min(walls) for n, (walls, _) in sweep.items()}
    for n in (1, 2, 4):
        line(f"npu_opt.run(gemm_i8_512_kernel) with the BLAS pool at {n} thread(s)", by_threads[n], base_i8)
        print(f"    {spread(sweep[n][0])}")
    worst = max(by_threads[2], by_threads[4]) / by_threads[1]
    print(f"  more BLAS threads / one: {worst:.2f}x  (goal <= 1.2x, noise allowed: "
          f"{'met' if worst <= 1.2 else 'MISSED'})")

    bf16_section(k_bf16, a_bf, w_bf, a64, w64, t_oracle_bf)

    peak = peak_bytes(lambda: run(k_bf16, a_bf, w_bf))
    verdict = "met" if peak < GiB else "MISSED"
    print(f"peak memory of the bf16 GEMM (tracemalloc): {peak / (1 << 20):.1f} MiB  (goal < 1024 MiB: {verdict})")
    if args.drawn:
        drawn_bf16_section(args.seed, args.drawn, 5, forms=("gemm", "tiled"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
