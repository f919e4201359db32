"""Run one check in a forked child of a warm process, so nothing it does outlives it.

The language server's worker (driver/lsp/worker.py) imports npu-opt once, warms it up,
and then forks one child per check: the child imports the user's buffer, traces its
kernels, writes its messages and exits. Whatever the file changed at module level (an
`npu_opt.i8 = npu_opt.i32`, a patched helper, a class attribute, `sys.path`) is gone with
the child: every check starts from the parent's state, which user code never touched.
It also bounds what the user's code can do to the parent: the child runs in its own
process group (`os.killpg(0, ...)` ends only the child), its standard input is
/dev/null (it cannot read the server's requests) and it holds no descriptor but its own
reply pipe (it cannot write into the server's channel).

`run_forked(work, forward, seconds)` is not about the language server: any command that
must run user files one after another without one seeing another's changes (a `compile`
of several files) can run each file's work in it, given a POSIX `fork`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Forked", "run_forked"]

Send = Callable[[dict[str, Any]], None]


class Forked:
    """How a forked run ended: its `result` (None when it sent none), its exit `status`
    (a negative signal number when a signal ended it, None when it was stopped at the
    deadline), and whether it outlived the deadline."""

    def __init__(self, result: dict[str, Any] | None, status: int | None, outlived: bool) -> None:
        self.result, self.status, self.outlived = result, status, outlived


def _child(work: Callable[[Send], dict[str, Any]], write_fd: int) -> None:
    """The child's side: its own process group, stdin from /dev/null, only its pipe; never returns."""
    status = 0
    try:
        os.setpgid(0, 0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.closerange(3, write_fd)  # the parent's channel and whatever else it holds, but not the pipe
        os.closerange(write_fd + 1, 65536)
        out = os.fdopen(write_fd, "w", encoding="utf-8", buffering=1)

        def send(message: dict[str, Any]) -> None:
            out.write(json.dumps(message, default=str) + "\n")
            out.flush()

        send({"result": work(send)})
    except BaseException:  # noqa: BLE001 - a child ends here whatever happened; the parent reports it
        status = 70
    finally:
        os._exit(status)


def _lines(read_fd: int, deadline: float, forward: Send, found: list[dict[str, Any]]) -> bool:
    """Read the child's messages until its pipe closes (True) or the deadline passes (False)."""
    pending = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        ready, _, _ = select.select([read_fd], [], [], left)
        if not ready:
            return False
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            return True
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            try:
                message = json.loads(line)
            except ValueError:
                continue  # not one of ours (the user's code wrote into the pipe): ignored
            if isinstance(message, dict) and "result" in message and isinstance(message["result"], dict):
                found.append(message["result"])
            elif isinstance(message, dict):
                forward(message)


def run_forked(work: Callable[[Send], dict[str, Any]], forward: Send, seconds: float) -> Forked:
    """Run `work(send)` in a forked child; `forward` gets every message it sends but its
    result. After `seconds` the child and its process group are killed."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(work, write_fd)
    os.close(write_fd)
    found: list[dict[str, Any]] = []
    try:
        closed = _lines(read_fd, time.monotonic() + seconds, forward, found)
    finally:
        os.close(read_fd)
    if not closed:
        for kill in (os.killpg, os.kill):  # its group (what it started), else itself (not in its group yet)
            with contextlib.suppress(OSError):
                kill(pid, signal.SIGKILL)
    _, raw = os.waitpid(pid, 0)
    status = os.waitstatus_to_exitcode(raw)
    return Forked(found[0] if found else None, None if not closed else status, not closed)
