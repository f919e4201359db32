"""Compile time and artifact size of a tiled GEMM against its trip count (docs/loops.md).

The kernel: out[M, N] = a[M, K] . w[N, K] in bf16 with N = 512, K = 128, tiled by 512 rows
of M; w goes to the TRF once, and one loop runs over the T row tiles (M = 512 T).
- rolled: `for i in ctx.loop(T)`: the body is traced, lowered, verified and printed once,
  so both costs should stay flat in T (issue 60's goal: T = 4096 within 1.5x of T = 4);
- unrolled: the same body under a Python `for` (the only way before `ctx.loop`), shown for
  a few small T as the before: both costs grow with T.
Printed per T: compile seconds (best of the rounds; each round compiles every T in turn),
VISA bytes, and each as a ratio to the T = 4 figure of the same mode in the same run.
Run: python benchmarks/bench_loops.py [--rounds N] [--max T]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

import npu_opt

SOURCE = '''
from npu_opt import *

T = {trips}
axes(M=512 * T, N=512, K=128)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("M % 512 / 32, N / 32")

@device(chip=1)
def gemm_rows(ctx: Context, a: HbmTensor[bf16, Chip, m("M, K")], w: HbmTensor[bf16, Chip, m("N, K")],
              out: Mut[HbmTensor[f32, Chip, m("M, N")]]) -> None:
    w_dm = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("N % 32, K")])
    w_trf = (ctx.sub.begin(w_dm.view()).fetch(m("N % 8, N / 8 % 4"), m("K"))
             .collect(m("N % 8, N / 8 % 4, K / 16"), m("K % 16")).to_trf(m("N % 8"), m("N / 8 % 4, K")))
    for i in {loop}:
        rows = a.view().tile(m("M / 512"), 1, m(f"1 # {{T}}, M % 512, K"), i)
        a_dm = rows.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("M % 32, K")])
        tile = (ctx.main.begin(a_dm.view()).fetch(m("M % 32, N / 8 % 4"), m("K"))
                .collect(m("M % 32, N / 8 % 4, K / 16"), m("K % 16"))
                .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
                .contract_packet(m("1")).contract_time(m("M % 32, N / 8 % 4"))
                .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
                .commit_trim(m("N % 8")).commit(m("M % 32, N % 32")))
        dst = out.view_mut().tile(m("M / 512"), 1, m(f"1 #{{{{!}}}} {{T}}, M % 512, N"), i)
        tile.view().to_hbm_view(ctx.tdma, dst)
'''


def kernel(trips: int, rolled: bool):
    name = f"bench_loops_{'rolled' if rolled else 'unrolled'}_{trips}"
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(SOURCE.format(trips=trips, loop="ctx.loop(T)" if rolled else "range(T)"))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.gemm_rows


def measure(counts: list[int], rolled: bool, rounds: int) -> dict[int, tuple[float, int]]:
    """T -> (best compile seconds, artifact bytes). Each round compiles a freshly loaded
    kernel of every T in turn (so a slow moment of a shared machine hits every T alike),
    after a garbage collection."""
    best = {t: (float("inf"), 0) for t in counts}
    for _ in range(rounds):
        for t in counts:
            k = kernel(t, rolled)
            gc.collect()
            t0 = time.perf_counter()
            text = npu_opt.compile(k).text
            secs = time.perf_counter() - t0
            best[t] = (min(best[t][0], secs), len(text.encode()))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max", type=int, default=4096)
    args = parser.parse_args()
    measure([4], True, 1)   # warm the compiler's caches for both modes
    measure([4], False, 1)
    for rolled, counts in ((True, [t for t in (4, 16, 64, 256, 1024, 4096) if t <= args.max]),
                           (False, [4, 16, 64])):
        print(f"{'rolled (ctx.loop)' if rolled else 'unrolled (Python for): the before'}")
        print(f"  {'T':>5} {'compile s':>10} {'ratio':>6} {'VISA bytes':>11} {'ratio':>6}")
        found = measure(counts, rolled, args.rounds)
        base = found[counts[0]]
        for t in counts:
            secs, size = found[t]
            print(f"  {t:>5} {secs:>10.3f} {secs / base[0]:>6.2f} {size:>11} {size / base[1]:>6.2f}")


if __name__ == "__main__":
    main()
