"""Issue 54 (1, 2): how large is each synth space, how long does its search take, and what
does its winner cost?

For ten contractions a user would write (the issue's classes: a result that fills the chip,
bf16 with a long `k`, a narrow result, a GEMV, a batch, padded sizes, a result smaller than
the chip, an epilogue, `--pe`, two chips) and the two large GEMMs of the issue, prints the
candidates the levers make, the candidates left after dropping duplicates (the same
canonical kernel source), the search's wall time (`--jobs` processes; one run) and the
winner's modelled makespan (the schedule model's, deterministic). Run it on another
checkout (PYTHONPATH) for the numbers before a change.

Run: python benchmarks/bench_synth_space.py [--jobs 2] [--big] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

from driver.synth import synthesize  # noqa: E402
from synth import contraction  # noqa: E402
from tu_ops.target import get_target  # noqa: E402

GEMM = "out[m,n] = a[m,k] * w[n,k]"
# (label, einsum, dtype, sizes, target, pe)
CASES = [
    ("fills the chip", GEMM, "i8:i32", dict(m=512, n=512, k=512), "rngd", 8),
    ("bf16, k=384", GEMM, "bf16:bf16", dict(m=512, n=512, k=384), "rngd", 8),
    ("narrow result", GEMM, "bf16:f32", dict(m=1024, n=64, k=128), "rngd", 8),
    ("GEMV", "y[m] = a[m,k] * x[k]", "i8:i32", dict(m=4096, k=4096), "rngd", 8),
    ("batched", "out[b,m,n] = a[b,m,k] * w[b,n,k]", "i8:i32", dict(b=8, m=128, n=128, k=64), "rngd", 8),
    ("padded", GEMM, "i8:i32", dict(m=1000, n=1000, k=100), "rngd", 8),
    ("smaller than the chip", GEMM, "i8:i32", dict(m=96, n=96, k=64), "rngd", 8),
    ("epilogue", "q[m,n] = requant(relu(a[m,k] * w[n,k] + b[n]), 0.0009765625)", "i8:i32",
     dict(m=512, n=512, k=512), "rngd", 8),
    ("--pe 2", GEMM, "i8:i32", dict(m=512, n=512, k=128), "rngd", 2),
    ("two chips", GEMM, "i8:i32", dict(m=1024, n=512, k=128), "rngd-2chip", 8),
]
BIG = [
    ("4096x4096x512", GEMM, "i8:i32", dict(m=4096, n=4096, k=512), "rngd", 8),
    ("4096^3", GEMM, "i8:i32", dict(m=4096, n=4096, k=4096), "rngd", 8),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--big", action="store_true", help="also the 4096 x 4096 x 512 and 4096^3 GEMMs")
    parser.add_argument("--only", default="", help="run the cases whose label contains this")
    args = parser.parse_args()
    print(f"{'contraction':24} {'levers':>7} {'distinct':>8} {'search s':>9} {'makespan':>10}  winner")
    with tempfile.TemporaryDirectory() as tmp:
        for n, (label, einsum, dtype, sizes, target, pe) in enumerate(CASES + BIG * args.big):
            if args.only not in label:
                continue
            chips = max(get_target(target).chips)
            spec = contraction(einsum, dtype=dtype, sizes=sizes, pe=pe, chips=chips)
            space = spec.space()
            levers = math.prod(len(v) for _, v in space.params)
            start = time.perf_counter()
            result = synthesize(spec, Path(tmp) / str(n), target=target, jobs=args.jobs, top=1)
            seconds = time.perf_counter() - start
            winner = result.tune.winner
            print(f"{label:24} {levers:7d} {len(space.points()):8d} {seconds:9.1f} "
                  f"{winner.makespan if winner else '-':>10}  {winner.label() if winner else 'none'}", flush=True)


if __name__ == "__main__":
    main()
