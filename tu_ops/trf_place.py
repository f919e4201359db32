"""The TRF placement rule, one for the lowering that places TRF tensors
(tu_ops/lower/alloc.py) and for the artifact's readers that recompute it (visa/facts.py,
visa/verify.py, visa/interp/alloc.py).

The tensors are taken in the order the body makes them (by step). A tensor gets the lowest
row (an even one for a Flit2 load) at which its rows overlap no TRF tensor live at its step;
rows of tensors with different lane counts are compared as byte ranges of the slice's TRF
(row `r` of an L-lane tensor covers bytes `[32 L r, 32 L (r + 1))`).

Double buffering, as the reference's register allocator does it where no loop remains (its
register-files chapter: a store fills one TRF half while the contraction reads the other):
a tensor made outside every rolled loop body also keeps off the rows of the TRF tensor made
just before it, when that one is no longer live and the TRF has room. Its load then need not
wait for that tensor's last contraction (a write after read), so consecutive groups of an
unrolled loop alternate between two regions. A tensor made in a `ctx.loop` body is one
buffer for every iteration and is placed by the first rule alone. If the alternation leaves
some later tensor no room, every tensor is placed by the first rule alone: the alternation
never refuses a kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

__all__ = ["TrfRequest", "place_trf"]


@attrs.frozen
class TrfRequest:
    """One TRF tensor to place: made at step `first`, live through step `last`, `rows` rows
    of `unit` bytes each (`FLIT_BYTES x lanes`), starting on a multiple of `align` rows."""

    key: int
    first: int
    last: int
    unit: int
    rows: int
    align: int = 1

    @classmethod
    def of(cls, key: int, first: int, last: int, shape: Any, flit_bytes: int) -> "TrfRequest":
        """The request of a TRF tensor of geometry `shape` (`tu_ops.trf_new.trf_maker`): rows
        of one flit a lane, two-flit collects on even rows."""
        return cls(key, first, last, flit_bytes * shape.lanes, -(-shape.bytes_per_lane // flit_bytes),
                   2 if shape.collect_flits.value == 2 else 1)

    def live_at(self, step: int) -> bool:
        return self.first <= step <= self.last

    def span(self, row: int) -> tuple[int, int]:
        """(first byte, bytes) of the tensor at `row`."""
        return row * self.unit, self.rows * self.unit


def _fit(t: TrfRequest, held: list[tuple[int, int]]) -> int:
    """The lowest row (a multiple of `t.align`) at which `t` overlaps no `(start, bytes)` of `held`."""
    need = t.rows * t.unit
    for start in sorted({0, *(a + n for a, n in held)}):
        r = -(-start // t.unit)
        r = -(-r // t.align) * t.align
        lo = r * t.unit
        if all(lo + need <= a or a + n <= lo for a, n in held):
            return r
    raise AssertionError("unreachable: the end of the last held range is always free")


def _pass(requests: list[TrfRequest], capacity: int, bodies: Sequence[tuple[int, int]],
          alternate: bool) -> tuple[dict[int, int], int | None]:
    rows: dict[int, int] = {}
    over = None
    before = None
    for t in requests:
        held = [o.span(rows[o.key]) for o in requests if o.key in rows and o.live_at(t.first)]
        r = _fit(t, held)
        if alternate and before is not None and not before.live_at(t.first) \
                and not any(b < t.first < e for b, e in bodies):
            kept_off = _fit(t, [*held, before.span(rows[before.key])])
            r = kept_off if (kept_off + t.rows) * t.unit <= capacity else r
        if (r + t.rows) * t.unit > capacity and over is None:
            over = t.key
            if alternate:
                return rows, over
        rows[t.key] = r
        before = t
    return rows, over


def place_trf(requests: Sequence[TrfRequest], capacity: int,
              bodies: Sequence[tuple[int, int]] = ()) -> tuple[dict[int, int], int | None]:
    """(first row by key, the key of the first tensor that does not fit in `capacity` bytes
    or None); `bodies`: (begin, end) steps of every rolled loop, a body's steps strictly
    between. A tensor that does not fit is still given its lowest free row."""
    ordered = sorted(requests, key=lambda t: (t.first, t.key))
    rows, over = _pass(ordered, capacity, bodies, alternate=True)
    if over is None:
        return rows, None
    return _pass(ordered, capacity, bodies, alternate=False)
