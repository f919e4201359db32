"""The sparse prefix of a staged gather (docs/machine/spm.md "Staged gather").

`.by_byte_offsets(index).sparse_prefix(n)` gathers each chip's first `n` index entries (in
the index's logical order) and leaves the rest of the output zero. `n` is either an int
known while tracing (the op's `prefix` attribute, already clamped to 0 .. the list's
length) or a runtime `i32` scalar (the op's `count` operand), as furiosa-opt v0.9 takes it:
`valid_length: i32`, read at run time. A runtime count of zero or less gathers none, one
past the list's length gathers it all.

`prefix_length` is the one evaluation the cpu backend and the VISA interpreter share, so
they gather the same entries bit for bit; `check_count` is the trace rule (GATHER-9) on a
`Gather` op's count.
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation

__all__ = ["COUNT_DTYPE", "prefix_length", "check_count"]

COUNT_DTYPE = "i32"
"""The runtime scalar type a sparse prefix takes (furiosa-opt's `valid_length: i32`)."""


def prefix_length(prefix: int | None, count: Any, gathered: int) -> int | None:
    """The index entries each chip gathers: `prefix` (an int fixed while tracing), else the
    runtime value `count` (a 0-d array, or None when the gather has no runtime count)
    clamped to 0 .. `gathered`; None when every entry is gathered."""
    if prefix is not None:
        return prefix
    if count is None:
        return None
    return min(max(int(count), 0), gathered)


def check_count(op: Any) -> Violation | None:
    """GATHER-9 for a `Gather` whose runtime count is not an `i32` scalar, or which has
    both a trace-time prefix and a runtime count."""
    count = getattr(op, "count", None)
    if count is None:
        return None
    t = count.type
    if getattr(t, "kind", None) != "scalar" or t.dtype.name != COUNT_DTYPE:
        return Violation("GATHER-9", f"a gather's runtime count is a scalar<{COUNT_DTYPE}>, not {t}",
                         help="cast it: `.sparse_prefix(n.cast(i32))`")
    if op.prefix is not None:
        return Violation("GATHER-9", "a gather has one sparse prefix: a trace-time int or a runtime count, not both")
    if not op.scaled:
        return Violation("GATHER-9", "a sparse prefix shortens a list of byte offsets (`by_byte_offsets`), not "
                                     "of positions")
    return None
