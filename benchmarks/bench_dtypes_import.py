"""What the first bf16 run of a process pays to import ml_dtypes (issue #29).

`ml_dtypes` gives numpy its bf16 / f8 / f4 dtypes; npu-opt imports it only where host arrays
are made (ir/dtypes.py), so checking and compiling never pay for it, but the first `npu_opt.run`
of a bf16 kernel in a process does (every pytest-xdist worker, every tuning worker). Each round
runs, as fresh processes taking turns, `import numpy` (the baseline) and `import ml_dtypes`,
and with `--other DIR` the same import from another installation put first on the path
(`pip install --target DIR --no-deps ml_dtypes==0.6.0`), and prints the min / median CPU time
(user + system of the child) of >= 5 rounds with ratios against the baseline.
Run: python benchmarks/bench_dtypes_import.py [--other DIR] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys


def _cpu(code: str, path: str | None) -> float:
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", help="a directory holding another ml_dtypes (pip install --target)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    version = "import ml_dtypes; print(ml_dtypes.__version__)"
    cases = {"import numpy": ("import numpy", None),
             f"import ml_dtypes {subprocess.check_output([sys.executable, '-c', version], text=True).strip()}":
                 ("import ml_dtypes", None)}
    if args.other:
        other = subprocess.check_output([sys.executable, "-c", version], text=True,
                                        env={**os.environ, "PYTHONPATH": args.other}).strip()
        cases[f"import ml_dtypes {other} (--other)"] = ("import ml_dtypes", args.other)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(max(args.rounds, 5)):
        for name, (code, path) in cases.items():  # interleaved: a busy spell hits every case alike
            times[name].append(_cpu(code, path))
    base = min(times["import numpy"])
    print(f"{'case':40} {'min s':>8} {'median s':>9} {'min / numpy':>12}")
    for name, ts in times.items():
        print(f"{name:40} {min(ts):8.3f} {statistics.median(ts):9.3f} {min(ts) / base:11.1f}x")


if __name__ == "__main__":
    main()
