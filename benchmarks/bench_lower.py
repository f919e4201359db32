"""Lowering time (emulate-dtypes, lower-ops, allocate-memory, verification after each
pass) of the GEMM example versus the same kernel with K x8.

Lowering reads factor forms and sequencer plans, never tensor data, so its cost should
not grow with the axes. Printed per variant, min and median of the rounds (the variants
taking turns round by round): the warm time (memos filled, as when lowering right after
tracing) and the cold time (every memo and cache cleared first, as in a fresh process),
and the ratio to the base measured in the same run. Goal: <= 20 ms each, ratio <= 1.2.
Run: python benchmarks/bench_lower.py [--rounds N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_check import SOURCE, clear_caches, interleaved, load, min_median, with_axes  # noqa: E402
from tu_ops.lower import Options, lower  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    opts = parser.parse_args()
    variants = {"base (I=J=512, K=64)": SOURCE, "K x8 (K=512)": with_axes(512, 512, 512)}
    jobs, records = {}, {}
    for n, (label, src) in enumerate(variants.items()):
        kernel = load(src, f"bench_lower_gemm_{n}")
        traced, options = kernel.trace().kernel, Options(axes=kernel.axes)
        records[label] = len(list(lower(traced, options).ops()))

        def cold(traced=traced, options=options) -> None:
            clear_caches()
            lower(traced, options)

        jobs[f"{label} warm"] = lambda traced=traced, options=options: lower(traced, options)
        jobs[f"{label} cold"] = cold
    times = interleaved(jobs, opts.rounds)
    base = list(variants)[0]
    print(f"{opts.rounds} rounds, variants interleaved")
    print(f"{'kernel':24} {'warm min':>9} {'median':>8} {'cold min':>9} {'median':>8} {'records':>8} "
          f"{'ratio warm':>11} {'ratio cold':>11}")
    for label in variants:
        (wm, wd), (cm, cd) = min_median(times[f"{label} warm"]), min_median(times[f"{label} cold"])
        print(f"{label:24} {wm * 1e3:7.2f}ms {wd * 1e3:6.2f}ms {cm * 1e3:7.2f}ms {cd * 1e3:6.2f}ms "
              f"{records[label]:8d} {wm / min(times[f'{base} warm']):11.2f} {cm / min(times[f'{base} cold']):11.2f}")


if __name__ == "__main__":
    main()
