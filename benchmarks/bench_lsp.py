"""Re-check latency of `npu-opt lsp` after an edit, against `npu-opt check` in a fresh process.

The file: 200 lines, 13 `@device` kernels (an i8 stream through fetch, collect, commit per
kernel, each with its own tile), one of them refused (COLLECT-2). Measured:
- lsp: the server over stdio (a plain JSON-RPC client here, debounce 0): the time from
  sending a `didChange` of the whole buffer (one kernel's tile edited) to receiving the
  `publishDiagnostics` of that version; the worker is warm (opened once before timing);
- check: `python -m driver.cli check FILE` on the same text, a fresh process each time
  (what an editor without a server would run on save).
Medians of 20 edits and 5 checks; the ratio's baseline is `check` measured in the same run.
One worker process; BLAS pools limited to one thread (OPENBLAS/OMP/MKL_NUM_THREADS=1).
Run: python benchmarks/bench_lsp.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

HEADER = '''from npu_opt import *

axes(N=8192)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")

'''

KERNEL = '''@device(chip=1)
def copy_{k}(ctx: Context, src: HbmTensor[i8, Chip, m("N")]) -> HbmTensor[i8, Chip, m("N")]:
    d = src.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N")])
    out = (ctx.main.begin(d.view())
           .fetch(m("N / {t}"), m("N % {t}"))
           .collect(m("N / {c}"), m("N % {c}"))
           .commit_trim(m("N % {c}"))
           .commit(m("N")))
    return out.to_hbm(ctx.tdma)


'''


def source(edit: int) -> str:
    """The 200-line file; `edit` picks kernel 0's fetch tile (the edit being re-checked)."""
    parts = [HEADER]
    for k in range(13):
        tile = (32, 64)[edit % 2] if k == 0 else 32
        collect = 16 if k == 7 else 32  # kernel 7 is refused: COLLECT-2
        parts.append(KERNEL.format(k=k, t=tile, c=collect))
    text = "".join(parts)
    lines = text.splitlines()
    return "\n".join(lines + ["# filler"] * max(0, 200 - len(lines))) + "\n"


class Client:
    """A minimal LSP client over the server's stdio."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "driver.cli", "lsp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, cwd=ROOT, env=ENV)
        self.next = 0

    def send(self, method: str, params: dict, request: bool = False) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next += 1
            message["id"] = self.next
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
        return json.loads(self.proc.stdout.read(length))

    def until(self, predicate) -> dict:
        while True:
            message = self.receive()
            if predicate(message):
                return message

    def close(self) -> None:
        self.send("shutdown", {}, request=True)
        self.send("exit", {})
        self.proc.wait(timeout=30)


def bench_lsp(path: Path, edits: int = 20) -> tuple[list[float], int]:
    client = Client()
    uri = path.as_uri()
    client.send("initialize", {"processId": None, "rootUri": ROOT.as_uri(), "capabilities": {},
                               "initializationOptions": {"npuOpt": {"debounceMs": 0}}}, request=True)
    client.until(lambda m: m.get("id") == 1)
    client.send("initialized", {})
    client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                          "text": source(0)}})
    first = client.until(lambda m: m.get("method") == "textDocument/publishDiagnostics")
    times = []
    for version in range(2, edits + 2):
        start = time.perf_counter()
        client.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": source(version)}]})
        client.until(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                     and m["params"].get("version") == version)
        times.append(time.perf_counter() - start)
    client.close()
    return times, len(first["params"]["diagnostics"])


def bench_check(path: Path, runs: int = 5) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "driver.cli", "check", str(path)], cwd=ROOT, env=ENV,
                       capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    path = folder / "kernels_200.py"
    path.write_text(source(0))
    lsp_times, diagnostics = bench_lsp(path)
    check_times = bench_check(path)
    lsp, check = statistics.median(lsp_times), statistics.median(check_times)
    print(f"file: {len(source(0).splitlines())} lines, 13 kernels, {diagnostics} diagnostic(s)")
    print(f"lsp re-check after an edit (median of {len(lsp_times)}): {lsp * 1000:7.1f} ms "
          f"(max {max(lsp_times) * 1000:.1f} ms)")
    print(f"npu-opt check, fresh process (median of {len(check_times)}): {check * 1000:7.1f} ms")
    print(f"ratio lsp / check: {lsp / check:.3f}")


if __name__ == "__main__":
    main()
