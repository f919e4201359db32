"""Compile speed: in-process GEMM compile, a cache hit, and `npu-opt compile examples/` wall time.

Printed with ratios against baselines measured in the same run:
- full compile (trace, lower, verify, emit) of examples/gemm.py, and of the same kernel
  with K x8 (still legal), ratio against the base: cold, as the first compile of a fresh
  process (5 rounds, the two taking turns, min and median), and in process with the
  mapping caches cleared;
- `npu_opt.compile` of the GEMM (the artifact with its records and makespan), against the
  bare compile: it reuses the emitted artifact, it no longer parses its own text;
- a cache hit of `npu-opt compile` on an unchanged file, in process;
- wall time of `npu-opt compile examples/ -o DIR` (process start included), cold (a fresh
  DIR) and warm (DIR compiled before: answered from its run record), against the wall
  time of `python -c "import npu_opt"` (the interpreter start floor; goal <= 1.3x warm)
  and of `python -c "from npu_opt import *"` (the DSL every kernel file imports).
  benchmarks/bench_startup.py measures the same in CPU time, and older code beside it.
Run: python benchmarks/bench_compile.py
"""

from __future__ import annotations

import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_check import clear_caches, load, with_axes  # noqa: E402

import npu_opt  # noqa: E402
from npu_opt.compile_api import compile_kernel  # noqa: E402
from driver.compile_command import run_compile  # noqa: E402


def best(fn, number: int, repeat: int = 5) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def wall(cmd: list[str]) -> float:
    """The best wall time of 3 runs of `cmd` (`{FRESH}`: a new directory each run)."""
    runs = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            args = [a.replace("{FRESH}", f"{tmp}/out") for a in cmd]
            start = time.perf_counter()
            subprocess.run(args, check=True, capture_output=True, cwd=ROOT)
            runs.append(time.perf_counter() - start)
    return min(runs)


CHILD = """
import sys, time
sys.path.insert(0, {bench!r})
from bench_check import load, with_axes
from npu_opt.compile_api import compile_kernel
source = open({gemm!r}).read() if {k} == 64 else with_axes(512, 512, {k})
kernel = load(source, "bc_cold_child")
start = time.perf_counter()
assert compile_kernel(kernel).status == "ok"
print(time.perf_counter() - start)
"""


def cold_process(ks: tuple[int, ...], rounds: int = 5) -> dict[int, list[float]]:
    """Per K: the compile time of the GEMM as the first compile of a fresh process (imports
    done, every cache empty as a new process has it), `rounds` rounds, the Ks taking turns."""
    seen: dict[int, list[float]] = {k: [] for k in ks}
    for _ in range(rounds):
        for k in ks:
            code = CHILD.format(bench=str(ROOT / "benchmarks"), gemm=str(ROOT / "examples" / "gemm.py"), k=k)
            done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT)
            seen[k].append(float(done.stdout.split()[-1]))
    return seen


def main() -> None:
    source = (ROOT / "examples" / "gemm.py").read_text()
    base = load(source, "bc_gemm_base")
    big = load(with_axes(512, 512, 512), "bc_gemm_k8")
    assert compile_kernel(base).status == "ok" and compile_kernel(big).status == "ok"

    def cold(kernel):
        def go():
            clear_caches()
            compile_kernel(kernel)
        return go

    rows = []
    fresh = cold_process((64, 512))
    t_base, t_big = min(fresh[64]), min(fresh[512])
    rows.append(("compile GEMM, cold (fresh process), min", t_base, t_base))
    rows.append(("  median", statistics.median(fresh[64]), statistics.median(fresh[64])))
    rows.append(("compile GEMM, K x8, cold (fresh process), min", t_big, t_base))
    rows.append(("  median", statistics.median(fresh[512]), statistics.median(fresh[64])))
    rows.append(("compile GEMM, caches cleared in process", best(cold(base), 5), t_base))
    rows.append(("compile GEMM, K x8, caches cleared in process", best(cold(big), 5), t_base))

    def public(kernel):
        def go():
            clear_caches()
            npu_opt.compile(kernel)
        return go

    rows.append(("npu_opt.compile GEMM (artifact, records, makespan)", best(public(base), 5), t_base))
    with tempfile.TemporaryDirectory() as out:
        kernel_file = str(ROOT / "examples" / "gemm.py")
        run_compile([kernel_file], out, jobs=1, out=io.StringIO())
        t_hit = best(lambda: run_compile([kernel_file], out, jobs=1, out=io.StringIO()), 5)
    rows.append(("npu-opt compile, cache hit (in process)", t_hit, t_base))
    floor = wall([sys.executable, "-c", "import npu_opt"])
    star = wall([sys.executable, "-c", "from npu_opt import *"])
    with tempfile.TemporaryDirectory() as tmp:
        t_cold = wall([sys.executable, "-m", "npu_opt", "compile", "examples/", "-o", "{FRESH}", "--jobs", "2"])
        cli = [sys.executable, "-m", "npu_opt", "compile", "examples/", "-o", f"{tmp}/out", "--jobs", "2"]
        subprocess.run(cli, check=True, capture_output=True, cwd=ROOT)
        t_warm = wall(cli)
        count = len(json.loads(Path(f"{tmp}/out/manifest.json").read_text())["kernels"])
    rows.append(("python -c 'import npu_opt' (floor)", floor, floor))
    rows.append(("python -c 'from npu_opt import *'", star, floor))
    rows.append((f"npu-opt compile examples/, cold ({count} kernels)", t_cold, floor))
    rows.append(("  the same against the star import", t_cold, star))
    rows.append(("npu-opt compile examples/, warm (goal 1.3)", t_warm, floor))
    rows.append(("  the same against the star import", t_warm, star))
    print(f"{'benchmark':46} {'time':>10} {'ratio':>7}  (ratio vs the row's baseline)")
    for name, t, ref in rows:
        print(f"{name:46} {t * 1e3:8.2f}ms {t / ref:7.2f}")


if __name__ == "__main__":
    main()
