"""Compile time of a tiled GEMM against its tile count (examples/gemm_tiled.py), issue 29 (a).

The example loops over MT x NT output tiles of 512 x 512; each tile adds two tile reads
into DM, two TU programs and one write through a tile. This compiles the same kernel with
1, 2, 4, 8, 16, 32 and 64 tiles, every memo and cache of the compiler cleared before each
compile (as in a fresh process: nothing is carried from one compile to the next), the
grids taking turns round by round, and prints the min and median of the rounds, the time
per tile, and the growth against the 1-tile compile measured in the same run. Identical
tiles share their lowering (ir/memo.py), so the growth stays well under the tile count:
the goal is sublinear, growth(64 tiles) much less than x64.
Run: python benchmarks/bench_tiles.py [--rounds N]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_check import clear_caches, interleaved, load, min_median  # noqa: E402

from npu_opt.compile_api import compile_kernel  # noqa: E402

SOURCE = (ROOT / "examples" / "gemm_tiled.py").read_text()
GRIDS = ((1, 1), (1, 2), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8))


def kernel_with(mt: int, nt: int):
    """The example with an MT x NT tile grid, loaded as its own module."""
    text = re.sub(r"^MT = \d+", f"MT = {mt}", SOURCE, flags=re.M)
    text = re.sub(r"^NT = \d+", f"NT = {nt}", text, flags=re.M)
    return load(text, f"bench_tiles_{mt}x{nt}", "gemm_tiled")


def cold_compile(kernel):
    def go() -> None:
        clear_caches()
        outcome = compile_kernel(kernel)
        assert outcome.status == "ok", outcome.code
    return go


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    kernels = {mt * nt: kernel_with(mt, nt) for mt, nt in GRIDS}
    for k in kernels.values():  # imports and first-use set-up, outside the timing
        compile_kernel(k)
    wall = interleaved({n: cold_compile(k) for n, k in kernels.items()}, opts.rounds)
    cpu = interleaved({n: cold_compile(k) for n, k in kernels.items()}, opts.rounds, time.process_time)
    base_w, base_c = min(wall[1]), min(cpu[1])
    print(f"{opts.rounds} rounds, grids interleaved; every compile with cleared memos (fresh-process state)")
    print(f"{'tiles':>6} {'wall min':>9} {'median':>8} {'cpu min':>8} {'cpu/tile':>9} {'growth (cpu)':>13}")
    for n in kernels:
        w_min, w_med = min_median(wall[n])
        c_min, _ = min_median(cpu[n])
        print(f"{n:>6} {w_min * 1e3:7.1f}ms {w_med * 1e3:6.1f}ms {c_min * 1e3:6.1f}ms {c_min / n * 1e3:7.2f}ms "
              f"{c_min / base_c:12.1f}x")
    last = max(kernels)
    print(f"growth from 1 to {last} tiles: x{min(cpu[last]) / base_c:.1f} cpu, x{min(wall[last]) / base_w:.1f} wall, "
          f"for x{last} tiles")


if __name__ == "__main__":
    main()
