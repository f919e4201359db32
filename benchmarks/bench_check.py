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
import statistics
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
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
    """Forget every memoised answer of the compiler's modules (the memos of ir/memo.py and
    every `functools` cache of a module of the compiler's packages), as a fresh process has
    them. The command line's own caches stay (driver.deps keeps a cache under a file-access
    hook, which must not be emptied while the hook is in place)."""
    from ir.memo import clear_memos

    clear_memos()
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in PACKAGES:
            continue
        for value in list(vars(module).values()):
            if not isinstance(value, type) and callable(getattr(value, "cache_clear", None)) \
                    and getattr(value, "__module__", None) == name:
                value.cache_clear()


PACKAGES = ("npu_opt", "ir", "tu_ops", "visa", "backends")


def interleaved(variants: dict[str, Callable[[], object]], rounds: int = 5,
                clock: Callable[[], float] = time.perf_counter) -> dict[str, list[float]]:
    """Seconds of each variant over `rounds` rounds, every round running each variant once in
    turn (a busy spell of the machine hits them all alike)."""
    seen: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            start = clock()
            fn()
            seen[name].append(clock() - start)
    return seen


def min_median(times: list[float]) -> tuple[float, float]:
    return min(times), statistics.median(times)


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
