"""Issue 38 (7): does `npu-opt tune` pay for its workers?

The space is examples/tune_gemm_bf16.py's `SPACE` (216 distinct candidates of a tiled bf16
GEMM: tile sizes, packet, loop order, operand reuse, split-K), swept with pruning on (the
CLI's default) and without the oracle check (the check runs the best candidates in this
process, alike for every executor). Each round, taking turns so a busy spell of the shared
machine hits them all alike, times one whole `driver.tune.tune` call:
- serial: `--jobs 1` (inline, the baseline);
- `--jobs 2`: this process and one worker process forked by the call, as on the command line:
  this process never imports dask (a fork of it would cost more than the CLI's) and holds no
  other thread (one would make the pool spawn);
- dask (unless --no-dask): a running cluster of a `dask scheduler` process and a
  `dask worker --nworkers 2 --nthreads 1` process started as docs/tuning.md says
  (driver/tune_cluster.py: the tuner preloaded, dask's profiler off; the cluster's start is
  not timed, the client's connection is), swept from a process of its own that holds every
  dask client (benchmarks/tune_dask_side.py).
Printed: the wall time of each round, the medians, and for each executor two ratios
against the issue's goal (2 local workers >= 1.6x serial):
- wall: serial's median wall time / the executor's. The goal's own measure, and the verdict
  when the machine was quiet through the space's runs: the 1-minute load average, sampled
  before every run, at most the core count + 1 (the benchmark's own two busy processes
  count in it), and the CPU time the hypervisor stole below 10 % (/proc/stat `steal`).
  Both are printed per round.
- busiest-process CPU: serial's CPU / the CPU of the busiest process of the executor (this
  process or its pool worker; the busiest dask worker), read from each process's own clock,
  which the other processes on the machine do not stretch (a dask worker's from /proc by its
  pid, `_Cluster`: reading it through a client counted the client's calls as the worker's
  CPU, and the client process's window holds the sweep alone, not the benchmark's reads). With a free core per process the
  wall time nears it, overheads aside. The verdict when the machine was loaded: the wall
  ratio is then printed and not judged (the other agents' load, not the tuner, sets it).
Serial's and `--jobs 2`'s lines also give the system CPU and minor page faults of this
process and of its pool worker (benchmarks/sweep_time.py `Faults`: after the fork each pays
the copy-on-write of every shared page it writes). The dask scheduler's and the client
process's CPU are printed as well (on 2 cores they take time from the workers), and how the
dask workers split the candidates' CPU and how many tasks each ran (each task costs a
worker's event loop its messages), beside how long each waited for a CPU while runnable
(/proc schedstat): a loaded machine runs one worker less, and the sweep, which sends a new
batch whenever one comes back, gives that one less work. For `--jobs 2` and dask a *split
ceiling* follows (`_ceiling`): the CPU the two processes sharing the candidates spent in
all, against serial's, and the best busiest-process ratio an even split of that CPU could
give; below the goal, balancing the candidates better cannot meet it, only a cheaper
executor can. Every executor must find the same winner.
Every run starts with the compiler's memos (ir/memo.py) empty in every process (`clear_memos`
here and in the dask client's process before it, on each dask worker through the client; a
pool worker forks from here), as in
a fresh `npu-opt tune` process: otherwise the serial sweep, run in this process round after
round, answers most of its trace and lowering questions from the memos its earlier rounds
filled (seed 3: 0.38 s of CPU warm, 0.55 s with them empty), while each dask worker has seen
only the candidates it happened to get. `--warm` keeps them (the measure before round 21).
BLAS pools are held to one thread (the sweep does no linear algebra; the limit keeps a
worker from spawning a pool per core).
Besides the fixed space, `--drawn N` spaces drawn by benchmarks/drawn_kernels.py
(`draw_space`, seeds from `--seed`: tiled or batched synth GEMMs of 200+ distinct candidates,
most pruned),
each also swept serially without pruning (does pruning pay?); the worst space's ratio is
the verdict. Rounds take turns, which executor goes first rotating.
Run: python benchmarks/bench_tune.py [--rounds N] [--no-dask] [--drawn N] [--seed S] [--seeds S,S,...] [--no-fixed]
     [--no-unpruned] [--warm]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"  # inherited by the workers

import attrs  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from driver.tune import tune  # noqa: E402
from driver.tune_cluster import local_cluster  # noqa: E402
from driver.tune_exec import FactoryRef, load_space  # noqa: E402
from benchmarks.drawn_kernels import draw_space  # noqa: E402
from benchmarks.schedstat import thread_times  # noqa: E402
from benchmarks.sweep_time import Faults, timed  # noqa: E402
from benchmarks.tune_dask_side import DaskSide  # noqa: E402
from ir.memo import clear_memos  # noqa: E402

FILE = str(ROOT / "examples" / "tune_gemm_bf16.py")
GOAL = 1.6


def _steal() -> tuple[int, int]:
    """(the CPU jiffies stolen by the hypervisor, all jiffies) since boot (/proc/stat; (0, 0)
    where there is none)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return (fields[7] if len(fields) > 7 else 0), sum(fields)


