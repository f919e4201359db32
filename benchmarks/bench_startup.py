"""Start-up cost of the command line and of `import npu_opt`, against the interpreter floor.

Each command runs as a fresh process several times; printed is the best CPU time (user +
system, which another process on the machine disturbs far less than the wall time) and
the best wall time, with ratios against baselines measured in the same run:
- `npu-opt --version` and `npu-opt explain DMA-1` vs `python -c "import numpy"` (goal <= 1.5x);
- `python -c "import npu_opt"` (goal < 0.3 s CPU);
- `npu-opt compile examples/ -o DIR` vs `python -c "import npu_opt"` and (goal <= 1.3x)
  vs `python -c "from npu_opt import *"` and `python -c "import npu_opt, numpy, lark"`
  (the libraries any compile loads), with
  DIR's compile cache warm (the same DIR every run: the everyday rebuild) and cold (a
  fresh DIR each run: every kernel traced, lowered, verified and emitted). The goal is
  checked against the DSL import every kernel file does: `import npu_opt` alone loads
  almost nothing since the package became lazy, so it is no longer the floor of a compile.
The lark parser tables are cached on disk (ir/lark_cache.py): one warm-up run of each
command fills that cache first, as any earlier use would.
Run: python benchmarks/bench_startup.py
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
CLI = [PY, "-m", "npu_opt.cli"]
RUNS = 7


def measure(cmd: list[str], fresh_dir: bool = False) -> tuple[float, float]:
    """(best CPU seconds, best wall seconds) of `cmd` over RUNS runs after one warm-up."""
    cpu, wall = [], []
    for k in range(RUNS + 1):
        with tempfile.TemporaryDirectory() as tmp:
            args = [a.replace("{DIR}", os.path.join(tmp, "out")) for a in cmd] if fresh_dir else cmd
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(args, cwd=ROOT, capture_output=True, check=False)
            elapsed = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if k:
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            wall.append(elapsed)
    return min(cpu), min(wall)


def line(label: str, got: tuple[float, float], base: tuple[float, float] | None = None,
         goal: float | None = None) -> None:
    text = f"  {label:44} cpu {got[0] * 1e3:7.1f} ms  wall {got[1] * 1e3:7.1f} ms"
    if base is not None:
        ratio = got[0] / base[0]
        text += f"  cpu {ratio:5.2f}x  wall {got[1] / base[1]:5.2f}x"
        if goal is not None:
            text += f"  (goal <= {goal:g}x cpu: {'met' if ratio <= goal else 'MISSED'})"
    print(text)


def main() -> int:
    print(f"start-up, best of {RUNS} fresh processes; python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    numpy = measure([PY, "-c", "import numpy"])
    npu = measure([PY, "-c", "import npu_opt"])
    line('baseline: python -c "import numpy"', numpy)
    line("npu-opt --version", measure([*CLI, "--version"]), numpy, 1.5)
    line("npu-opt explain DMA-1", measure([*CLI, "explain", "DMA-1"]), numpy, 1.5)
    verdict = "met" if npu[0] < 0.3 else "MISSED"
    line('python -c "import npu_opt"', npu, numpy)
    print(f"  import npu_opt: {npu[0]:.3f} s CPU  (goal < 0.3 s: {verdict})")
    star = measure([PY, "-c", "from npu_opt import *"])
    line('python -c "from npu_opt import *"', star, npu)
    libs = measure([PY, "-c", "import npu_opt, numpy, lark"])
    line('python -c "import npu_opt, numpy, lark"', libs, npu)
    with tempfile.TemporaryDirectory() as tmp:
        warm = measure([*CLI, "compile", "examples/", "-o", os.path.join(tmp, "build")])
    cold = measure([*CLI, "compile", "examples/", "-o", "{DIR}"], True)
    line("npu-opt compile examples/ -o DIR, cache warm", warm, npu)
    line("  the same against from npu_opt import *", warm, star, 1.3)
    line("  the same against import npu_opt, numpy, lark", warm, libs, 1.3)
    line("npu-opt compile examples/ -o DIR, cold", cold, npu)
    line("  the same against from npu_opt import *", cold, star, 1.3)
    line("  the same against import npu_opt, numpy, lark", cold, libs, 1.3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
