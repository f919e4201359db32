"""Time filters of a padded axis split into Slice: counts that differ per slice.

A time filter compares the slice id `s` with its padded axis's Slice part before it looks
at the time step (docs/machine/valid-count.md, "Per-slice counts"):

    valid(s, t) = (s & slice_mask) <  slice_thres            -> true
                  (s & slice_mask) >  slice_thres, SLICE_MAJOR -> false
                  otherwise                                   -> idx(t) < thres

`slice_mask` holds the slice-id bits of the axis's Slice sub-expressions, so each must be a
bit field (a power-of-2 size at a power-of-2 weight of the slice id). Its stride in the axis
need not be a power of 2 (`R # 24 / 3`): the filter compares the masked bits, which order the
slices as their `r_slice` does when the parts are written major to minor and tile the
padded range, and `slice_thres` is the boundary slice's bits whatever `r_slice` it stands
for. The axis's index is
`r = r_slice + r_time`; the filter can only tell `r < |X|` when one part is wholly major to
the other:

- SLICE_MAJOR (Slice major): the boundary slice is the one whose `r_slice` is the largest
  below `|X|`; it keeps the steps with `r_time < |X| - r_slice`, the slices below it keep
  all, the slices above none.
- TIME_MAJOR (Time major): `r = idx * slice_span + r_slice` with `idx` the Time part in
  units of `slice_span`; only the last Time iteration can hold padding, so the slices with
  `r_slice >= slice_span - (padded - |X|)` drop it. That needs `padded - |X| <= slice_span`.

Every placement outside these forms is refused with its own rule (VCG-2, VCG-6, VCG-8 ... VCG-10).
"""

from __future__ import annotations

import enum
import math

import numpy as np

from ir.diagnostic import Violation
from ir.mapping.ops import Entry, coalesce

__all__ = ["FilterMode", "slice_filter", "slice_weights"]


class FilterMode(enum.Enum):
    """Which part of a time filter's axis is major: its Slice part or its Time part."""

    SLICE_MAJOR = "slice_major"
    TIME_MAJOR = "time_major"


def slice_weights(sizes: list[int]) -> list[int]:
    """The weight of each Slice item in the slice id (the product of the sizes inside it)."""
    return [math.prod(sizes[k + 1:]) for k in range(len(sizes))]


def _pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def _tiles(axis: str, subs: list) -> bool:
    """The axis's sub-expressions tile its padded range: sorted by stride, each stride is the
    product of the spans below it."""
    reach = 1
    for s in sorted((s for s in subs if s.axis == axis), key=lambda s: s.stride):
        if s.stride != reach:
            return False
        reach *= s.span
    return True


def _refuse(code: str, message: str, loc: str, help_: str) -> Violation:
    return Violation(code, message, label=f"slice {loc}", help=help_)


def slice_filter(axis: str, live: int, slice_subs: list, weights: list[int], time_subs: list, all_subs: list,
                 loc: str, scale: int = 1) -> tuple | Violation:
    """The (seq, thres, slice_mask, slice_thres, mode) of the filter of `axis` (live size
    `live`), whose Slice sub-expressions are `slice_subs` at slice-id `weights`."""
    if not _tiles(axis, all_subs):
        return Violation("VCG-2", f"the sub-expressions of {axis} do not tile its padded range",
                         label=f"slice {loc}", help=f"split {axis} # n into `/ s % m` pieces whose strides are "
                                                    "the products of the sizes below them")
    if any(s.stride % scale for s in slice_subs + time_subs if s.axis == axis) or live % scale:
        return _refuse("VCG-10", f"{axis} is split between Slice and Packet and its last packet is partial", loc,
                       "the packet clipper counts the same for every slice; pad so every packet is full or empty")
    mine = [(s, w) for s, w in zip(slice_subs, weights) if s.axis == axis]
    strides = [s.stride // scale for s, _ in mine]
    if any(a <= b for a, b in zip(strides, strides[1:])):
        return _refuse("VCG-6", f"the Slice sub-expressions of {axis} are not in descending stride order", loc,
                       f"write the major part of {axis} first in Slice: per-slice ranges must grow with the slice id")
    for s, w in mine:  # a Slice mapping of 64, 128 or 256 slices gives every item a power-of-2 size
        if not (_pow2(s.size) and _pow2(w)):
            return _refuse("VCG-2", f"the Slice sub-expression of {axis} of size {s.size} is not a bit field of the "
                           f"slice id (weight {w})", loc,
                           "give each Slice part of a padded axis, and the Slice items inside it, power-of-2 sizes")
    times = [s.stride // scale for s in time_subs if s.axis == axis]
    if times and not (max(times) < min(strides) or min(times) > max(strides)):
        return _refuse("VCG-8", f"{axis} interleaves Slice and Time sub-expressions", loc,
                       f"keep every Slice part of {axis} major to every Time part (or every Time part major)")
    shift = {id(s): int(w).bit_length() - 1 for s, w in mine}
    mask = sum((s.size - 1) << shift[id(s)] for s, _ in mine)

    def encode(r: int) -> int:
        return sum(((r // st) % s.size) << shift[id(s)] for (s, _), st in zip(mine, strides))

    n = live // scale
    if not times or max(times) < min(strides):
        values = np.zeros(1, np.int64)
        for (s, _), st in zip(mine, strides):
            values = (values[:, None] + np.arange(s.size) * st).reshape(-1)
        boundary = int(values[values < n].max())
        seq = coalesce(Entry(s.size, s.stride // scale if s.axis == axis else 0) for s in time_subs)
        return seq, n - boundary, mask, encode(boundary), FilterMode.SLICE_MAJOR
    slice_span = math.prod(s.size for s, _ in mine)
    time_span = math.prod(s.span for s in time_subs if s.axis == axis)
    over = slice_span * time_span - n
    if over > slice_span:
        return _refuse("VCG-9", f"{axis} is over-padded by {over} positions, more than its Slice span {slice_span}",
                       loc, f"pad {axis} to the next multiple of its Slice span: Time-major counting drops at most "
                            "the last Time iteration")
    seq = coalesce(Entry(s.size, s.stride // scale // slice_span if s.axis == axis else 0) for s in time_subs)
    return seq, time_span - 1, mask, encode(slice_span - over), FilterMode.TIME_MAJOR
