"""Compile speed: in-process GEMM compile, a cache hit, and `npu-opt compile examples/` wall time.

Every row is the min and the median of >= 5 rounds in which the row and its baseline take
turns (a busy spell of the machine hits both alike); every ratio is against a baseline
measured in the same run:
- cold: the compile of examples/gemm.py, and of the same kernel with K x8 (still legal), as
  the first compile of a fresh process (imports done before the clock starts, every memo
  empty because the process is new), ratio K x8 / base;
- the same two compiles in process with every memo and cache cleared (`clear_caches`),
  against the in-process base;
- `npu_opt.compile` of the GEMM (the artifact with its records and makespan), against the
  bare compile: it reuses the emitted artifact, it no longer parses its own text;
- a cache hit of `npu-opt compile` on an unchanged file, in process, against the bare compile;
- wall time of `npu-opt compile examples/ -o DIR` (process start included), cold (a fresh
  DIR each run: every kernel compiled) and warm (DIR compiled before: answered from its run
  record, a replay), against `python -c "import npu_opt"` (the interpreter start floor) and
  `python -c "from npu_opt import *"` (the DSL every kernel file imports).
  benchmarks/bench_startup.py measures start-up in CPU time, and the one-kernel verdict.
Run: python benchmarks/bench_compile.py [--rounds N]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_check import clear_caches, interleaved, load, min_median, with_axes  # noqa: E402

import npu_opt  # noqa: E402
from npu_opt.compile_api import compile_kernel  # noqa: E402
from driver.compile_command import run_compile  # noqa: E402


def _hit(kernel_file: str, out: str) -> None:
    """A cache hit of `npu-opt compile`, which must succeed: a failed load is no hit (a
    stat hook that recursed once made this row time a RecursionError)."""
    status = run_compile([kernel_file], out, jobs=1, out=io.StringIO())
    assert status == 0, status


def wall_rounds(cmds: dict[str, list[str]], rounds: int) -> dict[str, list[float]]:
    """Wall seconds of each command over `rounds` rounds, the commands taking turns
    (`{FRESH}`: a new directory each run). Children write bytecode as an installed package
    has it (PYTHONDONTWRITEBYTECODE dropped), and one warm-up round runs first."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    seen: dict[str, list[float]] = {name: [] for name in cmds}
    for k in range(rounds + 1):
        for name, cmd in cmds.items():
            with tempfile.TemporaryDirectory() as tmp:
                args = [a.replace("{FRESH}", f"{tmp}/out") for a in cmd]
                start = time.perf_counter()
                subprocess.run(args, check=True, capture_output=True, cwd=ROOT, env=env)
                if k:
                    seen[name].append(time.perf_counter() - start)
    return seen


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = max(5, parser.parse_args().rounds)
    source = (ROOT / "examples" / "gemm.py").read_text()
    base = load(source, "bc_gemm_base")
    big = load(with_axes(512, 512, 512), "bc_gemm_k8")
    assert compile_kernel(base).status == "ok" and compile_kernel(big).status == "ok"
    rows: list[tuple[str, list[float], list[float]]] = []  # (label, times, baseline times)

    fresh = cold_process((64, 512), rounds)
    rows.append(("compile GEMM, cold (fresh process)", fresh[64], fresh[64]))
    rows.append(("compile GEMM K x8, cold (fresh process)", fresh[512], fresh[64]))

    def cleared(fn, kernel):
        def go():
            clear_caches()
            fn(kernel)
        return go

    kernel_file = str(ROOT / "examples" / "gemm.py")
    with tempfile.TemporaryDirectory() as out:
        run_compile([kernel_file], out, jobs=1, out=io.StringIO())
        t = interleaved({
            "base": cleared(compile_kernel, base), "big": cleared(compile_kernel, big),
            "public": cleared(npu_opt.compile, base),
            "hit": lambda: _hit(kernel_file, out),
        }, rounds)
    rows.append(("compile GEMM, caches cleared in process", t["base"], t["base"]))
    rows.append(("compile GEMM K x8, caches cleared in process", t["big"], t["base"]))
    rows.append(("npu_opt.compile GEMM (artifact, records, makespan)", t["public"], t["base"]))
    rows.append(("npu-opt compile, cache hit (in process)", t["hit"], t["base"]))

    with tempfile.TemporaryDirectory() as tmp:
        cli = [sys.executable, "-m", "npu_opt", "compile", "examples/", "--jobs", "2", "-o"]
        subprocess.run([*cli, f"{tmp}/out"], check=True, capture_output=True, cwd=ROOT)
        w = wall_rounds({"floor": [sys.executable, "-c", "import npu_opt"],
                         "star": [sys.executable, "-c", "from npu_opt import *"],
                         "cold": [*cli, "{FRESH}"], "warm": [*cli, f"{tmp}/out"]}, rounds)
        count = len(json.loads(Path(f"{tmp}/out/manifest.json").read_text())["kernels"])
    rows.append(("python -c 'import npu_opt' (floor)", w["floor"], w["floor"]))
    rows.append(("python -c 'from npu_opt import *'", w["star"], w["floor"]))
    rows.append((f"npu-opt compile examples/, cold ({count} kernels)", w["cold"], w["floor"]))
    rows.append(("  the same against the star import", w["cold"], w["star"]))
    rows.append(("npu-opt compile examples/, warm (replay, goal 1.3)", w["warm"], w["floor"]))
    rows.append(("  the same against the star import", w["warm"], w["star"]))
    print(f"{rounds} rounds, each row interleaved with its baseline")
    print(f"{'benchmark':52} {'min':>10} {'median':>10} {'ratio min':>10} {'median':>7}")
    for name, times, ref in rows:
        (lo, mid), (rlo, rmid) = min_median(times), min_median(ref)
        print(f"{name:52} {lo * 1e3:8.2f}ms {mid * 1e3:8.2f}ms {lo / rlo:10.2f} {mid / rmid:7.2f}")


if __name__ == "__main__":
    main()
