"""Start-up cost of the command line, of `import npu_opt` and of `npu-opt compile examples/`.

Each command runs as a fresh process several times, the commands taking turns round by
round (so a busy spell of the machine hits them all alike); printed is the best CPU time
(user + system, which another process on the machine disturbs far less than the wall
time) and the best wall time, with ratios against baselines measured in the same run:
- `npu-opt --version` and `npu-opt explain DMA-1` vs `python -c "import numpy"` (goal <= 1.5x);
- `python -c "import npu_opt"` (goal < 0.3 s CPU);
- issue 29 (c): `npu-opt compile examples/gemm.py -o DIR --no-cache`, a fresh DIR every run (a
  real compile: trace, lower, verify, emit, write; never a replay of a run record) vs
  `python -c "import numpy"` (goal <= 3x);
- `npu-opt compile examples/ -o DIR` (goal, judged on the cold run: <= 1.3x of `python -c "import npu_opt"`, the
  issue's baseline, which since the package became lazy loads almost nothing; printed
  too against `python -c "from npu_opt import *"`, the DSL import every kernel file does),
  with DIR's compile cache warm (the same DIR every run: the everyday rebuild, answered
  from DIR's run record) and cold (a fresh DIR each run: every kernel traced, lowered,
  verified and emitted, on --jobs' default of one worker per CPU).
With `--before DIR` (a checkout of older npu-opt code, e.g. `git archive main | tar -x -C
DIR`), the compile commands of that code run in the same rounds, from DIR on its own
examples/, and each "after" line gets its before/after ratio.
The lark parser tables are cached on disk (ir/lark_cache.py): one warm-up run of each
command fills that cache first, as any earlier use would.
Children run with the environment's PYTHONDONTWRITEBYTECODE dropped: the warm-up round
writes the bytecode an installed package has, so no round times Python compiling sources.
Run: python benchmarks/bench_startup.py [--before DIR] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def _run_once(cmd: list[str], cwd: Path, env: dict[str, str], tmp: str) -> tuple[float, float]:
    args = [a.replace("{FRESH}", os.path.join(tmp, "out")) for a in cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, elapsed


def measure(commands: dict[str, tuple[list[str], Path, dict[str, str]]], runs: int) -> dict[str, tuple[float, ...]]:
    """(best CPU seconds, best wall seconds, median CPU, median wall) of each command: one warm-up round, then
    `runs` rounds in which every command runs once. `{FRESH}` in a command is a new
    directory each run."""
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    wall: dict[str, list[float]] = {name: [] for name in commands}
    for k in range(runs + 1):
        for name, (cmd, cwd, env) in commands.items():
            with tempfile.TemporaryDirectory() as tmp:
                c, w = _run_once(cmd, cwd, env, tmp)
            if k:
                cpu[name].append(c)
                wall[name].append(w)
    return {name: (min(cpu[name]), min(wall[name]), statistics.median(cpu[name]), statistics.median(wall[name]))
            for name in commands}


def line(label: str, got: tuple[float, ...], base: tuple[float, ...] | None = None,
         goal: float | None = None) -> None:
    text = f"  {label:46} cpu {got[0] * 1e3:7.1f} ms (median {got[2] * 1e3:7.1f})  wall {got[1] * 1e3:7.1f} ms"
    if base is not None:
        ratio = got[0] / base[0]
        text += f"  cpu {ratio:5.2f}x (median {got[2] / base[2]:5.2f}x)  wall {got[1] / base[1]:5.2f}x"
        if goal is not None:
            text += f"  (goal <= {goal:g}x cpu: {'met' if ratio <= goal else 'MISSED'})"
    print(text)


def _commands(before: Path | None, warm_dirs: dict[str, str]) -> dict[str, tuple[list[str], Path, dict[str, str]]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    ours = (ROOT, env)
    cli = [PY, "-m", "driver.cli"]
    commands = {
        "numpy": ([PY, "-c", "import numpy"], *ours),
        "version": ([*cli, "--version"], *ours),
        "explain": ([*cli, "explain", "DMA-1"], *ours),
        "npu": ([PY, "-c", "import npu_opt"], *ours),
        "star": ([PY, "-c", "from npu_opt import *"], *ours),
        "warm": ([*cli, "compile", "examples/", "-o", warm_dirs["warm"]], *ours),
        "cold": ([*cli, "compile", "examples/", "-o", "{FRESH}"], *ours),
        "one": ([*cli, "compile", "examples/gemm.py", "-o", "{FRESH}", "--no-cache"], *ours),
    }
    if before is not None:  # `python -m` puts the working directory first on sys.path
        old = (before, env | {"PYTHONPATH": str(before)})
        commands["warm before"] = ([*cli, "compile", "examples/", "-o", warm_dirs["warm before"]], *old)
        commands["cold before"] = ([*cli, "compile", "examples/", "-o", "{FRESH}"], *old)
        commands["one before"] = ([*cli, "compile", "examples/gemm.py", "-o", "{FRESH}", "--no-cache"], *old)
    return commands


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, default=None, metavar="DIR", help="a checkout of older npu-opt code")
    parser.add_argument("--runs", type=int, default=7)
    opts = parser.parse_args()
    print(f"start-up, best of {opts.runs} fresh processes; python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        warm_dirs = {"warm": os.path.join(tmp, "build"), "warm before": os.path.join(tmp, "build-before")}
        t = measure(_commands(opts.before and opts.before.resolve(), warm_dirs), opts.runs)
    line('baseline: python -c "import numpy"', t["numpy"])
    line("npu-opt --version", t["version"], t["numpy"], 1.5)
    line("npu-opt explain DMA-1", t["explain"], t["numpy"], 1.5)
    line('python -c "import npu_opt"', t["npu"], t["numpy"])
    print(f"  import npu_opt: {t['npu'][0]:.3f} s CPU  (goal < 0.3 s: {'met' if t['npu'][0] < 0.3 else 'MISSED'})")
    line('python -c "from npu_opt import *"', t["star"], t["npu"])
    line("npu-opt compile examples/gemm.py -o FRESH --no-cache", t["one"], t["numpy"], 3)
    if "one before" in t:
        line(f"  before ({opts.before}), against import numpy", t["one before"], t["numpy"])
        line("  after against before", t["one"], t["one before"])
    for kind in ("warm", "cold"):
        label = "cache warm" if kind == "warm" else "cold (fresh DIR)"
        # the verdict is the cold one: a warm DIR answers from its run record (a replay)
        line(f"npu-opt compile examples/ -o DIR, {label}", t[kind], t["npu"], 1.3 if kind == "cold" else None)
        line("  the same against from npu_opt import *", t[kind], t["star"])
        if f"{kind} before" in t:
            line(f"  before ({opts.before}), against import npu_opt", t[f"{kind} before"], t["npu"])
            line("  after against before", t[kind], t[f"{kind} before"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
