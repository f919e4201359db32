"""Check (trace + every [T] rule) time of the GEMM example versus larger axes.

Checking is symbolic, so its cost should not grow with tensor sizes. Printed:
- base: examples/gemm.py as shipped (I = J = 512, K = 64);
- K x8: the same kernel text with K = 512 (still a valid kernel: every rule runs);
- all x8: the same text with I = J = 4096, K = 512 (refused: 16384 slices, SPACE/DMA-3),
  shown for completeness since a refusal stops checking of the poisoned chain.
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


def load(source: str, name: str):
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.gemm_kernel


def with_axes(i: int, j: int, k: int) -> str:
    return re.sub(r"axes\(I=\d+, J=\d+, K=\d+\)", f"axes(I={i}, J={j}, K={k})", SOURCE)


def timed(kernel) -> tuple[float, int]:
    diagnostics = len(kernel.trace().diagnostics)
    best = min(timeit.repeat(kernel.trace, number=20, repeat=5)) / 20
    return best, diagnostics


def main() -> None:
    variants = [("base (I=J=512, K=64)", SOURCE), ("K x8 (K=512)", with_axes(512, 512, 512)),
                ("all x8 (I=J=4096, K=512)", with_axes(4096, 4096, 512))]
    results = [(label, *timed(load(src, f"bench_gemm_{n}"))) for n, (label, src) in enumerate(variants)]
    base = results[0][1]
    print(f"{'kernel':28} {'check':>10} {'diagnostics':>12} {'ratio':>7}")
    for label, t, n in results:
        print(f"{label:28} {t * 1e3:8.2f}ms {n:12d} {t / base:7.2f}")


if __name__ == "__main__":
    main()
