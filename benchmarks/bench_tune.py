"""Issue 38 (7): does `npu-opt tune` pay for its workers?

The space is examples/tune_gemm_bf16.py's `SPACE` (216 distinct candidates of a tiled bf16
GEMM: tile sizes, packet, loop order, operand reuse, split-K), swept with pruning on (the
CLI's default) and without the oracle check (the check runs the best candidates in this
process, alike for every executor). Each round, taking turns so a busy spell of the shared
machine hits them all alike, times one whole `driver.tune.tune` call:
- serial: `--jobs 1` (inline, the baseline);
- `--jobs 2`: this process and one worker process forked by the call, as on the command line
  (no dask client is alive in this process during a sweep: one would make the pool spawn);
- dask (unless --no-dask): a running cluster of a `dask scheduler` process and a
  `dask worker --nworkers 2 --nthreads 1` process (driver/tune_cluster.py; the cluster's start is
  not timed, the client's connection is).
Printed: the wall time of each round, the medians, and the median ratio serial / executor
against the issue's goal (2 local workers >= 1.6x serial), and the CPU seconds this process,
its pool worker and the busiest dask worker spent (read from the workers' own clocks); on a
machine with a core free for each process the wall time nears the largest of them, so
serial CPU / that is printed too (information: a busy shared machine stretches every wall
time, the goal stays the wall-time ratio). Every executor must find the same winner. The load average is printed before and after: the machine's 2 cores are shared.
BLAS pools are held to one thread (the sweep does no linear algebra; the limit keeps a
worker from spawning a pool per core).
Besides the fixed space, `--drawn N` spaces drawn by benchmarks/drawn_kernels.py
(`draw_space`, seeds from `--seed`: tiled or batched synth GEMMs of 200+ distinct candidates,
most pruned),
each also swept serially without pruning (does pruning pay?); the worst space's ratio is
the verdict. Rounds take turns, which executor goes first rotating.
Run: python benchmarks/bench_tune.py [--rounds N] [--no-dask] [--drawn N] [--seed S] [--no-fixed] [--no-unpruned]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"  # inherited by the workers

import attrs  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402
from dask.distributed import Client  # noqa: E402

from driver.tune import tune  # noqa: E402
from driver.tune_cluster import local_cluster  # noqa: E402
from driver.tune_exec import FactoryRef, load_space  # noqa: E402
from benchmarks.drawn_kernels import draw_space  # noqa: E402

FILE = str(ROOT / "examples" / "tune_gemm_bf16.py")
GOAL = 1.6


def _children_cpu() -> float:
    """CPU seconds of this process's reaped children (the pool's workers, once shut down)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


SPACE_FILE = """import sys
sys.path.insert(0, {root!r})
from benchmarks.drawn_kernels import draw_space
from synth.space import space_of
SPACE = space_of(draw_space({seed}), run=False)
"""


def _worker_cpu(address: str) -> dict[str, float]:
    """Each dask worker's process CPU seconds so far. The client is closed again before the
    sweep: while its thread runs, a `--jobs 2` pool in this process would be spawned, not
    forked as on the command line (driver/tune_exec.py `_start_method`)."""
    with Client(address, timeout=30) as client:
        return client.run(time.process_time)


