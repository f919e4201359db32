"""Start-up cost of the command line, of `import npu_opt` and of `npu-opt compile examples/`.

Each command runs as a fresh process several times, the commands taking turns round by
round (so a busy spell of the machine hits them all alike); printed are the best and the
median CPU time (user + system, which another process on the machine disturbs far less than
the wall time) and the best wall time, with ratios against baselines measured in the same
run; a goal is judged on the ratio of the medians:
- `npu-opt --version` and `npu-opt explain DMA-1` vs `python -c "import numpy"` (goal <= 1.5x);
- `python -c "import npu_opt"` (goal < 0.3 s CPU);
- issue 38 item 6: `npu-opt compile examples/gemm.py -o DIR --no-cache`, a fresh DIR every run (a
  real compile: trace, lower, verify, emit, write; never a replay of a run record) vs
  `python -c "import numpy"` (goal <= 1.5x), three ways: with npu-opt's user cache (attrs
  methods, mapping syntax trees: ir/attrs_code_cache.py, ir/mapping/syntax.py; the lark
  tables ship with the grammars, ir/lark_cache.py) warm; with it empty (a
  fresh NPU_OPT_CACHE_DIR every run); from a read-only copy of the checkout without bytecode
  (no __pycache__; a read-only bind mount when run as root, whom file modes do not stop,
  else modes without write bits) with the user cache warm, where npu-opt keeps the bytecode
  Python cannot write beside the sources (driver/bytecode_home.py); and from that copy with
  nothing kept anywhere (PYTHONDONTWRITEBYTECODE=1, the cache empty too);
- `npu-opt compile examples/ -o DIR` (goal, judged on the cold run: <= 1.3x of `python -c "import npu_opt"`, the
  issue's baseline, which since the package became lazy loads almost nothing; printed
  too against `python -c "from npu_opt import *"`, the DSL import every kernel file does),
  with DIR's compile cache warm (the same DIR every run: the everyday rebuild, answered
  from DIR's run record) and cold (a fresh DIR and a fresh, empty NPU_OPT_CACHE_DIR each
  run: every kernel traced, lowered, verified and emitted, on --jobs' default of one worker
  per CPU, nothing reused from an earlier process).
- issue 61 item 4: what each start-up layer saves on a warm compile (`npu-opt compile
  examples/gemm.py -o FRESH --no-cache`, npu-opt's user cache warm): the same compile from a
  copy of the checkout with the layer switched off in the copy, against an unchanged copy,
  in the same rounds (medians of CPU time, one process, one kernel, OMP_NUM_THREADS as the
  environment sets it). The layers: the attrs code cache (ir/attrs_code_cache.py), the
  parse tables shipped beside the grammars (`*.lalr`, against the same tables kept in the
  user cache) and ir/lark_cache.py as a whole (against building each parser), and the
  bytecode home (driver/bytecode_home.py:
  read-only copies without bytecode, with and without it). A layer that saves less than 5%
  of the warm compile is to be removed (`--layers` runs only this part). Each is measured
  twice: the same kernel compiled again (every mapping text's syntax tree kept in the user
  cache, ir/mapping/syntax.py), and the kernel edited (the cache warm but for those trees,
  so its mapping texts are parsed: the everyday edit-compile loop); the verdict takes the
  larger saving. (The SHA-256 shim, a module of CPython's SHA-256 used instead of hashlib's,
  saved 5-6 ms, 1.5% of the warm compile: it was removed.)
With `--before DIR` (a checkout of older npu-opt code, e.g. `git archive main | tar -x -C
DIR`), the compile commands of that code run in the same rounds, from DIR on its own
examples/, and each "after" line gets its before/after ratio.
Every child's NPU_OPT_CACHE_DIR is a temporary directory of this run, never the user's: the
"warm" one is filled by one warm-up run of each command, as any earlier use would; the
"empty" ones are new for every run. Children run with the environment's
PYTHONDONTWRITEBYTECODE dropped (but the read-only copy's): the warm-up round writes the
bytecode an installed package has, so only the no-bytecode line times Python compiling sources.
Run: python benchmarks/bench_startup.py [--before DIR] [--runs N] [--layers]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def _fresh(text: str, tmp: str) -> str:
    """`text` with `{FRESH}` a new output directory and `{CACHE}` a new, empty cache directory."""
    return text.replace("{FRESH}", os.path.join(tmp, "out")).replace("{CACHE}", os.path.join(tmp, "cache"))


def _run_once(cmd: list[str], cwd: Path, env: dict[str, str], tmp: str, seed: Path | None = None) -> tuple[float, float]:
    args = [_fresh(a, tmp) for a in cmd]
    env = {k: _fresh(v, tmp) for k, v in env.items()}
    if seed is not None:  # the new cache directory starts as a copy of `seed`
        shutil.copytree(seed, _fresh("{CACHE}", tmp))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, elapsed


def measure(commands: dict[str, tuple[list[str], Path, dict[str, str]]], runs: int,
            seeds: dict[str, Path] | None = None) -> dict[str, tuple[float, ...]]:
    """(best CPU seconds, best wall seconds, median CPU, median wall) of each command: one warm-up round, then
    `runs` rounds in which every command runs once. `{FRESH}` in a command and `{CACHE}` in
    its environment are new directories each run ({CACHE} a copy of the command's seed if it has one)."""
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    wall: dict[str, list[float]] = {name: [] for name in commands}
    for k in range(runs + 1):
        for name, (cmd, cwd, env) in commands.items():
            with tempfile.TemporaryDirectory() as tmp:
                c, w = _run_once(cmd, cwd, env, tmp, (seeds or {}).get(name))
            if k:
                cpu[name].append(c)
                wall[name].append(w)
    return {name: (min(cpu[name]), min(wall[name]), statistics.median(cpu[name]), statistics.median(wall[name]))
            for name in commands}


def line(label: str, got: tuple[float, ...], base: tuple[float, ...] | None = None,
         goal: float | None = None) -> None:
    text = f"  {label:46} cpu {got[0] * 1e3:7.1f} ms (median {got[2] * 1e3:7.1f})  wall {got[1] * 1e3:7.1f} ms"
    if base is not None:
        ratio = got[2] / base[2]  # the verdict's: medians
        text += f"  cpu {got[0] / base[0]:5.2f}x (median {ratio:5.2f}x)  wall {got[1] / base[1]:5.2f}x"
        if goal is not None:
            text += f"  (goal <= {goal:g}x median cpu: {'met' if ratio <= goal else 'MISSED'})"
    print(text)


def _copy(dest: Path, root: Path = ROOT, patch: tuple[str, str, str] | None = None) -> Path:
    """The packages and examples of the checkout `root` copied to `dest` without bytecode;
    `patch` (file, old text, new text) edits one file of the copy."""
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("driver", "npu_opt", "synth", "ir", "tu_ops", "visa", "backends", "examples"):
        shutil.copytree(root / name, dest / name, ignore=skip)
    if patch is not None:
        file, old, new = patch
        text = (dest / file).read_text()
        assert old in text, (file, old)
        (dest / file).write_text(text.replace(old, new, 1))
    return dest


def _read_only_copy(dest: Path, root: Path = ROOT, patch: tuple[str, str, str] | None = None) -> Path:
    """`_copy`, then made read-only (a checkout nobody compiled, on a read-only mount): for
    root, whom file modes do not stop, a read-only bind mount of the copy at `dest`-mount (returned)."""
    _copy(dest, root, patch)
    for path in dest.rglob("*"):
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    if os.geteuid() != 0:
        return dest
    mount = dest.with_name(dest.name + "-mount")
    mount.mkdir()
    ok = subprocess.run(["mount", "--bind", str(dest), str(mount)], capture_output=True).returncode == 0
    if ok and subprocess.run(["mount", "-o", "remount,bind,ro", str(mount)], capture_output=True).returncode == 0:
        return mount
    if ok:
        subprocess.run(["umount", str(mount)], check=False)
    print(f"  note: running as root without a read-only mount, {dest} is writable to the children")
    return dest


def _release(copy: Path) -> None:
    """Undo `_read_only_copy`: unmount its bind mount, give its folders their write bits back."""
    if copy.name.endswith("-mount"):
        subprocess.run(["umount", str(copy)], check=False)
        copy = copy.with_name(copy.name[: -len("-mount")])
    _writable(copy)


def _writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        if path.is_dir():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


def _commands(before: Path | None, warm_dirs: dict[str, str], read_only: Path,
              read_only_before: Path | None) -> dict[str, tuple[list[str], Path, dict[str, str]]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["NPU_OPT_CACHE_DIR"] = warm_dirs["cache"]  # warm: filled by the warm-up round
    empty = env | {"NPU_OPT_CACHE_DIR": "{CACHE}"}  # a new, empty cache every run
    ours = (ROOT, env)
    cli = [PY, "-m", "driver.cli"]
    one = [*cli, "compile", "examples/gemm.py", "-o", "{FRESH}", "--no-cache"]
    commands = {
        "numpy": ([PY, "-c", "import numpy"], *ours),
        "version": ([*cli, "--version"], *ours),
        "explain": ([*cli, "explain", "DMA-1"], *ours),
        "npu": ([PY, "-c", "import npu_opt"], *ours),
        "star": ([PY, "-c", "from npu_opt import *"], *ours),
        "warm": ([*cli, "compile", "examples/", "-o", warm_dirs["warm"]], *ours),
        "cold": ([*cli, "compile", "examples/", "-o", "{FRESH}"], ROOT, empty),
        "one": (one, *ours),
        "one empty": (one, ROOT, empty),
        "one read-only": (one, read_only, env | {"PYTHONPATH": str(read_only)}),
        "one no bytecode": (one, read_only, _no_bytecode(empty, read_only)),
    }
    if before is not None:  # `python -m` puts the working directory first on sys.path
        old = (before, env | {"PYTHONPATH": str(before)})
        commands["warm before"] = ([*cli, "compile", "examples/", "-o", warm_dirs["warm before"]], *old)
        commands["cold before"] = ([*cli, "compile", "examples/", "-o", "{FRESH}"], before, old[1] | {"NPU_OPT_CACHE_DIR": "{CACHE}"})
        commands["one before"] = (one, *old)
        commands["version before"] = ([*cli, "--version"], *old)
        commands["npu before"] = ([PY, "-c", "import npu_opt"], *old)
        commands["one empty before"] = (one, before, old[1] | {"NPU_OPT_CACHE_DIR": "{CACHE}"})
        assert read_only_before is not None
        commands["one no bytecode before"] = (one, read_only_before, _no_bytecode(empty, read_only_before))
    return commands


def _no_bytecode(env: dict[str, str], root: Path) -> dict[str, str]:
    return env | {"PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}


# Each start-up layer switched off in a copy of the checkout: (file, old text, new text).
LAYERS: dict[str, tuple[str, str, str]] = {
    "attrs code cache": ("ir/__init__.py", "\nwatch()", "\npass"),
    "shipped parse tables (vs the user cache's)": (
        "ir/lark_cache.py", "    for path in (table_file(grammar_file), kept):\n", "    for path in (kept,):\n"),
    "lark_cache.py as a whole (vs building)": (
        "ir/lark_cache.py", "    for path in (table_file(grammar_file), kept):\n",
        '    return lark.Lark(grammar, parser="lalr", **options)\n    for path in ():\n'),
}
HOME = ("driver/bytecode_home.py", "    if sys.pycache_prefix is not None or sys.dont_write_bytecode:\n",
        "    if True:\n")


def layers(runs: int) -> int:
    """What each start-up layer saves on a warm compile (module docstring)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmd = [PY, "-m", "driver.cli", "compile", "examples/gemm.py", "-o", "{FRESH}", "--no-cache"]
    print(f"start-up layers: median CPU of {runs} interleaved rounds, each a fresh process compiling "
          f"examples/gemm.py (one kernel, one process, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}), "
          f"npu-opt's user cache warm; {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        roots = {"with every layer": _copy(base / "full")}
        roots |= {f"without {layer}": _copy(base / f"off{n}", patch=patch) for n, (layer, patch) in enumerate(LAYERS.items())}
        read_only = {"read-only, with the bytecode home": _read_only_copy(base / "ro-full"),
                     "read-only, without the bytecode home": _read_only_copy(base / "ro-off", patch=HOME)}
        commands = {name: (cmd, root, env | {"PYTHONPATH": str(root), "NPU_OPT_CACHE_DIR": str(base / f"cache-{n}")})
                    for n, (name, root) in enumerate((roots | read_only).items())}
        try:
            for name, (args, cwd, child_env) in commands.items():  # each variant compiles (and warms its cache)
                out = os.path.join(tmp, "check-out")
                done = subprocess.run([a.replace("{FRESH}", out) for a in args], cwd=cwd, env=child_env,
                                      capture_output=True, text=True, check=False)
                assert done.returncode == 0, (name, done.stdout, done.stderr)
                shutil.rmtree(out)
            seeds = {}  # each variant's warm cache without the mapping syntax trees: an edited kernel's new texts
            for n, name in enumerate(list(commands)):
                args, cwd, child_env = commands[name]
                seeds[f"{name}, edited"] = base / f"seed-{n}"
                shutil.copytree(child_env["NPU_OPT_CACHE_DIR"], seeds[f"{name}, edited"],
                                ignore=shutil.ignore_patterns("mappings-*"))
                commands[f"{name}, edited"] = (args, cwd, child_env | {"NPU_OPT_CACHE_DIR": "{CACHE}"})
            t = measure(commands, runs, seeds)
        finally:
            for copy in read_only.values():
                _release(copy)
    line("warm compile, with every layer", t["with every layer"])
    line("  the same, the kernel edited (no syntax tree kept)", t["with every layer, edited"])
    line("  the same, read-only copy with the bytecode home", t["read-only, with the bytecode home"])
    print(f"  {'layer':46} {'saves (median CPU)':>20}  {'of the warm compile':>20}  verdict (>= 5% stays)")
    pairs = [(name, f"without {name}", "with every layer") for name in LAYERS]
    pairs.append(("bytecode home (read-only checkout)", "read-only, without the bytecode home",
                  "read-only, with the bytecode home"))
    for name, off, on in pairs:
        shares = []
        for kind in ("", ", edited"):
            saved = t[off + kind][2] - t[on + kind][2]
            shares.append(saved / t[on + kind][2])
            verdict = ("kept" if max(shares) >= 0.05 else "REMOVE") if kind else ""
            print(f"  {(name if not kind else '  the kernel edited (new mapping texts)'):46} {saved * 1e3:17.1f} ms  "
                  f"{shares[-1] * 100:19.1f}%  {verdict}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, default=None, metavar="DIR", help="a checkout of older npu-opt code")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--layers", action="store_true", help="only what each start-up layer saves")
    opts = parser.parse_args()
    if opts.layers:
        return layers(opts.runs)
    print(f"start-up, best and median of {opts.runs} fresh processes (verdicts on medians); python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        warm_dirs = {"warm": os.path.join(tmp, "build"), "warm before": os.path.join(tmp, "build-before"),
                     "cache": os.path.join(tmp, "cache")}
        read_only = _read_only_copy(Path(tmp) / "read-only")
        before = opts.before and opts.before.resolve()
        read_only_before = before and _read_only_copy(Path(tmp) / "read-only-before", before)
        try:
            t = measure(_commands(before, warm_dirs, read_only, read_only_before), opts.runs)
        finally:
            for copy in (read_only, read_only_before):
                if copy is not None:
                    _release(copy)
    line('baseline: python -c "import numpy"', t["numpy"])
    line("npu-opt --version", t["version"], t["numpy"], 1.5)
    line("npu-opt explain DMA-1", t["explain"], t["numpy"], 1.5)
    line('python -c "import npu_opt"', t["npu"], t["numpy"])
    for kind in ("version", "npu"):
        if f"{kind} before" in t:
            line(f"  {kind}: after against before", t[kind], t[f"{kind} before"])
    print(f"  import npu_opt: {t['npu'][2]:.3f} s CPU, median  (goal < 0.3 s: {'met' if t['npu'][2] < 0.3 else 'MISSED'})")
    line('python -c "from npu_opt import *"', t["star"], t["npu"])
    line("npu-opt compile examples/gemm.py -o FRESH --no-cache", t["one"], t["numpy"], 1.5)
    line("  the same, npu-opt's cache empty", t["one empty"], t["numpy"], 1.5)
    line("  the same, read-only copy, cache warm", t["one read-only"], t["numpy"], 1.5)
    line("  the same, read-only copy, nothing kept", t["one no bytecode"], t["numpy"], 1.5)
    for kind in ("", " empty", " no bytecode"):
        if f"one{kind} before" in t:
            line(f"  before{kind or ' (cache warm)'}, against import numpy", t[f"one{kind} before"], t["numpy"])
            line(f"  after against before{kind}", t[f"one{kind}"], t[f"one{kind} before"])
    for kind in ("warm", "cold"):
        label = "cache warm" if kind == "warm" else "cold (fresh DIR and cache)"
        # the verdict is the cold one: a warm DIR answers from its run record (a replay)
        line(f"npu-opt compile examples/ -o DIR, {label}", t[kind], t["npu"], 1.3 if kind == "cold" else None)
        line("  the same against from npu_opt import *", t[kind], t["star"])
        if f"{kind} before" in t:
            line(f"  before ({opts.before}), against import npu_opt", t[f"{kind} before"], t["npu"])
            line("  after against before", t[kind], t[f"{kind} before"])
    return layers(opts.runs)


if __name__ == "__main__":
    sys.exit(main())
