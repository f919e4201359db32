"""Large scratch buffers of one `CpuBackend.run`, kept for the backend's next run.

A 512^3 GEMM moves about 100 MiB through DMA and placement buffers per run. Fresh from
the allocator, such a buffer costs a page fault per few pages the first time it is
written (about as long as the copy itself); a buffer kept from the previous run costs
none. An `Arena` hands out buffers (`empty`, `zeros`) while it is the calling thread's
current arena (`scope`), every one distinct within the run, and takes them all back when
the scope ends; the next scope of the same arena hands the same memory out again (buffers a run does
not ask for are let go at its end).

Safe because: the executor never writes a buffer after the handler that made it
returned; the caller never sees one (`CpuBackend.run` copies every result out with
`host.from_buffer` before the scope ends); a run on another thread, or a nested run,
gets its own arena (`CpuBackend` keeps a pool); a handed-out buffer is a fresh view
object, and any row classes recorded for its memory are dropped (backends/cpu/row_classes.py).
Small buffers (< `MIN_BYTES`) and calls outside a scope use `np.empty` / `np.zeros`.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator

import numpy as np

__all__ = ["Arena", "scope", "empty", "zeros", "owned_root", "MIN_BYTES"]

MIN_BYTES = 1 << 20
_LOCAL = threading.local()


class Arena:
    """Buffers by byte size: those free for this run's next request, and those handed out."""

    def __init__(self) -> None:
        self.free: dict[int, list[np.ndarray]] = {}
        self.used: list[np.ndarray] = []

    def take(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        pool = self.free.get(nbytes)
        raw = pool.pop() if pool else np.empty(nbytes, np.uint8)
        self.used.append(raw)
        _forget(raw)
        return raw.view(dtype).reshape(shape)

    def release(self) -> None:
        """Take back this run's buffers; those it did not ask for are let go (what is kept
        is at most one run's large buffers)."""
        self.free = {}
        for raw in self.used:
            _forget(raw)
            self.free.setdefault(raw.nbytes, []).append(raw)
        self.used = []


def _forget(raw: np.ndarray) -> None:
    from backends.cpu import row_classes  # it asks `owned_root`: imported here, not above
    row_classes.forget(raw)


def owned_root(out: np.ndarray) -> np.ndarray | None:
    """The arena buffer `out` is the whole of (a buffer the current arena handed out in
    this run, viewed as `take` made it); None otherwise."""
    arena = getattr(_LOCAL, "arena", None)
    raw = out.base
    if arena is None or not isinstance(raw, np.ndarray) or raw.base is not None:
        return None
    if not out.flags.c_contiguous or out.nbytes != raw.nbytes or not any(raw is r for r in arena.used):
        return None
    return raw if out.__array_interface__["data"][0] == raw.__array_interface__["data"][0] else None


@contextlib.contextmanager
def scope(arena: Arena) -> Iterator[Arena]:
    """`arena` is the current thread's arena inside the block; its buffers return to it
    at the end (the caller must have copied out whatever it keeps)."""
    outer = getattr(_LOCAL, "arena", None)
    _LOCAL.arena = arena
    try:
        yield arena
    finally:
        _LOCAL.arena = outer
        arena.release()


def _current(shape: tuple[int, ...], dtype: np.dtype) -> Arena | None:
    arena = getattr(_LOCAL, "arena", None)
    if arena is None or math.prod(shape) * np.dtype(dtype).itemsize < MIN_BYTES:
        return None
    return arena


def empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """`np.empty(shape, dtype)`, from the current arena when there is one and it is large."""
    arena = _current(shape, dtype)
    return np.empty(shape, dtype) if arena is None else arena.take(shape, dtype)


def zeros(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """`np.zeros(shape, dtype)`, from the current arena when there is one and it is large."""
    arena = _current(shape, dtype)
    if arena is None:
        return np.zeros(shape, dtype)
    out = arena.take(shape, dtype)
    out.fill(0)
    return out
