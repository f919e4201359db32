"""How often the chip's order and furiosa-opt's host order give different f32 sums
(docs/numerics.md "The order of the sums"). Not a timing: a count, printed per data set.

Kernel: examples/gemm_bf16.py (M = N = 512, K = 128, f32 result), run once with
`numerics="chip"` (packet tree over K % 32, then K / 32 in time, flush-to-zero) and once
with `numerics="reference"` (one serial sum per output cell). Printed: the share of the
262,144 outputs whose f32 bits differ, for each operand distribution (both operands
drawn alike, then rounded to bf16):
- normal: standard normal;
- uniform: uniform on [-1, 1);
- binades: standard normal times 2^e, e uniform in -4 ... 4 (the data of
  tests/backends/test_reference_numerics.py, which spreads the magnitudes over nine binades).
Run: python benchmarks/order_disagreement.py [--seed S]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import npu_opt  # noqa: E402
from tests.kernel_files import example  # noqa: E402

SHAPE = (512, 128)


def normal(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(SHAPE)


def uniform(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, SHAPE)


def binades(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(SHAPE) * np.exp2(rng.integers(-4, 5, SHAPE))


DATA = {"normal": normal, "uniform": uniform, "binades": binades}


def disagreement(draw, seed: int) -> tuple[int, int]:
    """(outputs whose bits differ, outputs) for one operand pair of the distribution."""
    rng = np.random.default_rng(seed)
    a = draw(rng).astype(ml_dtypes.bfloat16)
    w = draw(rng).astype(ml_dtypes.bfloat16)
    kernel = example("gemm_bf16_kernel")
    chip = npu_opt.run(kernel, a, w)
    host = npu_opt.run(kernel, a, w, numerics="reference")
    return int(np.count_nonzero(chip.view(np.uint32) != host.view(np.uint32))), chip.size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print("examples/gemm_bf16.py, K = 128: f32 outputs where the chip's order and the host's differ")
    for name, draw in DATA.items():
        differ, total = disagreement(draw, args.seed)
        print(f"  {name:8s} {differ:7d} of {total} ({differ / total:.0%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
