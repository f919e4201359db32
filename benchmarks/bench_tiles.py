"""Compile time of a tiled GEMM against its tile count (examples/gemm_tiled.py).

The example loops over MT x NT output tiles of 512 x 512; each tile adds two tile reads
into DM, two TU programs and one write through a tile. This compiles the same kernel
with 1, 2, 4, 8, 16, 32 and 64 tiles (cold mapping caches each time, as in a fresh process) and
prints the compile time, the time per tile and its ratio to the 1-tile baseline measured
in the same run. Linear growth keeps that ratio near 1 (it falls below 1 while the fixed
cost of a compile is spread over more tiles); a ratio that grows with the tile count
would mean worse than linear.
Run: python benchmarks/bench_tiles.py
"""

from __future__ import annotations

import re
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_check import clear_caches, load  # noqa: E402

from npu_opt.compile_api import compile_kernel  # noqa: E402

SOURCE = (ROOT / "examples" / "gemm_tiled.py").read_text()
GRIDS = ((1, 1), (1, 2), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8))


def kernel_with(mt: int, nt: int):
    """The example with an MT x NT tile grid, loaded as its own module."""
    text = re.sub(r"^MT = \d+", f"MT = {mt}", SOURCE, flags=re.M)
    text = re.sub(r"^NT = \d+", f"NT = {nt}", text, flags=re.M)
    return load(text, f"bench_tiles_{mt}x{nt}", "gemm_tiled")


def cold_compile(kernel) -> float:
    def go() -> None:
        clear_caches()
        outcome = compile_kernel(kernel)
        assert outcome.status == "ok", outcome.code
    return min(timeit.repeat(go, number=1, repeat=3))


def main() -> None:
    rows = []
    for mt, nt in GRIDS:
        rows.append((mt * nt, cold_compile(kernel_with(mt, nt))))
    base = rows[0][1]
    print(f"{'tiles':>6} {'compile s':>10} {'s / tile':>9} {'per-tile ratio':>15}")
    for tiles, t in rows:
        print(f"{tiles:>6} {t:>10.3f} {t / tiles:>9.3f} {t / tiles / base:>15.2f}")
    last_tiles, last = rows[-1]
    print(f"growth from 1 to {last_tiles} tiles: x{last / base:.1f} for x{last_tiles} tiles")


if __name__ == "__main__":
    main()
