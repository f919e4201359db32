"""Issue 41 (5): does `npu-opt synth` beat the hand-written kernels?

For each hand-written kernel below, the same contraction (form, dtypes, sizes) is
synthesized and the modelled makespans are compared: ratio = synth / hand (goal <= 1.0).
The makespans are the schedule model's (driver/tune.py's ranking; a model of the
reference scheduler, not a device measurement), so the numbers are deterministic and
need no repetition; the synthesis' wall time is printed for information (one run, inline,
BLAS pools held to one thread).

The hand-written baselines:
- examples/gemm_i8.py: i8 GEMM 512 x 512 x 128, each slice a 32 x 32 block, w in the TRF;
- examples/gemm_bf16.py: the same mapping in bf16 -> bf16;
- examples/gemm_tiled.py: bf16 -> f32 GEMM 1024 x 1024 x 128 as 2 x 2 tiles of 512 x 512;
- examples/tune_gemm.py's winner (order ij, reuse all, packet 32; docs/tuning.md): i8 GEMM
  1024 x 1024 x 128;
- examples/gemv.py: bf16 GEMV 256 x 2048, one row per slice, the vector broadcast;
- `ref_gemv_i8` below: the mapping choices of furiosa-opt's hand-written i8 GEMV of the
  examples crate (`matmul/matmul_4096.rs` at commit f8938cb: each of 128 slices of a
  cluster holds a 32-element slice of k for 1024 rows, the slices' partial sums added by
  the inter-slice reducer), written here for i8 -> i32 at 4096 x 4096 (the reference
  casts its i32 sums to i8; synth's results stay i32, so this baseline keeps them too).
None of these shapes needs `k` split (npu_opt/synth/tiling.py): their winners are the
same as before the split levers; the 4096^3 i8 GEMM, which does, has no hand-written
baseline here (docs/synth.md "Contractions larger than the chip" gives its search).
Run: python benchmarks/bench_synth.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

from backends.npu import compile_kernel  # noqa: E402
from driver.synth import synthesize  # noqa: E402
from npu_opt.synth import contraction  # noqa: E402
from tu_ops.target import for_chips, get_target  # noqa: E402
from visa.schedule import builtin_rates, schedule_artifact  # noqa: E402


def makespan(kernel) -> int:
    tgt = get_target("rngd")
    outcome = compile_kernel(kernel, tgt)
    assert outcome.status == "ok", outcome.diagnostics
    return schedule_artifact(outcome.artifact, target=for_chips(tgt, kernel.chips),
                             rates=builtin_rates("rngd")).makespan


def hand_kernels():
    from examples.gemm_bf16 import gemm_bf16_kernel
    from examples.gemm_i8 import gemm_i8_kernel
    from examples.gemm_tiled import gemm_tiled
    from examples.gemv import gemv_kernel
    from examples.tune_gemm import make_gemm

    yield "examples/gemm_i8.py", gemm_i8_kernel, ("out[m,n] = a[m,k] * w[n,k]", "i8:i32", dict(m=512, n=512, k=128))
    yield ("examples/gemm_bf16.py", gemm_bf16_kernel,
           ("out[m,n] = a[m,k] * w[n,k]", "bf16:bf16", dict(m=512, n=512, k=128)))
    yield ("examples/gemm_tiled.py", gemm_tiled,
           ("out[m,n] = a[m,k] * w[n,k]", "bf16:f32", dict(m=1024, n=1024, k=128)))
    yield ("tune_gemm winner", make_gemm(order="ij", reuse="all", packet=32),
           ("out[m,n] = a[m,k] * w[n,k]", "i8:i32", dict(m=1024, n=1024, k=128)))
    yield "examples/gemv.py", gemv_kernel, ("y[m] = a[m,k] * x[k]", "bf16:bf16", dict(m=256, k=2048))
    from benchmarks.ref_gemv import ref_gemv_i8
    yield "furiosa-opt matmul_4096 choices", ref_gemv_i8, ("y[m] = a[m,k] * x[k]", "i8:i32", dict(m=4096, k=4096))


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, (label, kernel, (einsum, dtype, sizes)) in enumerate(hand_kernels()):
            hand = makespan(kernel)
            start = time.perf_counter()
            result = synthesize(contraction(einsum, dtype=dtype, sizes=sizes), Path(tmp) / str(n))
            seconds = time.perf_counter() - start
            winner = result.tune.winner
            assert winner is not None, f"{label}: synth found no winner"
            rows.append((label, f"{einsum} {dtype} " + "x".join(str(v) for v in sizes.values()),
                         hand, winner.makespan, winner.makespan / hand, winner.label(), seconds))
    print("modelled makespans (schedule model, cycles); ratio = synth / hand, goal <= 1.0")
    print(f"{'baseline':34} {'contraction':48} {'hand':>9} {'synth':>9} {'ratio':>7}  synth's choice (search s)")
    for label, what, hand, synth, ratio, choice, seconds in rows:
        print(f"{label:34} {what:48} {hand:9d} {synth:9d} {ratio:7.3f}  {choice} ({seconds:.1f} s)")


if __name__ == "__main__":
    main()
