"""Lowering time (emulate-dtypes, lower-ops, allocate-memory, verification after each
pass) of the GEMM example versus the same kernel with K x8.

Lowering reads factor forms and sequencer plans, never tensor data, so its cost should
not grow with the axes. Printed per variant: the warm time (caches of factor forms and
plans filled, as when lowering right after tracing) and the cold time (every cache
cleared first), and the ratio to the base. Goal: <= 20 ms each, ratio <= 1.2.
Run: python benchmarks/bench_lower.py
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_check import SOURCE, clear_caches, load, with_axes  # noqa: E402


def timed(kernel) -> tuple[float, float, int]:
    from tu_ops.lower import Options, lower

    traced = kernel.trace().kernel
    options = Options(axes=kernel.axes)
    records = len(list(lower(traced, options).ops()))
    warm = min(timeit.repeat(lambda: lower(traced, options), number=20, repeat=5)) / 20

    def cold() -> None:
        clear_caches()
        lower(traced, options)

    cold_time = min(timeit.repeat(cold, number=5, repeat=5)) / 5
    return warm, cold_time, records


def main() -> None:
    variants = [("base (I=J=512, K=64)", SOURCE), ("K x8 (K=512)", with_axes(512, 512, 512))]
    results = [(label, *timed(load(src, f"bench_lower_gemm_{n}"))) for n, (label, src) in enumerate(variants)]
    base_warm, base_cold = results[0][1], results[0][2]
    print(f"{'kernel':24} {'warm':>9} {'cold':>9} {'records':>8} {'ratio warm':>11} {'ratio cold':>11}")
    for label, warm, cold, n in results:
        print(f"{label:24} {warm * 1e3:7.2f}ms {cold * 1e3:7.2f}ms {n:8d} "
              f"{warm / base_warm:11.2f} {cold / base_cold:11.2f}")


if __name__ == "__main__":
    main()
