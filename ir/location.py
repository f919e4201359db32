"""Source locations of the user's calls: `Location(file, line, col)` and how to capture one.

Tracing records the innermost frame outside npu-opt's own packages. The column is the
start of the called method's name (`.collect` -> under `collect`), found from the call
instruction's position in the frame's bytecode (Python 3.11+ keeps columns).
"""

from __future__ import annotations

import bisect
import dis
import functools
import sys
from types import CodeType, FrameType, TracebackType

import attrs

__all__ = ["Location", "user_location", "tb_frames", "OWN_PACKAGES", "instructions_after"]

# npu-opt's top-level packages: the one list (driver/fingerprint.py and driver/crash_guard.py spell it
# out, importing nothing of npu-opt's; tests/test_layers.py holds them equal)
OWN_PACKAGES = frozenset({"ir", "npu_opt", "synth", "driver", "tu_ops", "visa", "backends"})


@attrs.frozen
class Location:
    """A 1-based position in a source file; `col` may be None when unknown."""

    file: str
    line: int
    col: int | None = None
    length: int = attrs.field(default=1, eq=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" + (f":{self.col}" if self.col else "")


@functools.lru_cache(maxsize=512)
def _instructions(code: CodeType) -> tuple[dict[int, dis.Instruction], list[int]]:
    """The instructions of `code` by offset, and their offsets in increasing order."""
    by_offset = {ins.offset: ins for ins in dis.get_instructions(code)}
    return by_offset, sorted(by_offset)


def instructions_after(code: CodeType, offset: int, count: int) -> list[dis.Instruction]:
    """The (up to) `count` instructions of `code` after the one at `offset`, read from the
    table `user_location` builds once per code object: a kernel that calls `ctx.loop` a
    hundred times (unrolled around a rolled loop) no longer disassembles its function at each."""
    instructions, ordered = _instructions(code)
    start = bisect.bisect_right(ordered, offset)
    return [instructions[o] for o in ordered[start:start + count]]


def _is_own(frame: FrameType) -> bool:
    module = frame.f_globals.get("__name__", "") or ""
    return module.split(".")[0] in OWN_PACKAGES


def _user_frame() -> FrameType | None:
    frame = sys._getframe(1)
    while frame is not None and _is_own(frame):
        frame = frame.f_back
    return frame


def _attribute_position(frame: FrameType, name: str | None) -> tuple[int, int, int] | None:
    """(line, col, length) of `.name` in the call being executed, from bytecode positions."""
    instructions, ordered = _instructions(frame.f_code)
    end = bisect.bisect_right(ordered, frame.f_lasti)
    for offset in reversed(ordered[max(0, end - 40):end]):
        ins = instructions[offset]
        # `name_at` is the explicit-address form of `name` (npu_opt.addresses), which traces as
        # `name` does: its location is the `_at` attribute the user wrote
        if name and ins.opname in ("LOAD_METHOD", "LOAD_ATTR") and ins.argval in (name, name + "_at"):
            pos = ins.positions
            if pos and pos.end_lineno and pos.end_col_offset is not None:
                return pos.end_lineno, pos.end_col_offset - len(ins.argval) + 1, len(ins.argval)
    ins = instructions.get(frame.f_lasti)
    pos = getattr(ins, "positions", None)
    if pos and pos.lineno and pos.col_offset is not None:
        return pos.lineno, pos.col_offset + 1, max(1, (pos.end_col_offset or 0) - pos.col_offset)
    return None


def user_location(method: str | None = None) -> Location:
    """Location of the user's call to `method` (the innermost frame outside npu-opt)."""
    frame = _user_frame()
    if frame is None:
        return Location("<unknown>", 0)
    found = _attribute_position(frame, method)
    if found is None:
        return Location(frame.f_code.co_filename, frame.f_lineno)
    line, col, length = found
    return Location(frame.f_code.co_filename, line, col, length)


def tb_frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    """(frame, line) of each entry of a traceback, outermost first: `traceback.walk_tb`'s,
    without loading the traceback module (~2 ms of every command's start-up) for an error path."""
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames
