"""VISA interpreter versus the cpu backend on the GEMM examples (goal: interpreter <= 1.5x cpu).

For each kernel both paths run on the same random inputs; the outputs are checked equal
bit for bit once, then timed. The cpu time is the baseline of the ratio (same run).
The interpreter is timed on an already parsed artifact (compile and parse excluded).
Run: python benchmarks/bench_interp.py
"""

from __future__ import annotations

import timeit
from pathlib import Path

import ml_dtypes
import numpy as np

import npu_opt
from npu_opt.compile_api import compile_kernel
from npu_opt.discover import discover
from visa import parse_visa
from visa.interp import execute

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("gemm_kernel", "gemm_bf16_kernel", "gemm_i8_kernel")


def inputs(kernel, rng):
    arrays = []
    for _, t in kernel.signature().params:
        shape = tuple(f.extent for f in t.element.factors()) or (1,)
        if str(t.dtype) == "bf16":
            arrays.append(rng.uniform(-1, 1, shape).astype(np.float32).astype(ml_dtypes.bfloat16))
        else:
            arrays.append(rng.integers(-128, 128, shape, dtype=np.int8))
    return arrays


def raw(x):
    return np.asarray(x).view(np.uint8).tobytes()


def best(fn) -> float:
    return min(timeit.repeat(fn, number=1, repeat=5))


def main() -> None:
    kernels = {k.name: k for k in discover([str(ROOT / "examples")]).kernels}
    rng = np.random.default_rng(0)
    print(f"{'kernel':20} {'cpu':>10} {'interp':>10} {'ratio':>7}")
    for name in NAMES:
        kernel = kernels[name]
        arrays = inputs(kernel, rng)
        artifact = parse_visa(compile_kernel(kernel).text)
        cpu = npu_opt.run(kernel, *arrays)
        assert raw(cpu) == raw(execute(artifact, arrays)), name
        t_cpu = best(lambda: npu_opt.run(kernel, *arrays))
        t_int = best(lambda: execute(artifact, arrays))
        print(f"{name:20} {t_cpu * 1e3:8.1f}ms {t_int * 1e3:8.1f}ms {t_int / t_cpu:7.2f}")


if __name__ == "__main__":
    main()
