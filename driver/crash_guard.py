"""A crash of a kernel file's native code is reported, not silent (issue 55, item 6).

A kernel file's code runs in npu-opt's process: a segmentation fault in it (ctypes, a
native extension, a recursion deep enough to overflow the C stack) killed `check`,
`compile` or `tune` without a word. The command line runs those commands (`USER_CODE`) in a
forked child (`supervised`), whose `faulthandler` writes its Python stack to a temporary
file on a fatal signal, while this process waits. A child killed by SIGSEGV, SIGBUS,
SIGFPE, SIGILL or SIGABRT is reported from that stack: its innermost frame in a file of the
user's names the file and line, as any failure of a file's code, a USAGE error (exit 2);
with no frame of the user's it is npu-opt's own crash, an ICE (exit 3). Any other end
passes through: the child's exit status, or death by the same signal (SIGKILL, SIGTERM).
SIGTERM and SIGHUP sent to this process are passed on to the child; SIGINT is not (a
Ctrl-C reaches the child from the terminal itself).
"""

from __future__ import annotations

import atexit
import faulthandler
import os
import re
import signal
import sys
import tempfile
from pathlib import Path
from typing import IO

from driver.exit_codes import EXIT_ICE, EXIT_USAGE

__all__ = ["USER_CODE", "supervised", "child_exit"]

USER_CODE = frozenset({"check", "compile", "run", "tune", "synth"})  # the commands that run a user's code

_FATAL = {signal.SIGSEGV: "a segmentation fault", signal.SIGBUS: "a bus error",
          signal.SIGFPE: "a floating-point exception", signal.SIGILL: "an illegal instruction",
          signal.SIGABRT: "an abort"}
_OURS = tuple(str(Path(__file__).resolve().parents[1] / p) + os.sep
              for p in ("driver", "npu_opt", "synth", "ir", "tu_ops", "visa", "backends"))
_FRAME = re.compile(r'^\s+File "(.+)", line (\d+)', re.MULTILINE)


def supervised() -> int | None:
    """Fork: in the child, None (it runs the command and leaves by `child_exit`); here, the
    command's exit status once the child has ended. None too when this system cannot fork."""
    if not hasattr(os, "fork"):
        return None
    try:
        stack = tempfile.TemporaryFile()
    except OSError:
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        faulthandler.enable(file=stack, all_threads=False)
        return None
    return _wait(pid, stack)


def child_exit(status: int) -> None:
    """End the child as the interpreter would end it (its exit functions run), with `status`."""
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)


def _wait(pid: int, stack: IO[bytes]) -> int:
    def forward(signum: int, _frame: object) -> None:
        os.kill(pid, signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            return EXIT_ICE
        except InterruptedError:
            continue
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    signum = os.WTERMSIG(status)
    if signum not in _FATAL:  # killed from outside: end as it ended
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum
    stack.seek(0)
    return _report(signum, stack.read().decode("utf-8", "replace"))


def _report(signum: int, stack: str) -> int:
    """The diagnostic of a child killed by the fatal signal `signum`, its Python stack `stack`."""
    what = f"{signal.Signals(signum).name}, {_FATAL[signum]}"
    for file, line in _FRAME.findall(stack):  # innermost first
        path = os.path.abspath(file)
        if path.startswith(_OURS) or path.startswith(_LIBRARIES) or file.startswith("<"):
            continue
        shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path
        print(f"error[USAGE]: the code of this file crashed npu-opt's process ({what}); the files and kernels "
              f"after it were not reached\n  --> {shown}:{line}", file=sys.stderr)
        return EXIT_USAGE
    print(f"error[ICE]: internal compiler error: npu-opt's process crashed ({what}); please report this "
          "npu-opt bug with the command line and this message", file=sys.stderr)
    return EXIT_ICE


_LIBRARIES = tuple({os.path.join(p, "") for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
