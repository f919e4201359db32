"""Whose fault an exception is, and whether a KeyboardInterrupt was a real Ctrl-C.

An exception raised in npu-opt's own frames (its innermost frame is in one of our
packages) is an internal compiler error, never the user's: only exceptions raised in the
user's frames are reported as their USAGE errors. The one exception is the
`AttributeError` of our objects' `__getattr__`, which answers the user's typo.

`SystemExit`, `KeyboardInterrupt` and `GeneratorExit` raised by the user's code while a
file is imported or a kernel traced (and `os._exit`, which raises `ProcessExit` there)
are USAGE errors for that file or kernel; a
KeyboardInterrupt caused by SIGINT (recorded by `on_sigint`) still stops the command.
"""

from __future__ import annotations

import signal
import traceback
from typing import Any

from ir.location import OWN_PACKAGES

__all__ = ["raised_by_us", "USER_EXITS", "signalled", "install_sigint", "exit_text", "ProcessExit"]

USER_EXITS = (SystemExit, KeyboardInterrupt, GeneratorExit)
_SIGNALLED = [False]


def raised_by_us(e: BaseException) -> bool:
    """Whether the innermost frame of `e`'s traceback is npu-opt's own code."""
    frames = list(traceback.walk_tb(e.__traceback__))
    if not frames:
        return False
    frame = frames[-1][0]
    if isinstance(e, AttributeError) and frame.f_code.co_name == "__getattr__":
        return False
    return (frame.f_globals.get("__name__") or "").split(".")[0] in OWN_PACKAGES


def signalled() -> bool:
    """Whether a SIGINT arrived since `install_sigint` (so a KeyboardInterrupt is real)."""
    return _SIGNALLED[0]


def _on_sigint(signum: int, frame: Any) -> None:
    _SIGNALLED[0] = True
    raise KeyboardInterrupt


def install_sigint() -> None:
    """Mark real Ctrl-C interrupts (the command line calls this once)."""
    _SIGNALLED[0] = False
    try:
        signal.signal(signal.SIGINT, _on_sigint)
    except ValueError:  # not the main thread: leave the default handler
        pass


class ProcessExit(SystemExit):
    """`os._exit(n)` called by the user's code while npu-opt runs it (npu_opt/import_scope.py):
    raised instead, so the exit is the file's or kernel's USAGE error, not npu-opt's status."""


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except BaseException:  # noqa: BLE001 - the user's __repr__ may raise anything
        return f"<{type(value).__name__}>"
    return text if isinstance(text, str) else f"<{type(value).__name__}>"


def exit_text(e: BaseException) -> str:
    """`SystemExit(0)`, `KeyboardInterrupt`, `os._exit(3)` ... as the user wrote it."""
    args = ", ".join(_safe_repr(a) for a in getattr(e, "args", ()))
    if isinstance(e, ProcessExit):
        return f"os._exit({args})"
    return f"{type(e).__name__}({args})" if args else type(e).__name__
