"""Editor latency of `npu-opt lsp` on a user's kernel file, at the default settings.

The file (benchmarks/lsp_block.py): 289 lines, 19 hand-written `@device` kernels of one
model block (residual add, an i8 projection, RMSNorm, softmax, a transpose, leaky ReLU, a
widening copy, copies), importing a helper module beside it, as issue 58's user had.
Measured over stdio with a plain JSON-RPC client that declares work-done progress support
and sends no settings (the defaults: debounce 200 ms, time limit 5 s):

- first diagnostics: from starting the server process to the first `publishDiagnostics`
  of the opened file (the client sends initialize, initialized and didOpen at once, as an
  editor opening a file does), and from the didOpen alone; whether a `$/progress` begin
  came before them; and the CPU time the server and its worker (with the worker's checks)
  used until then, the fair measure on a loaded machine;
- re-check: from a `didChange` of the whole buffer (copy_0's fetch tile edited) to the
  `publishDiagnostics` of that version, one edit at a time, each after the last one's
  diagnostics and a pause of a typist (0.5 s);
- baseline: `python -m driver.cli check FILE`, a fresh process, in the same run (the
  ratio's denominator).

While it runs, `--load N` CPU-bound processes (default 1) keep the machine busy, as an
editor's machine is (the issue's "while the machine does other work"); each line gives the
1-minute load average when it started. `--against DIR` (a checkout of another version, e.g.
main's) measures that version's server too, in paired rounds (`--rounds`) that alternate
which of the two goes first, so both see the same machine. Each version's bytecode is
written first, under a prefix of its own (an installed package's first start after its
install), so neither pays for compiling its sources in the numbers.
Run: python benchmarks/bench_lsp.py [--edits 20] [--load 1] [--rounds 1] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lsp_block import HELPERS, KERNELS, kernel_file  # noqa: E402 - the benchmark's data, beside it

ROOT = Path(__file__).resolve().parents[1]


PYCACHE = Path(tempfile.mkdtemp(prefix="bench-lsp-pyc-"))


def _env(root: Path) -> dict[str, str]:
    """The environment of a version's processes: its bytecode written and read under a prefix
    of its own (as an installed package has its bytecode), whatever the caller's
    PYTHONDONTWRITEBYTECODE says, so a checkout that happens to hold stale `.pyc` files
    and one that holds none start alike."""
    env = dict(os.environ, PYTHONPATH=str(root), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONPYCACHEPREFIX=str(PYCACHE / str(abs(hash(str(root))))))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _compile(root: Path) -> None:
    """Write the version's bytecode (what a first start after installing does), unmeasured."""
    code = ("import driver.cli, driver.lsp.server, driver.lsp.worker, driver.check_command\n"
            "from npu_opt.stagebase import load_lazy_stages\nload_lazy_stages()")
    subprocess.run([sys.executable, "-c", code], cwd=root, env=_env(root), check=True, capture_output=True)


ENV = _env(ROOT)
BUSY = "while True:\n    sum(i * i for i in range(10000))\n"


class Client:
    """A minimal LSP client over the server's stdio (it answers the server's requests with null)."""

    def __init__(self, root: Path = ROOT) -> None:
        self.start = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "driver.cli", "lsp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, cwd=root, env=_env(root))
        self.next = 0
        self.seen: list[tuple[float, dict]] = []

    def send(self, method: str, params: dict, request: bool = False) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next += 1
            message["id"] = self.next
        self._write(message)

    def _write(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def receive(self) -> dict:
        length = 0
        while True:
            line = self.proc.stdout.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        message = json.loads(self.proc.stdout.read(length))
        self.seen.append((time.perf_counter(), message))
        if "method" in message and "id" in message:  # a request of the server's (workDoneProgress/create)
            self._write({"jsonrpc": "2.0", "id": message["id"], "result": None})
        return message

    def until(self, predicate) -> dict:
        while True:
            message = self.receive()
            if predicate(message):
                return message

    def close(self) -> None:
        self.send("shutdown", {}, request=True)
        self.send("exit", {})
        self.proc.wait(timeout=30)


def _published(uri: str, version: int | None = None):
    return lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri \
        and (version is None or m["params"].get("version") == version)


def bench_lsp(path: Path, edits: int, root: Path = ROOT) -> dict:
    load = os.getloadavg()[0]
    client = Client(root)
    uri = path.as_uri()
    client.send("initialize", {"processId": None, "rootUri": path.parent.as_uri(),
                               "capabilities": {"window": {"workDoneProgress": True}}}, request=True)
    client.send("initialized", {})
    opened = time.perf_counter()
    client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                          "text": kernel_file(0)}})
    first = client.until(_published(uri))
    done = time.perf_counter()
    cpu = _cpu(client.proc.pid)
    progress = [t for t, m in client.seen if m.get("method") == "$/progress"
                and m["params"]["value"].get("kind") == "begin"]
    times = []
    for version in range(2, edits + 2):
        time.sleep(0.5)
        start = time.perf_counter()
        client.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": kernel_file(version)}]})
        client.until(_published(uri, version))
        times.append(time.perf_counter() - start)
    client.close()
    return {"load": load, "from_start": done - client.start, "from_open": done - opened, "recheck": times,
            "cpu": cpu, "diagnostics": len(first["params"]["diagnostics"]),
            "progress": None if not progress else progress[0] - client.start}