def measure(label: str, ref: FactoryRef, rounds: int, dask: bool, unpruned: bool) -> list[float]:
    """Time the executors on the space `ref` names; the ratios serial / executor (medians)."""
    space = attrs.evolve(load_space(ref), inputs=None, oracle=None)  # the sweep alone
    print(f"{label}: {len(space.points())} distinct candidates; cpu count {os.cpu_count()}; BLAS threads 1; "
          f"load average before {os.getloadavg()}")
    runs = {"serial": lambda: tune(space, jobs=1), "jobs 2": lambda: tune(space, ref=ref, jobs=2)}
    if unpruned:
        runs["unpruned"] = lambda: tune(space, jobs=1, prune=False)
    ratios = []
    with contextlib.ExitStack() as stack:
        address = None
        if dask:
            address = stack.enter_context(local_cluster(workers=2, threads=1))
            runs["dask 2x1"] = lambda: tune(space, ref=ref, scheduler=address)
        times: dict[str, list[float]] = {name: [] for name in runs}
        cpus: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        winners: dict[str, set[int | None]] = {name: set() for name in runs}
        with threadpool_limits(1):
            for k in range(rounds):
                names = list(runs)
                for name in names[k % len(names):] + names[:k % len(names)]:  # which goes first rotates
                    own, kids = time.process_time(), _children_cpu()
                    remote = _worker_cpu(address) if name == "dask 2x1" else {}
                    start = time.perf_counter()
                    result = runs[name]()
                    times[name].append(time.perf_counter() - start)
                    spent = [t - remote[w] for w, t in _worker_cpu(address).items()] if remote else []
                    cpus[name].append((time.process_time() - own, _children_cpu() - kids, max(spent, default=0.0)))
                    winners[name].add(None if result.winner is None else result.winner.index)
                    if k == 0:
                        print(f"  {name} sweep: {result.count('ok')} scheduled, {result.count('pruned')} pruned, "
                              f"{result.count('refused')} refused", flush=True)
                print(f"  round {k}: " + ", ".join(f"{n} {t[-1]:.2f} s" for n, t in times.items()), flush=True)
    base = statistics.median(times["serial"])
    print(f"  load average after {os.getloadavg()}")
    for name, t in times.items():
        med = statistics.median(t)
        line = f"  {name:9} median {med:6.2f} s  min {min(t):6.2f} s  serial/this {base / med:5.2f}x"
        if name not in ("serial", "unpruned"):
            ratios.append(base / med)
            line += f"  (goal >= {GOAL}x: {'met' if base / med >= GOAL else 'NOT met'})"
        if name == "unpruned":
            line += "  (pruning pays when > 1)"
        print(line)
        own, kids, busiest = (statistics.median(x[i] for x in cpus[name]) for i in (0, 1, 2))
        if name != "dask 2x1":  # a dask worker's CPU is not this process's child's until the cluster stops
            print(f"  {'':9} CPU: this process {own:.2f} s, its worker processes {kids:.2f} s (medians)")
            busiest = kids if name == "jobs 2" else 0.0  # one pool worker
        else:
            print(f"  {'':9} CPU: this process {own:.2f} s (the probe's child {kids:.2f} s), "
                  f"the busiest dask worker {busiest:.2f} s (medians)")
        path = max(own, busiest)
        serial_cpu = statistics.median(x[0] for x in cpus["serial"])
        print(f"  {'':9} CPU of the busiest process {path:.2f} s: serial CPU / that {serial_cpu / path:.2f}x "
              f"(the ratio a machine with a free core per process would give, overheads aside)")
    assert len({w for ws in winners.values() for w in ws}) == 1, f"executors disagree on the winner: {winners}"
    print(f"  winner: #{next(iter(winners['serial']))} under every executor")
    return ratios


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--drawn", type=int, default=1, help="spaces drawn by benchmarks/drawn_kernels.py")
    ap.add_argument("--seed", type=int, default=0, help="the first drawn space's seed")
    ap.add_argument("--no-fixed", action="store_true", help="only the drawn spaces")
    ap.add_argument("--no-unpruned", action="store_true",
                    help="skip the drawn spaces' unpruned serial sweep (the slowest run; pruning's own verdict)")
    args = ap.parse_args()
    worst: list[tuple[float, str]] = []
    if not args.no_fixed:
        ratios = measure(f"fixed space {FILE}", FactoryRef(FILE, "SPACE"), args.rounds, not args.no_dask, False)
        worst += [(r, "examples/tune_gemm_bf16.py SPACE") for r in ratios]
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seed, args.seed + args.drawn):
            path = Path(tmp) / f"drawn_space_{seed}.py"
            path.write_text(SPACE_FILE.format(root=str(ROOT), seed=seed))
            spec = draw_space(seed)
            label = (f"drawn space (seed {seed}): {spec.text} {spec.dtype_in}:{spec.dtype_out} "
                     + ",".join(f"{i}={n}" for i, n in spec.sizes.items()))
            ratios = measure(label, FactoryRef(str(path), "SPACE"), args.rounds, not args.no_dask,
                             not args.no_unpruned)
            worst += [(r, label) for r in ratios]
    ratio, label = min(worst)
    print(f"worst space: {label}, serial/executor {ratio:.2f}x; goal >= {GOAL}x: "
          f"{'met' if ratio >= GOAL else 'NOT met'}")


if __name__ == "__main__":
    main()
