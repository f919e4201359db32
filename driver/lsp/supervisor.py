"""The server's side of the worker process (driver/lsp/worker.py): start it, keep it warm,
send it a buffer, wait with a time limit, and replace it when it dies or hangs.

The worker runs each check in a forked child (driver/lsp/isolation.py). A check that
sent no result (its child exited through `os._exit` reached from native code or crashed,
or outlived the time limit even after its own SIGALRM: a loop inside C code) becomes one
diagnostic at the place it was last reported at; the worker goes on. A worker that itself
ended or stopped answering is replaced. The worker runs in its own session, so a file that
signals its process group or its parent's never reaches the server; the server itself
never runs the user's code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

__all__ = ["Worker", "Limits", "EMPTY", "record"]

EMPTY: dict[str, Any] = {"diagnostics": [], "stages": [], "mappings": [], "tensors": [], "classes": {}}
GRACE_SECONDS = 3.0  # after the worker's own alarm, how long the server waits before killing it


class Limits:
    """The worker's limits: seconds per check and megabytes of address space."""

    def __init__(self, seconds: float = 5.0, memory_mb: int = 4096) -> None:
        self.seconds = seconds
        self.memory_mb = memory_mb


def record(message: str, line: int | None, file: str | None, *, code: str = "USAGE", col: int | None = None,
           severity: str = "error", help: str | None = None, kernel: str | None = None) -> dict[str, Any]:
    """A diagnostic no trace raised (a load error, a worker that died...), as the server
    shows one (driver/lsp/facts.py `diagnostic_record`)."""
    return {"code": code, "message": message, "line": line, "col": col, "length": 1, "severity": severity,
            "notes": [], "help": help, "stage": None, "kernel": kernel, "file": file}


def _died_record(path: str, line: int, kernel: str | None, what: str) -> dict[str, Any]:
    during = f"while tracing `{kernel}`" if kernel else "while importing the file"
    return record(f"the language server's checking process {what} {during}", line or 1, path, kernel=kernel,
                  help="a kernel file may not end its process (os._exit, a crash in native code) or run "
                       "without end; the next check starts in a fresh process")


class Worker:
    """One warm worker process, used by one check at a time."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.process: subprocess.Popen | None = None
        self.enums: dict[str, list[str]] = {}
        self.lock = threading.Lock()
        self._next = 0
        self._eof = False  # the current worker's channel reached end of file
        self._greeted = False  # the current worker said hello (it imported npu-opt and is warm)

    def spawn(self) -> None:
        """Start the worker process if none runs, without waiting for it: `npu-opt lsp` starts
        it first thing, so it imports npu-opt while the server loads the protocol libraries."""
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self._spawn()

    def _spawn(self) -> None:
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   PYTHONUNBUFFERED="1")
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "driver.lsp.worker", "--memory", str(self.limits.memory_mb)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            encoding="utf-8", env=env, start_new_session=True)
        self._eof, self._greeted = False, False

    def _ready(self) -> None:
        """A running worker that said hello (started now if none runs); the caller holds the lock."""
        if self.process is None or self.process.poll() is not None:
            self._spawn()
        if not self._greeted:
            hello = self._read(time.monotonic() + 60.0)
            if not hello or "hello" not in hello:
                self.stop()
                raise RuntimeError("the checking process did not start")
            self.enums = hello["hello"].get("enums", {})
            self._greeted = True

    @property
    def ready(self) -> bool:
        """Whether the worker said hello (a check now does not wait for it to start)."""
        return self._greeted and self.process is not None and self.process.poll() is None

    def _read(self, deadline: float) -> dict[str, Any] | None:
        """One reply line, or None when the worker ended or the deadline passed."""
        assert self.process is not None and self.process.stdout is not None
        result: list[Any] = []
        reader = threading.Thread(target=lambda: result.append(self.process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(max(0.0, deadline - time.monotonic()))
        if reader.is_alive() or not result:
            return None
        if not result[0]:
            self._eof = True
            return None
        try:
            reply = json.loads(result[0])
        except ValueError:
            reply = None
        return reply if isinstance(reply, dict) else {}

    def _ended(self) -> int | None:
        """The worker's exit status when its channel reached end of file (it is exiting: wait
        for it), else None: it is still running and did not answer in time."""
        assert self.process is not None
        if self._eof:
            try:
                return self.process.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                return None
        return self.process.poll()

    def _how(self, reply: dict[str, Any]) -> str:
        if reply.get("outlived"):
            return f"outlived its time limit of {self.limits.seconds:g} s by {GRACE_SECONDS:g} s and was stopped"
        return f"ended with status {reply.get('ended')}"

    def ensure(self) -> None:
        """Start the worker if it is not running and wait until it is warm."""
        with self.lock:
            self._ready()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def check(self, path: str, source: str, fresh: bool = False, early: Any = None) -> dict[str, Any]:
        """The facts of `source` as the file `path` (driver/lsp/facts.py); `fresh`: every
        kernel traced, none of the last check's facts reused (driver/lsp/reuse.py), and
        `early` called with its diagnostics before the rest is ready."""
        with self.lock:
            self._ready()
            self._next += 1
            request = {"id": self._next, "path": path, "source": source, "name": f"_npu_opt_lsp_{self._next}",
                       "seconds": self.limits.seconds, "fresh": fresh}
            assert self.process is not None and self.process.stdin is not None
            try:
                self.process.stdin.write(json.dumps(request) + "\n")
                self.process.stdin.flush()
            except OSError:
                self.stop()
                return dict(EMPTY, diagnostics=[_died_record(path, 1, None, "could not be reached")])
            deadline = time.monotonic() + self.limits.seconds + 2 * GRACE_SECONDS  # the worker's own is 1 x
            where: list[Any] = [None, 1]
            while True:
                reply = self._read(deadline)
                if reply is None:
                    ended = self._ended()
                    self.stop()
                    what = self._how({"ended": ended, "outlived": ended is None})
                    return dict(EMPTY, diagnostics=[_died_record(path, where[1], where[0], what)])
                if reply.get("id") != self._next:
                    continue
                if "at" in reply:
                    where = reply["at"]
                elif "early" in reply:
                    if early is not None:
                        early(reply["early"])
                elif "result" in reply:
                    return reply["result"]
                elif "ended" in reply:
                    return dict(EMPTY, diagnostics=[_died_record(path, where[1], where[0], self._how(reply))])