class Machine:
    """How loaded the machine is: the 1-minute load average before each run, the share of CPU
    stolen over the space's runs. Quiet: load <= cores + 1 (this benchmark's own two busy
    processes count) and steal < 10 %."""

    def __init__(self) -> None:
        self.loads: list[float] = []
        self._start = _steal()

    def sample(self) -> float:
        self.loads.append(os.getloadavg()[0])
        return self.loads[-1]

    def steal(self) -> float:
        stolen, total = (b - a for a, b in zip(self._start, _steal()))
        return stolen / total if total else 0.0

    def quiet(self) -> bool:
        return max(self.loads, default=0.0) <= (os.cpu_count() or 1) + 1 and self.steal() < 0.10

    def describe(self) -> str:
        return (f"load average {min(self.loads, default=0):.1f}-{max(self.loads, default=0):.1f} on "
                f"{os.cpu_count()} cores, {100 * self.steal():.1f} % stolen: "
                f"{'quiet, the verdict is the wall ratio' if self.quiet() else 'LOADED, the verdict is the busiest-process CPU ratio (wall printed, not judged)'}")


SPACE_FILE = """import sys
sys.path.insert(0, {root!r})
from benchmarks.drawn_kernels import draw_space
from synth.space import space_of
SPACE = space_of(draw_space({seed}), run=False)
"""


def _proc_cpu(pid: int) -> float:
    """CPU seconds process `pid` of this machine has run, summed over its live threads
    (`/proc/PID/task/*/schedstat`, nanoseconds: the clock `time.process_time` reads): read
    from outside, so reading it costs the process nothing."""
    return _schedstat(pid)[0]


def _schedstat(pid: int) -> tuple[float, float]:
    """(CPU seconds, seconds runnable but waiting for a CPU) of process `pid`, summed over its
    live threads (benchmarks/schedstat.py)."""
    times = thread_times(pid).values()
    return sum(t[0] for t in times) / 1e9, sum(t[1] for t in times) / 1e9


class _Cluster:
    """The dask cluster's processes as this benchmark reads them: each worker's process CPU
    and wait from /proc (the cluster runs on this machine), so the reading adds nothing to the
    sweep's CPU, and the CPU of its candidates (`task_cpu`, through a client opened outside
    the sweep's window). Read through `Client.run` around the sweep, as before round 23, each
    worker's CPU counted a client's connection and the calls that read it (5-10 ms a run).
    Every client, the sweep's own included, lives in `side`, a process of its own
    (benchmarks/tune_dask_side.py): this one, which forks the `--jobs 2` pools, never imports
    dask."""

    def __init__(self, side: DaskSide) -> None:
        self.side = side
        self._pids, self._scheduler = side.ask("pids")

    def before(self, cold: bool) -> tuple[dict[str, tuple[float, float, float, float]], float]:
        """Each worker's (process CPU, its candidates' CPU, its wait for a CPU, the tasks it
        ran) and the scheduler's CPU before a run; `cold`: the workers' memos emptied first."""
        tasks = self.side.ask("tasks", cold)
        stats = {w: _schedstat(pid) for w, pid in self._pids.items()}
        return ({w: (stats[w][0], tasks[w][0], stats[w][1], tasks[w][1]) for w in stats},
                _proc_cpu(self._scheduler))

    def after(self) -> tuple[dict[str, tuple[float, float, float, float]], float]:
        stats, sched = {w: _schedstat(pid) for w, pid in self._pids.items()}, _proc_cpu(self._scheduler)
        tasks = self.side.ask("tasks", False)
        return {w: (stats[w][0], tasks[w][0], stats[w][1], tasks[w][1]) for w in stats}, sched


class _Run:
    """What one sweep gave: wall seconds, the CPU of the process that called `tune` and of its
    reaped children, the winner's index, the counts of ok, pruned and refused candidates, and
    the system CPU and page faults of both (benchmarks/sweep_time.py `Faults`)."""

    def __init__(self, wall: float, own: float, kids: float, winner: int | None,
                 counts: tuple[int, int, int], faults: Faults) -> None:
        self.wall, self.own, self.kids, self.winner, self.counts = wall, own, kids, winner, counts
        self.faults = faults


def _here(run: Callable[[], Any]) -> _Run:
    """A sweep in this process, timed."""
    return _Run(*timed(run))