def _cpu(pid: int) -> float | None:
    """CPU seconds (user + system) the process and its descendants used so far, the ended
    children they waited for included (Linux's /proc; None elsewhere): the fair measure of
    the start-up on a machine whose other work stretches the wall time."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = [c for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()]
    except OSError:
        return None
    ticks = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime
    return ticks + sum(_cpu(int(child)) or 0.0 for child in children)


def bench_check(path: Path, runs: int = 5) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "driver.cli", "check", str(path)], cwd=ROOT, env=ENV,
                       capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return times


def _line(label: str, lsp: dict) -> str:
    progress = "none" if lsp["progress"] is None else f"{lsp['progress']:.2f} s"
    cpu = "?" if lsp["cpu"] is None else f"{lsp['cpu']:.2f}"
    return (f"{label:>8}  load {lsp['load']:5.2f}  first diagnostics {lsp['from_start']:5.2f} s, CPU {cpu} s "
            f"(progress begin: "
            f"{progress})  re-check median {statistics.median(lsp['recheck']) * 1000:6.1f} ms "
            f"(max {max(lsp['recheck']) * 1000:.1f} ms)")


def _median_cpu(runs: list[dict]) -> str:
    known = [r["cpu"] for r in runs if r["cpu"] is not None]
    return f"{statistics.median(known):.2f} s" if known else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--load", type=int, default=1, help="CPU-bound processes running meanwhile")
    parser.add_argument("--rounds", type=int, default=1, help="paired rounds (with --against)")
    parser.add_argument("--against", type=Path, help="another checkout whose server is measured in the same run")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    path = folder / "block.py"
    path.write_text(kernel_file(0))
    (folder / "bench_helpers.py").write_text(HELPERS)
    versions = [("this", ROOT)] + ([("against", args.against.resolve())] if args.against else [])
    runs: dict[str, list[dict]] = {label: [] for label, _ in versions}
    for _, root in versions:
        _compile(root)
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.load)]
    print(f"file: {len(kernel_file(0).splitlines())} lines, {KERNELS} kernels importing a helper module; "
          f"{args.load} busy process(es) meanwhile; default settings; {args.edits} edits a round")
    try:
        for round_ in range(args.rounds if args.against else 1):
            order = versions if round_ % 2 == 0 else versions[::-1]
            for label, root in order:
                runs[label].append(bench_lsp(path, args.edits, root))
                print(f"round {round_ + 1}: " + _line(label, runs[label][-1]), flush=True)
        load = os.getloadavg()[0]
        check_times = bench_check(path)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    mine = runs["this"]
    recheck = statistics.median(t for r in mine for t in r["recheck"])
    first = statistics.median(r["from_start"] for r in mine)
    check = statistics.median(check_times)
    cpu = _median_cpu(mine)
    print(f"this: first diagnostics {first:.2f} s, CPU {cpu} (median of {len(mine)}), re-check {recheck * 1000:.1f} ms "
          f"(median of {sum(len(r['recheck']) for r in mine)}); {mine[0]['diagnostics']} diagnostic(s)")
    if args.against:
        theirs = runs["against"]
        their_recheck = statistics.median(t for r in theirs for t in r["recheck"])
        their_first = statistics.median(r["from_start"] for r in theirs)
        print(f"against {args.against}: first diagnostics {their_first:.2f} s, CPU {_median_cpu(theirs)}, re-check {their_recheck * 1000:.1f} ms")
        print(f"ratio this / against: first diagnostics {first / their_first:.3f}, re-check "
              f"{recheck / their_recheck:.3f}")
    print(f"npu-opt check, fresh process (median of {len(check_times)}, load {load:.2f}): {check * 1000:7.1f} ms")
    print(f"ratio re-check / check: {recheck / check:.3f}")


if __name__ == "__main__":
    main()
