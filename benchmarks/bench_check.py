"""Check (trace + every [T] rule) time of the GEMM example versus larger axes.

Checking is symbolic, so its cost should not grow with tensor sizes. Printed:
- base: examples/gemm.py as shipped (I = J = 512, K = 64);
- K x8: the same kernel text with K = 512 (still a valid kernel: every rule runs);
- all x8: the same text with I = J = 4096, K = 512 (refused: 16384 slices, SPACE/DMA-3),
  shown for completeness since a refusal stops checking of the poisoned chain.
Warm: caches of factor forms filled (a re-check); cold: every cache cleared first.
The baseline of each ratio is the base time measured in the same run.
Run: python benchmarks/bench_check.py
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tempfile
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = (ROOT / "examples" / "gemm.py").read_text()


def load(source: str, name: str, kernel: str = "gemm_kernel"):
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return getattr(module, kernel)


def with_axes(i: int, j: int, k: int) -> str:
    return re.sub(r"axes\(I=\d+, J=\d+, K=\d+\)", f"axes(I={i}, J={j}, K={k})", SOURCE)


def clear_caches() -> None:
    """Forget every memoized factor form and plan, as in a fresh process."""
    from ir.mapping.factors import factors_of
    from ir.memo import clear_memos
    from ir.rules import dma, fetch

    factors_of.cache_clear()
    clear_memos()
    dma._burst.cache_clear()
    fetch.match_read.cache_clear()


def timed(kernel) -> tuple[float, float, int]:
    diagnostics = len(kernel.trace().diagnostics)
    warm = min(timeit.repeat(kernel.trace, number=20, repeat=5)) / 20

    def cold_trace():
        clear_caches()
        kernel.trace()

    cold = min(timeit.repeat(cold_trace, number=5, repeat=5)) / 5
    return warm, cold, diagnostics


def main() -> None:
    variants = [("base (I=J=512, K=64)", SOURCE), ("K x8 (K=512)", with_axes(512, 512, 512)),
                ("all x8 (I=J=4096, K=512)", with_axes(4096, 4096, 512))]
    results = [(label, *timed(load(src, f"bench_gemm_{n}"))) for n, (label, src) in enumerate(variants)]
    base_warm, base_cold = results[0][1], results[0][2]
    print(f"{'kernel':28} {'warm':>9} {'cold':>9} {'diags':>6} {'ratio warm':>11} {'ratio cold':>11}")
    for label, warm, cold, n in results:
        print(f"{label:28} {warm * 1e3:7.2f}ms {cold * 1e3:7.2f}ms {n:6d} "
              f"{warm / base_warm:11.2f} {cold / base_cold:11.2f}")


if __name__ == "__main__":
    main()
