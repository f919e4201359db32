"""Whose fault an exception is, and whether a KeyboardInterrupt was a real Ctrl-C.

An exception raised in npu-opt's own frames (its innermost frame is in one of our
packages) is an internal compiler error, never the user's: only exceptions raised in the
user's frames are reported as their USAGE errors. The one exception is the
`AttributeError` of our objects' `__getattr__`, which answers the user's typo.

`SystemExit`, `KeyboardInterrupt` and `GeneratorExit` raised by the user's code while a
file is imported or a kernel traced (and `os._exit`, which raises `ProcessExit` there)
are USAGE errors for that file or kernel. An interruption is not (`interrupted`): a
KeyboardInterrupt caused by SIGINT (recorded by `on_sigint`, or delivered by Python's own
handler rather than raised by a `raise` statement) or an exception a signal handler raised
(a harness's timeout) passes through unchanged and stops the command or the caller.
"""

from __future__ import annotations

import _thread
import gc
import os
import signal
import threading
from typing import Any

from ir.interruption import from_signal_handler, raised_by_statement
from ir.location import OWN_PACKAGES, tb_frames
from ir.words import a_an

__all__ = ["raised_by_us", "USER_EXITS", "interrupted", "signalled", "install_sigint", "exit_text", "ProcessExit",
           "SelfSignal", "ClosedOutput"]

USER_EXITS = (SystemExit, KeyboardInterrupt, GeneratorExit)
_SIGNALLED = [False]


def raised_by_us(e: BaseException) -> bool:
    """Whether `e` was raised in npu-opt's own code.

    The innermost frame that is npu-opt's or the user's decides: frames of the standard
    library and of installed packages (numpy, attrs, ...) only pass the exception on, so an
    `attrs.evolve` our code calls wrongly is our bug, and a numpy call the user writes
    wrongly is theirs."""
    for frame, _ in reversed(tb_frames(e.__traceback__)):
        if (frame.f_globals.get("__name__") or "").split(".")[0] in OWN_PACKAGES:
            return not (isinstance(e, AttributeError) and frame.f_code.co_name == "__getattr__")
        if not _is_library(frame.f_code.co_filename):
            return False
    return False


def _is_library(filename: str) -> bool:
    """Whether `filename` is the standard library's or an installed package's."""
    if filename.startswith("<frozen "):
        return True
    import sysconfig  # an exception's path only: not loaded by a command that succeeds

    roots = {os.path.realpath(sysconfig.get_path(key)) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    path = os.path.realpath(filename)
    return any(path.startswith(root + os.sep) for root in roots)


def interrupted(e: BaseException) -> bool:
    """Whether `e` came into the user's code from outside it, a signal rather than its own
    `raise` (ir/interruption.py): a KeyboardInterrupt of a real Ctrl-C, or one Python's
    SIGINT handler delivered, or anything a Python signal handler raised. The trace and
    the import let it through instead of blaming the kernel or the file."""
    if isinstance(e, KeyboardInterrupt) and (signalled() or not raised_by_statement(e)):
        return True
    return from_signal_handler(e)


def signalled() -> bool:
    """Whether a SIGINT arrived since `install_sigint` (so a KeyboardInterrupt is real)."""
    return _SIGNALLED[0]


def _on_sigint(signum: int, frame: Any) -> None:
    _SIGNALLED[0] = True
    if _in_gc_callback(frame):
        # An exception leaving a gc callback is only printed ("Exception ignored in"), and the
        # interrupt would be lost: deliver it again once the callback has returned.
        threading.Timer(0.01, _thread.interrupt_main).start()
        return
    raise KeyboardInterrupt


def _in_gc_callback(frame: Any) -> bool:
    """Whether `frame` or one of its callers runs a function of `gc.callbacks`."""
    codes = {getattr(callback, "__code__", None) for callback in gc.callbacks}
    codes.discard(None)
    while frame is not None and codes:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def install_sigint() -> None:
    """Mark real Ctrl-C interrupts (the command line calls this once)."""
    _SIGNALLED[0] = False
    try:
        signal.signal(signal.SIGINT, _on_sigint)
    except ValueError:  # not the main thread: leave the default handler
        pass


class ProcessExit(SystemExit):
    """`os._exit(n)` called by the user's code while npu-opt runs it (npu_opt/per_file_imports.py):
    raised instead, so the exit is the file's or kernel's USAGE error, not npu-opt's status."""


class SelfSignal(ProcessExit):
    """A signal the user's code sent its own process (`os.kill(os.getpid(), SIGTERM)`...)
    while npu-opt runs it: raised instead of sent, as `ProcessExit` is for `os._exit`."""


class ClosedOutput(ProcessExit):
    """`os.close(1)` (or `os.dup2`, `os.closerange` over it) by the user's code while npu-opt
    runs it: raised instead, since npu-opt writes its report to that descriptor (args: the
    call as written, the stream's name)."""


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except BaseException:  # noqa: BLE001 - the user's __repr__ may raise anything
        return f"<{type(value).__name__}>"
    return text if isinstance(text, str) else f"<{type(value).__name__}>"


def exit_text(e: BaseException) -> str:
    """`SystemExit(0)`, `KeyboardInterrupt`, `os._exit(3)` ... as the user wrote it."""
    args = ", ".join(_safe_repr(a) for a in getattr(e, "args", ()))
    if isinstance(e, ClosedOutput):
        return f"{e.args[0]} (npu-opt's {e.args[1]}, where it writes its report)"
    if isinstance(e, SelfSignal):
        return f"{a_an(e.args[0] if e.args else 'signal')} sent to its own process"
    if isinstance(e, ProcessExit):
        return f"os._exit({args})"
    return f"{type(e).__name__}({args})" if args else type(e).__name__