def measure(label: str, ref: FactoryRef, rounds: int, dask: bool, unpruned: bool,
            warm: bool = False) -> list[tuple[float, float, bool]]:
    """Time the executors on the space `ref` names; per executor (wall ratio, busiest-process
    CPU ratio, whether the machine was quiet), ratios serial / executor of medians. Each run
    starts with every process's memos empty unless `warm`."""
    space = attrs.evolve(load_space(ref), inputs=None, oracle=None)  # the sweep alone
    print(f"{label}: {len(space.points())} distinct candidates; cpu count {os.cpu_count()}; BLAS threads 1; "
          f"memos {'kept from run to run (--warm)' if warm else 'emptied before every run'}")
    runs = {"serial": lambda: _here(lambda: tune(space, jobs=1)),
            "jobs 2": lambda: _here(lambda: tune(space, ref=ref, jobs=2))}
    if unpruned:
        runs["unpruned"] = lambda: _here(lambda: tune(space, jobs=1, prune=False))
    machine = Machine()
    with contextlib.ExitStack() as stack:
        address = None
        if dask:
            address = stack.enter_context(local_cluster(workers=2, threads=1))
            cluster = _Cluster(stack.enter_context(DaskSide(address)))
            runs["dask 2x1"] = lambda: _Run(*cluster.side.ask("sweep", ref, not warm))
        times: dict[str, list[float]] = {name: [] for name in runs}
        cpus: dict[str, list[tuple[float, ...]]] = {name: [] for name in runs}
        faults: dict[str, list[Faults]] = {name: [] for name in runs}
        winners: dict[str, set[int | None]] = {name: set() for name in runs}
        with threadpool_limits(1):
            for k in range(rounds):
                names = list(runs)
                loads = []
                for name in names[k % len(names):] + names[:k % len(names)]:  # which goes first rotates
                    loads.append(machine.sample())
                    if not warm:
                        clear_memos()
                    # the cluster is read outside this process's window: its client's CPU is not the sweep's
                    remote, sched = cluster.before(not warm) if name == "dask 2x1" else ({}, 0.0)
                    result = runs[name]()
                    times[name].append(result.wall)
                    own, kids = result.own, result.kids
                    spent, sched_spent = [(0.0, 0.0, 0.0, 0.0)], 0.0
                    if remote:
                        now, sched_now = cluster.after()
                        spent = [tuple(a - b for a, b in zip(t, remote[w])) for w, t in now.items()]
                        sched_spent = sched_now - sched
                    spent.sort(reverse=True)  # the worker of most process CPU first
                    busiest, least = spent[0], spent[-1]
                    cpus[name].append((own, kids, busiest[0], sched_spent, busiest[1],
                                       least[1], busiest[2], least[2], busiest[3], least[3], least[0]))
                    winners[name].add(result.winner)
                    faults[name].append(result.faults)
                    if k == 0:
                        print(f"  {name} sweep: {result.counts[0]} scheduled, {result.counts[1]} pruned, "
                              f"{result.counts[2]} refused", flush=True)
                print(f"  round {k}: " + ", ".join(f"{n} {t[-1]:.2f} s" for n, t in times.items())
                      + f"; load average {min(loads):.1f}-{max(loads):.1f}", flush=True)
    quiet = machine.quiet()
    print(f"  machine: {machine.describe()}")
    base = statistics.median(times["serial"])
    serial_cpu = statistics.median(x[0] for x in cpus["serial"])
    out = []
    for name, t in times.items():
        med = statistics.median(t)
        own, kids, busiest, sched, tasks, other, waited, other_waited, ran, other_ran, least = (
            statistics.median(x[i] for x in cpus[name]) for i in range(11))
        if name == "dask 2x1":
            print(f"  {name:9} CPU: the client's process {own:.2f} s (the probe's child {kids:.2f} s), the busiest dask worker "
                  f"{busiest:.2f} s ({tasks:.2f} s its candidates, the rest its event loop: heartbeats, ticks, "
                  f"the system monitor, more the longer the wall time), the scheduler {sched:.2f} s (medians)")
            print(f"  {'':9} split: the busiest worker's candidates {tasks:.2f} s in {ran:.0f} tasks, the other's "
                  f"{other:.2f} s in {other_ran:.0f}; waiting for a CPU {waited:.2f} s and {other_waited:.2f} s "
                  f"(medians; see `_schedstat`)")
        else:  # a dask worker's CPU is not this process's child's until the cluster stops
            f = Faults(*(statistics.median(x[i] for x in faults[name]) for i in range(4)))
            print(f"  {name:9} CPU: this process {own:.2f} s ({f.own_sys:.3f} s system, {f.own_faults:.0f} page faults), "
                  f"its worker processes {kids:.2f} s ({f.kids_sys:.3f} s system, {f.kids_faults:.0f} page faults) "
                  f"(medians; the faults: sweep_time.Faults)")
            busiest = kids if name == "jobs 2" else 0.0  # one pool worker
        path = max(own, busiest)
        if name in ("jobs 2", "dask 2x1"):
            print(_ceiling(name, serial_cpu, own + kids if name == "jobs 2" else busiest + least))
        line = (f"  {'':9} wall median {med:6.2f} s (min {min(t):6.2f} s): serial/this {base / med:5.2f}x; "
                f"busiest process {path:.2f} s CPU: serial CPU/that {serial_cpu / path:5.2f}x")
        if name == "unpruned":
            line += "  (pruning pays when > 1)"
        elif name != "serial":
            judged = base / med if quiet else serial_cpu / path
            line += (f"  (goal >= {GOAL}x on {'wall' if quiet else 'busiest-process CPU'}: "
                     f"{'met' if judged >= GOAL else 'NOT met'})")
            out.append((base / med, serial_cpu / path, quiet))
        print(line)
    assert len({w for ws in winners.values() for w in ws}) == 1, f"executors disagree on the winner: {winners}"
    print(f"  winner: #{next(iter(winners['serial']))} under every executor")
    return out


