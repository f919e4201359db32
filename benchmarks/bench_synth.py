"""Issue 54 (3): how good is `npu-opt synth`'s winner, against the machine and against a user?

For each of the ten contractions of the issue (GEMMs i8 and bf16, a GEMV, a batched GEMM,
sizes no tile divides, a result smaller than the chip, an epilogue, `--pe 2`, two chips, a
narrow result), the contraction is synthesized and its winner's modelled makespan is set
against:

- the contraction's roofline (driver/synth_explain.py, visa/schedule/bounds.py: the fewest
  cycles the schedule model allows any kernel of it): efficiency = synth / roofline, goal
  <= 1.15;
- a kernel a careful user wrote from the guide and the reference's hand-written matmuls
  (benchmarks/hand_kernels/, each one's docstring says its choices; tests/synth/
  test_hand_kernels.py checks each against numpy): ratio = synth / hand, goal <= 1.0.

The makespans are the schedule model's (a model of the reference scheduler, not a device
measurement): deterministic, so one run is the measurement; the search's wall time is
printed for information (inline, BLAS pools held to one thread).

Run: python benchmarks/bench_synth.py [--forms gemm_i8,gemv] [--json rows.json]
"""

from __future__ import annotations

import argparse
import json
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
from driver.discover import load_file  # noqa: E402
from driver.synth import synthesize  # noqa: E402
from driver.synth_explain import spec_roofline  # noqa: E402
from ir.errors import NpuOptError  # noqa: E402
from synth import contraction  # noqa: E402
from tu_ops.target import for_chips, get_target  # noqa: E402
from visa.schedule import builtin_rates, schedule_artifact  # noqa: E402

GEMM = "out[m,n] = a[m,k] * w[n,k]"

# form, einsum, dtype, sizes, contraction(...) keywords, target, hand kernel (file, function)
FORMS = [
    ("gemm_i8", GEMM, "i8:i32", dict(m=512, n=512, k=512), {}, "rngd", ("gemm_i8", "hand_gemm_i8")),
    ("gemm_bf16", GEMM, "bf16:f32", dict(m=512, n=512, k=384), {}, "rngd", ("gemm_bf16", "hand_gemm_bf16")),
    ("gemv", "y[m] = a[m,k] * x[k]", "i8:i32", dict(m=4096, k=4096), {}, "rngd", ("gemv", "hand_gemv")),
    ("batched", "out[b,m,n] = a[b,m,k] * w[b,n,k]", "i8:i32", dict(b=8, m=128, n=128, k=64), {}, "rngd",
     ("batched", "hand_batched")),
    ("padded", GEMM, "i8:i32", dict(m=300, n=200, k=100), {}, "rngd", ("padded", "hand_padded")),
    ("small", GEMM, "bf16:bf16", dict(m=128, n=128, k=256), {}, "rngd", ("small", "hand_small")),
    ("epilogue", "q[m,n] = requant(relu(a[m,k] * w[n,k] + b[n]), 0.0009765625)", "i8:i32",
     dict(m=512, n=512, k=128), {}, "rngd", ("epilogue", "hand_epilogue")),
    ("pe2", GEMM, "i8:i32", dict(m=256, n=256, k=128), dict(pe=2), "rngd", ("pe2", "hand_pe2")),
    ("two_chips", GEMM, "i8:i32", dict(m=1024, n=512, k=128), dict(chips=2), "rngd-2chip",
     ("two_chips", "hand_two_chips")),
    ("narrow", GEMM, "i8:i32", dict(m=1024, n=64, k=256), {}, "rngd", ("narrow", "hand_narrow")),
]


def hand_makespan(file: str, name: str) -> int:
    module, error = load_file(ROOT / "benchmarks" / "hand_kernels" / f"{file}.py")
    assert error is None, error
    kernel = getattr(module, name)
    tgt = get_target("rngd")
    outcome = compile_kernel(kernel, tgt)
    assert outcome.status == "ok", outcome.diagnostics
    return schedule_artifact(outcome.artifact, target=for_chips(tgt, kernel.chips),
                             rates=builtin_rates("rngd")).makespan


def measure(forms: list[str] | None) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for form, einsum, dtype, sizes, kw, target, (file, name) in FORMS:
            if forms and form not in forms:
                continue
            spec = contraction(einsum, dtype=dtype, sizes=sizes, **kw)
            start = time.perf_counter()
            bound = spec_roofline(spec, target)
            hand = hand_makespan(file, name)
            try:
                result = synthesize(spec, Path(tmp) / form, target=target)
            except NpuOptError as e:  # a failed search is a row of the table, not the end of the benchmark
                rows.append(dict(form=form, synth=None, hand=hand, bound=bound.cycles, binding=bound.binding.name,
                                 hand_efficiency=round(hand / bound.cycles, 3), error=f"error[{e.code}]: {e}"))
                print(f"{form}: synth failed: {e}", file=sys.stderr, flush=True)
                continue
            seconds = time.perf_counter() - start
            winner = result.tune.winner
            assert winner is not None, f"{form}: synth found no winner"
            rows.append(dict(form=form, synth=winner.makespan, hand=hand, ratio=round(winner.makespan / hand, 3),
                             bound=bound.cycles, binding=bound.binding.name,
                             efficiency=round(winner.makespan / bound.cycles, 3),
                             hand_efficiency=round(hand / bound.cycles, 3), choice=winner.label(),
                             candidates=len(result.tune.candidates), seconds=round(seconds, 1)))
            print(f"{form}: synth {winner.makespan} hand {hand} ({seconds:.1f} s)", file=sys.stderr, flush=True)
    return rows


def render(rows: list[dict]) -> str:
    lines = ["modelled makespans (schedule model, cycles); ratio = synth / hand (goal <= 1.0), "
             "efficiency = synth / roofline (goal <= 1.15)",
             f"{'form':10} {'synth':>9} {'hand':>9} {'ratio':>6} {'roofline':>9} {'bound':>7} {'eff.':>6} "
             f"{'hand eff.':>9}  synth's choice (candidates, search s)"]
    for r in rows:
        if r["synth"] is None:
            lines.append(f"{r['form']:10} {'-':>9} {r['hand']:9d} {'-':>6} {r['bound']:9d} {r['binding']:>7} "
                         f"{'-':>6} {r['hand_efficiency']:9.2f}  {r['error']}")
            continue
        lines.append(f"{r['form']:10} {r['synth']:9d} {r['hand']:9d} {r['ratio']:6.2f} {r['bound']:9d} "
                     f"{r['binding']:>7} {r['efficiency']:6.2f} {r['hand_efficiency']:9.2f}  {r['choice']} "
                     f"({r['candidates']}, {r['seconds']:.1f} s)")
    met = sum(r.get("ratio", 9) <= 1.0 for r in rows), sum(r.get("efficiency", 9) <= 1.15 for r in rows)
    lines.append(f"synth <= hand on {met[0]} of {len(rows)}; efficiency <= 1.15 on {met[1]} of {len(rows)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forms", default="", help="comma-separated forms to run (default: all ten)")
    parser.add_argument("--json", default="", help="also write the rows to this JSON file")
    args = parser.parse_args()
    rows = measure([f for f in args.forms.split(",") if f])
    print(render(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
