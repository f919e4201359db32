"""Room in the interpreter's array pool (`visa.interp.fast.pool`) for the arrays of the latest run.

The pool holds at most a number of arrays and of bytes. Filled once, it used to refuse
every later array, so a process that had run a few other kernels first kept the arrays of
those forever and paid fresh ones (a page fault per page) on every run of the kernel it
now repeats (a 512^3 bf16 GEMM: 7.5 -> 12 ms). Instead the oldest entries give way: the
pool is a queue, arrays handed back at its end and taken from anywhere, so its front holds
the arrays no run has asked for the longest.
"""

from __future__ import annotations

from typing import Any

__all__ = ["make_room"]


def make_room(entries: list[tuple[Any, int, Any]], held: int, arrays: int, budget: int) -> bool:
    """Drop entries (array, bytes held, ...) from the front of `entries` until one more
    array holding `held` bytes fits in `arrays` arrays and `budget` bytes; False (nothing
    dropped) when it could not fit even alone."""
    if held > budget or arrays < 1:
        return False
    total = sum(n for _, n, _ in entries)
    while entries and (len(entries) >= arrays or total + held > budget):
        total -= entries.pop(0)[1]
    return True
