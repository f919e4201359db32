"""Whether an exception reached the user's code from outside it: a signal, not a `raise`.

A harness that bounds a trace with SIGALRM raises its timeout from its signal handler, and
Python runs the handler on top of whatever frame was executing, often the kernel body's: the
exception then looks raised by the kernel. Two facts tell it apart. An exception a Python
signal handler raised has the handler's frame in its traceback, and that frame is
recognisable: its code is an installed handler's, or its arguments are the signal number and
the very frame it interrupted (Python calls every handler as `handler(signum, frame)` on top
of `frame`). A KeyboardInterrupt of Python's own SIGINT handler (or `_thread.interrupt_main`)
has no handler frame, but appears at whatever instruction was running, never at a `raise`,
while one the kernel raises itself stops at its `raise` statement.
"""

from __future__ import annotations

import dis
import signal
from types import CodeType, FrameType
from typing import Any

from ir.location import tb_frames

__all__ = ["from_signal_handler", "raised_by_statement"]

_RAISES = frozenset(dis.opmap[name] for name in ("RAISE_VARARGS", "RERAISE") if name in dis.opmap)


def from_signal_handler(e: BaseException) -> bool:
    """Whether `e` was raised in (or under) a Python signal handler's frame."""
    frames = [frame for frame, _ in tb_frames(e.__traceback__)]
    if not frames:
        return False
    installed = _handler_codes()
    return any(frame.f_code in installed or _called_as_handler(frame) for frame in frames)


def raised_by_statement(e: BaseException) -> bool:
    """Whether `e` stopped at a `raise` in its innermost Python frame (False for an exception
    Python delivered at another instruction, as its SIGINT handler's KeyboardInterrupt)."""
    tb = e.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code.co_code
    return 0 <= tb.tb_lasti < len(code) and code[tb.tb_lasti] in _RAISES


def _handler_codes() -> set[CodeType]:
    """The code objects of the Python-level signal handlers installed now."""
    codes = set()
    for signum in signal.valid_signals():
        try:
            handler = signal.getsignal(signum)
        except (OSError, ValueError):  # a signal this platform cannot query
            continue
        code = _code_of(handler)
        if code is not None:
            codes.add(code)
    return codes


def _code_of(handler: Any) -> CodeType | None:
    """The code a handler runs: a function's, a bound method's, a partial's or a callable's."""
    for candidate in (handler, getattr(handler, "__func__", None), getattr(handler, "func", None),
                      getattr(type(handler), "__call__", None)):
        code = getattr(getattr(candidate, "__func__", candidate), "__code__", None)
        if isinstance(code, CodeType):
            return code
    return None


def _called_as_handler(frame: FrameType) -> bool:
    """Whether `frame` was called as `handler(signum, frame)` on top of the frame it names:
    two neighbouring arguments (or `*args` items) are a signal number and `frame.f_back`."""
    code, caller = frame.f_code, frame.f_back
    if caller is None:
        return False
    local = frame.f_locals
    args = [local.get(name) for name in code.co_varnames[:code.co_argcount]]
    if code.co_flags & 0x04:  # CO_VARARGS: `def handler(*args)`
        extra = local.get(code.co_varnames[code.co_argcount + code.co_kwonlyargcount])
        args.extend(extra if isinstance(extra, tuple) else ())
    return any(type(a) is int and b is caller and a in _SIGNALS for a, b in zip(args, args[1:]))


_SIGNALS = frozenset(int(s) for s in signal.valid_signals())
