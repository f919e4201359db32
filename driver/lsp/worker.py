"""The language server's worker: the process where the user's kernel files run.

`python -m driver.lsp.worker` reads one JSON request per line on stdin
(`{"id", "path", "source", "name", "target", "seconds"}`) and writes JSON lines to the
reply channel: `{"id", "at": [kernel, line]}` before each phase (so the server can say
where a check that died or hung was), for a full check (`"fresh"`) `{"id", "early": [...]}`
with its diagnostics once its kernels are traced, then `{"id", "result": {...}}` (driver/lsp/facts.py),
or `{"id", "ended": status, "outlived": bool}` when the check sent no result.
The first line it writes is `{"hello": {...}}` with the enum variants completion offers.

The process imports npu-opt and warms it up once (a small kernel of its own is checked;
after the first check when that one's request was already waiting), and runs every
check in a forked child (driver/lsp/isolation.py): each check starts
from that state, and nothing a file does at module level outlives its check (issue 55).

The reply channel is the file descriptor stdout had when the process started; fd 1 then
points at /dev/null and `sys.stdout` records what the user's code prints, with the
line that printed, instead of letting it into the channel. The process's memory is
limited (`--memory MB`, RLIMIT_AS), and each request has a time limit: after `seconds`
a SIGALRM raises `TimeLimit` where the user's code is (the server kills the process
if even that does not end it).
"""

from __future__ import annotations

import enum
import gc
import io
import json
import linecache
import os
import resource
import select
import signal
import sys
from typing import Any

import npu_opt
from driver.lsp.facts import analyse
from driver.lsp.isolation import run_forked
from driver.lsp.reuse import merged
from driver.lsp.supervisor import EMPTY, GRACE_SECONDS, record
from npu_opt import per_file_imports
from npu_opt.stagebase import load_lazy_stages

__all__ = ["TimeLimit", "main"]


class TimeLimit(BaseException):
    """The request's time is up (raised by SIGALRM in whatever code was running)."""


class _Printed(io.TextIOBase):
    """`sys.stdout` while user code runs: keeps the first 200 characters and the user line that printed."""

    def __init__(self) -> None:
        self.path = ""
        self.text = ""
        self.line: int | None = None

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text and not self.text.strip() and self.line is None:
            frame = sys._getframe(1)
            while frame is not None and os.path.abspath(frame.f_code.co_filename) != self.path:
                frame = frame.f_back
            self.line = frame.f_lineno if frame is not None else None
        if len(self.text) < 200:
            self.text += str(text)[:200 - len(self.text)]
        return len(text)


_ALARM = {"path": "", "line": None}  # the checked file, and its line that was running when time ran out


def _alarm(signum: int, frame: Any) -> None:
    while frame is not None and os.path.abspath(frame.f_code.co_filename) != _ALARM["path"]:
        frame = frame.f_back
    _ALARM["line"] = frame.f_lineno if frame is not None else None
    raise TimeLimit()


def _limit_record(path: str, line: int | None, seconds: float, kernel: str | None) -> dict[str, Any]:
    what = f"tracing `{kernel}`" if kernel else "importing the file"
    return record(f"{what} did not finish within the language server's time limit of {seconds:g} s (an endless "
                  f"loop, a sleep, a huge computation?)", line or 1, path, kernel=kernel,
                  help="the checked file runs at every edit: keep slow work out of module level and kernel bodies")


def _enums() -> dict[str, list[str]]:
    out = {}
    for name in getattr(npu_opt, "__all__", ()):
        try:
            value = getattr(npu_opt, name)
        except Exception:  # noqa: BLE001 - a lazy export that fails to load offers nothing
            continue
        if isinstance(value, type) and issubclass(value, enum.Enum):
            out[name] = [member.name for member in value]
        elif isinstance(value, type) and isinstance(getattr(value, "_member_names", None), (list, tuple)):
            out[name] = [str(n) for n in value._member_names]  # the vector units' variant classes
    return out


def _printed_record(printed: _Printed, path: str) -> dict[str, Any]:
    shown = printed.text.strip().splitlines()[0][:80] if printed.text.strip() else printed.text[:80]
    return record(f"the file printed to standard output while being checked ({shown!r}); the language server "
                  f"discarded it (its standard output is the editor's channel)", printed.line or 1, path,
                  severity="warning", help="print from a test or a script, not at import time or while a kernel "
                                           "is traced")