def _ceiling(name: str, serial: float, shared: float) -> str:
    """The best busiest-process CPU ratio an executor could reach at the CPU it spent: the
    two processes that share the candidates (this one and its pool worker; the two dask
    workers, event loops included) spent `shared` seconds in all (medians of each), so the
    busier spent at least half of it, however evenly the candidates were split. Against
    serial's CPU, what is left over is what the executor costs beyond the candidates:
    the fork's copy-on-write pages, the pool's threads, the worker's start and exit, a
    dask worker's messages. Below the goal, no split of the candidates can meet it at
    that cost."""
    extra = shared - serial
    return (f"  {'':9} split ceiling: its two processes {shared:.2f} s CPU in all, serial {serial:.2f} s "
            f"({extra:+.2f} s, {100 * extra / serial:+.0f} %): an even split would give at best "
            f"{serial / (shared / 2):.2f}x (medians of each process)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--drawn", type=int, default=1, help="spaces drawn by benchmarks/drawn_kernels.py")
    ap.add_argument("--seed", type=int, default=0, help="the first drawn space's seed")
    ap.add_argument("--seeds", default="", help="the drawn spaces' seeds, comma-separated (instead of --seed/--drawn)")
    ap.add_argument("--no-fixed", action="store_true", help="only the drawn spaces")
    ap.add_argument("--warm", action="store_true",
                    help="keep the compiler's memos from run to run (each run starts with them empty otherwise)")
    ap.add_argument("--no-unpruned", action="store_true",
                    help="skip the drawn spaces' unpruned serial sweep (the slowest run; pruning's own verdict)")
    args = ap.parse_args()
    worst: list[tuple[float, float, bool, str]] = []
    if not args.no_fixed:
        ratios = measure(f"fixed space {FILE}", FactoryRef(FILE, "SPACE"), args.rounds, not args.no_dask, False,
                         args.warm)
        worst += [(*r, "examples/tune_gemm_bf16.py SPACE") for r in ratios]
    with tempfile.TemporaryDirectory() as tmp:
        seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else range(args.seed, args.seed + args.drawn)
        for seed in seeds:
            path = Path(tmp) / f"drawn_space_{seed}.py"
            path.write_text(SPACE_FILE.format(root=str(ROOT), seed=seed))
            spec = draw_space(seed)
            label = (f"drawn space (seed {seed}): {spec.text} {spec.dtype_in}:{spec.dtype_out} "
                     + ",".join(f"{i}={n}" for i, n in spec.sizes.items()))
            ratios = measure(label, FactoryRef(str(path), "SPACE"), args.rounds, not args.no_dask,
                             not args.no_unpruned, args.warm)
            worst += [(*r, label) for r in ratios]
    wall, wall_label = min((r[0], r[3]) for r in worst)
    cpu, cpu_label = min((r[1], r[3]) for r in worst)
    quiet = all(r[2] for r in worst)
    print(f"worst wall ratio {wall:.2f}x ({wall_label}); worst busiest-process CPU ratio {cpu:.2f}x ({cpu_label})")
    judged = wall if quiet else cpu
    print(f"verdict on {'wall (the machine was quiet)' if quiet else 'busiest-process CPU (the machine was loaded)'}: "
          f"{judged:.2f}x; goal >= {GOAL}x: {'met' if judged >= GOAL else 'NOT met'}")


if __name__ == "__main__":
    main()
