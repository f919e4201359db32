"""Compile time of a kernel that repeats the same stages, against the number of repeats
(issue 60 item 6: repeated per-op lowering work is done once per distinct op).

The kernel: the port of the reference's matmul_16384.rs (tests/loops/matmul_16384.py) with
its tile loops unrolled, T = 1, 2, 4, 8 output tiles of 1024 x 64 (B = 16384). Each tile
is 40 records of 13 programs: four custom-broadcast switches, four inter-transposes, four
transposes, an inter-slice reduction per quarter, pair adds and a cluster reduce-scatter,
the same in every tile but for addresses and value numbers.
- memos on: the compiler as it runs (ir/memo.py); a repeated switch, unzip or commit window
  asks questions it has answered for the tile before;
- memos off (`memos_disabled`): every op works everything out afresh, as each repeated op
  did before these memos: the baseline, measured in the same run.
Every compile starts with every cache cleared (`bench_check.clear_caches`, as a fresh
process). Printed per T: compile seconds (best of the rounds; each round compiles every T
in turn, both ways), the cost of one more tile ((t(T) - t(1)) / (T - 1)), and memos off
over memos on. The rolled kernel (both loops `ctx.loop`) is shown beside: its cost does not
follow T at all.
Run: python benchmarks/bench_repeated_ops.py [--rounds N] [--max T]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_check import clear_caches  # noqa: E402

from ir.memo import memos_disabled  # noqa: E402
from npu_opt.compile_api import compile_kernel  # noqa: E402
from tests.loops import matmul_16384 as port  # noqa: E402


def _compile(kernel, memos: bool) -> float:
    clear_caches()
    gc.collect()
    start = time.perf_counter()
    if memos:
        status = compile_kernel(kernel).status
    else:
        with memos_disabled():
            status = compile_kernel(kernel).status
    seconds = time.perf_counter() - start
    if status != "ok":
        raise SystemExit(f"{kernel.name} did not compile: {status}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max", type=int, default=8)
    args = parser.parse_args()
    counts = [t for t in (1, 2, 4, 8) if t <= args.max]
    kernels = {t: port.sized(t, 1) for t in counts}
    _compile(kernels[1].matmul_unrolled, True)    # import and build everything once
    best = {(t, mode): float("inf") for t in counts for mode in ("on", "off", "rolled")}
    for _ in range(args.rounds):
        for t in counts:
            best[t, "on"] = min(best[t, "on"], _compile(kernels[t].matmul_unrolled, True))
            best[t, "off"] = min(best[t, "off"], _compile(kernels[t].matmul_unrolled, False))
            best[t, "rolled"] = min(best[t, "rolled"], _compile(kernels[t].matmul_rolled, True))
    print("matmul_16384 port, T output tiles unrolled (compile seconds, best of the rounds)")
    print(f"  {'T':>3} {'memos on':>9} {'+1 tile':>8} {'memos off':>10} {'+1 tile':>8} {'off/on':>7} {'rolled':>7}")
    for t in counts:
        on, off = best[t, "on"], best[t, "off"]
        more = [(best[t, m] - best[1, m]) / (t - 1) if t > 1 else float("nan") for m in ("on", "off")]
        print(f"  {t:>3} {on:>9.2f} {more[0]:>8.2f} {off:>10.2f} {more[1]:>8.2f} {off / on:>7.2f} "
              f"{best[t, 'rolled']:>7.2f}")


if __name__ == "__main__":
    main()