_WARM_UP = '''from npu_opt import *

axes(N=2048)

@device(chip=1)
def warm(ctx: Context, src: HbmTensor[i8, m("1"), m("N")]) -> HbmTensor[i8, m("1"), m("N")]:
    d = src.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("1 # 2"), m("1 # 256"), m("N")])
    return (ctx.main.begin(d.view()).fetch(m("N / 32"), m("N % 32")).collect(m("N / 32"), m("N % 32"))
            .commit_trim(m("N % 32")).commit(m("N"))).to_hbm(ctx.tdma)
'''


def _warm_up() -> None:
    """Check a kernel of our own once, so what every check needs (parsers, caches) is in
    the state each check's child starts from; then drop its module."""
    path, name = os.path.join(os.sep, "nonexistent", "_npu_opt_lsp_warm_up.py"), "_npu_opt_lsp_warm_up"
    analyse(path, _WARM_UP, name)
    sys.modules.pop(name, None)
    per_file_imports._SCOPES.pop(name, None)
    linecache.cache.pop(path, None)


def _check(request: dict[str, Any], send: Any, printed: _Printed, known: dict[str, Any] | None) -> dict[str, Any]:
    path, seconds = os.path.abspath(request["path"]), float(request.get("seconds", 5.0))
    where: list[Any] = [None, 1]

    def progress(kernel: str | None, line: int) -> None:
        where[:] = [kernel, line]
        send({"id": request["id"], "at": [kernel, line]})

    def early(diagnostics: list[dict[str, Any]]) -> None:  # a full check's, shown before its hovers are made
        if request.get("fresh") and not printed.text and not any("TimeLimit" in d["message"] for d in diagnostics):
            send({"id": request["id"], "early": diagnostics})

    printed.path, printed.text, printed.line = path, "", None
    _ALARM.update(path=path, line=None)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        result = analyse(path, request["source"], request["name"], request.get("target"), progress, known, early)
    except TimeLimit:
        signal.setitimer(signal.ITIMER_REAL, 0)
        result = dict(EMPTY, diagnostics=[_limit_record(path, _ALARM["line"] or where[1], seconds, where[0])])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    for d in result["diagnostics"]:  # a TimeLimit the trace caught as the user's exception
        if "TimeLimit" in d["message"]:
            d.update(_limit_record(path, _ALARM["line"] or d["line"], seconds, d["kernel"]))
            result.pop("reuse", None)  # traced again next time, as every check that ran out of time
    if printed.text:
        result["diagnostics"].append(_printed_record(printed, path))
        result.pop("reuse", None)  # ... or printed (its warning names the line that printed)
    return result


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    memory = int(args[args.index("--memory") + 1]) if "--memory" in args else 0
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    printed = _Printed()
    sys.stdout = printed
    signal.signal(signal.SIGALRM, _alarm)

    def send(message: dict[str, Any]) -> None:
        channel.write(json.dumps(message, default=str) + "\n")
        channel.flush()

    load_lazy_stages()  # what every check needs, imported once, here: the first edit is as fast as the next
    send({"hello": {"enums": _enums(), "pid": os.getpid()}})
    # The warm-up waits for the first check when the editor's request is already there (a
    # file opened with the editor): its ~0.1 s would be on the way to the first diagnostics.
    warm = not select.select([sys.stdin], [], [], 0)[0]
    if warm:
        _warm_up()
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory << 20, memory << 20))
    gc.freeze()  # the warm objects stay out of the children's collections (fewer pages copied)
    known: dict[str, dict[str, Any]] = {}  # each file's last check's facts a re-check may reuse (driver/lsp/reuse.py)
    for line in sys.stdin:
        request = json.loads(line)
        path = os.path.abspath(request["path"])
        if request.get("fresh"):
            known.pop(path, None)

        def work(to_parent: Any, request: dict[str, Any] = request, last: Any = known.get(path)) -> dict[str, Any]:
            gc.disable()  # a child lives for one check: its garbage goes with it (the memory limit still holds)
            try:
                return _check(request, to_parent, printed, last)
            except MemoryError:
                return {"diagnostics": [record("checking the file ran out of the language server's memory limit",
                                               1, request.get("path"))]}

        outcome = run_forked(work, send, float(request.get("seconds", 5.0)) + GRACE_SECONDS)
        if outcome.result is not None:
            found = outcome.result.pop("reuse", None)
            if found is not None:
                known[path] = merged(known.get(path), found, outcome.result)
            else:
                known.pop(path, None)
            send({"id": request["id"], "result": outcome.result})
        else:
            send({"id": request["id"], "ended": outcome.status, "outlived": outcome.outlived})
        if not warm:
            warm = True
            _warm_up()
            gc.freeze()
    return 0


if __name__ == "__main__":
    sys.exit(main())
