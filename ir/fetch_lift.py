"""Fetch lifts: `fetch_chip_lift`, `fetch_cluster_lift`, `fetch_slice_lift` (docs/machine/fetch-lift.md).

A plain fetch starts every chip, cluster and slice at the same DM offset. A lift gives each
of them its own read *base*: a broadcast of the placement (the same data held by several
positions) is replaced by axes that the fetch time walked, and those axes leave the time.
Position `p` of the lifted placement then reads from its own copy at the element offset of
the lifted coordinates it holds (`lift_offsets`). No data moves between positions, so the
source must really be replicated along the broadcast a lift fills.

The rules (LIFT-1 ... LIFT-6) compare the placement position by position: sizes equal, padding
unchanged, every axis the placement held kept at every live position, the new axes of
power-of-two extent; the time shrinks by a power of two that divides the dimension and
keeps every digit it read that the placement does not now hold; every base is a multiple of
8 bytes. This module holds them and the offsets, which the VISA interpreter also reads.
"""

from __future__ import annotations

import enum

import numpy as np

from ir.diagnostic import Violation
from ir.mapping.cells import LIVE
from ir.mapping.factors import AxisFactor, RaggedFactor
from ir.mapping.nodes import Mapping, pair_all
from ir.mapping.ranges import axes_of, factor_frags, frag, merge_frags
from ir.words import a_an

__all__ = ["LiftDim", "BASE_ALIGN_BITS", "placement_problem", "time_problem", "lifted_axes",
           "lift_offsets", "base_problem", "lifted_space"]

BASE_ALIGN_BITS = 64  # a fetch base is a multiple of one 8-byte SRAM access word


class LiftDim(enum.Enum):
    """The placement dimension a lift fills, outermost first."""

    CHIP = 0
    CLUSTER = 1
    SLICE = 2


def _pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def lifted_axes(before: Mapping, after: Mapping) -> frozenset[str]:
    """The axes a lift brings into a placement: live in `after`, absent from `before`."""
    return axes_of(after) - axes_of(before)


def placement_problem(dim: LiftDim, before: Mapping, after: Mapping) -> Violation | None:
    """LIFT-1 ... LIFT-4 on one dimension's placement `before` -> `after`."""
    name = dim.name.capitalize()
    if before.size != after.size:
        return Violation("LIFT-1", f"{a_an(dim.name.lower())} lift keeps the {name} size: `{before}` has {before.size} "
                         f"positions, `{after}` has {after.size}",
                         label=f"out_{dim.name.lower()} `{after}`",
                         help="fill a broadcast of the placement with axes of the same size")
    if before.equivalent(after):
        return _nothing_lifted(dim, before, after)
    if not _pow2(before.size):
        return _slot_changed(name, before, after, f"{before.size} positions do not split into broadcasts of 2")
    n = np.arange(before.size)
    a, b = before.cells(n), after.cells(n)
    a_live, b_live = a.status == LIVE, b.status == LIVE
    if np.any(a_live & ~b_live):
        p = int(np.flatnonzero(a_live & ~b_live)[0])
        return Violation("LIFT-4", f"the lift turns live position {p} of the {name} placement into padding",
                         label=f"`{before}` -> `{after}`",
                         help="only an axis may fill a broadcast; reshape the DM placement and leave that "
                              "padding unread instead")
    if np.any(~a_live & b_live):
        return _slot_changed(name, before, after, "a padding position becomes live")
    for axis in sorted(axes_of(before)):
        if axis not in b.coords or np.any(a_live & (a.coords[axis] != b.coords[axis])):
            return _slot_changed(name, before, after, f"`{axis}` of `{before}` is not kept in place")
    new = lifted_axes(before, after)
    if not new:
        return _nothing_lifted(dim, before, after)
    odd = [f for f in frag(after) if f.axis in new and not _pow2(f.extent)]
    if odd:
        return _slot_changed(name, before, after, f"the lifted digits of `{odd[0].axis}` are {odd[0].extent}, "
                             "not a power of two")
    return None


def _nothing_lifted(dim: LiftDim, before: Mapping, after: Mapping) -> Violation:
    return Violation("LIFT-2", f"the {dim.name.lower()} lift brings no axis into the {dim.name.capitalize()} "
                     f"placement `{before}`", label=f"out_{dim.name.lower()} `{after}` holds no axis that `{before}` lacks",
                     help="a read that changes no placement is a plain `fetch`: drop the lift")


def _slot_changed(name: str, before: Mapping, after: Mapping, why: str) -> Violation:
    return Violation("LIFT-3", f"a lift may only fill broadcasts of the {name} placement: {why}",
                     label=f"`{before}` -> `{after}`",
                     help=f"keep every axis of `{before}` where it is and replace only a broadcast `2`, `4`, ... "
                          "with the axes the fetch time walks")


def time_problem(dim: LiftDim, placement: Mapping, after: Mapping, time: Mapping, out_time: Mapping,
                 packet: Mapping) -> Violation | None:
    """LIFT-5: the lifted axes leave `time`; `out_time` keeps every other digit `time` read."""
    ratio, rest = divmod(time.size, out_time.size)
    why = None
    if rest:
        why = f"out_time `{out_time}` ({out_time.size}) does not divide the time `{time}` ({time.size})"
    elif not _pow2(ratio):
        why = f"the lift takes {ratio} steps out of the time, not a power of two"
    elif placement.size % ratio:
        why = f"the lift takes {ratio} steps out of the time, more than the {placement.size} positions hold"
    new = lifted_axes(placement, after)
    moved = [f for f in frag(after) if f.axis in new]
    kept = merge_frags([*frag(out_time), *frag(packet)])
    if why is None:
        twice = [f for f in moved for g in kept if f.axis == g.axis and f.lo < g.hi and g.lo < f.hi]
        if twice:
            why = f"`{twice[0].axis}` is lifted and still read in out_time"
    if why is None:
        have = merge_frags([*kept, *moved])
        gap = [f for f in frag(time) if not any(g.axis == f.axis and g.lo <= f.lo and f.hi <= g.hi for g in have)]
        if gap:
            why = f"the digits {gap[0]} of the time are neither lifted nor kept in out_time"
    if why is None:
        return None
    return Violation("LIFT-5", f"{a_an(dim.name.lower())} lift moves the lifted axes out of the time and keeps the rest: "
                     f"{why}", label=f"time `{time}` -> out_time `{out_time}`",
                     help="write out_time as the fetch time without the axes the placement now holds")


def lift_offsets(space: tuple[Mapping, Mapping, Mapping], lifted: frozenset[str], element: Mapping) -> np.ndarray | None:
    """The element offset every position of the lifted `space` (chip, cluster, slice, flat)
    reads from: the lifted coordinates it holds, placed by `element`. None when `element`
    holds a lifted axis in a ragged piece, which has no stride."""
    joint = pair_all(list(space))
    cells = joint.cells(np.arange(joint.size))
    out = np.zeros(joint.size, np.int64)
    stride = 1
    for f in reversed(element.factors()):
        if isinstance(f, RaggedFactor) and any(r.axis in lifted for r in factor_frags(f)):
            return None
        if isinstance(f, AxisFactor) and f.axis in lifted and f.axis in cells.coords:
            out += ((cells.coords[f.axis] // f.step) % f.extent) * stride
        stride *= f.extent
    return np.where(cells.status == LIVE, out, 0)


def lifted_space(space: tuple[Mapping, Mapping, Mapping], lifts: tuple[tuple[LiftDim, Mapping], ...]
                 ) -> tuple[Mapping, Mapping, Mapping]:
    """`space` with each lift's placement put in its dimension."""
    out = list(space)
    for dim, placement in lifts:
        out[dim.value] = placement
    return out[0], out[1], out[2]


def base_problem(space: tuple[Mapping, Mapping, Mapping], after: tuple[Mapping, Mapping, Mapping],
                 element: Mapping, bits: int) -> Violation | None:
    """LIFT-6: every base of the lifted placement `after` (over `space`) is whole 8-byte words."""
    lifted = frozenset().union(*(lifted_axes(a, b) for a, b in zip(space, after)))
    offsets = lift_offsets(after, lifted, element)
    if offsets is None:
        return Violation("LIFT-6", f"the DM element `{element}` holds a lifted axis in a padded piece, which gives "
                         "no fetch base", label=f"element `{element}`",
                         help="lift an axis the element holds as whole digits")
    bad = np.flatnonzero(offsets * bits % BASE_ALIGN_BITS)
    if not len(bad):
        return None
    p = int(bad[0])
    step = int(offsets[p]) * bits
    return Violation("LIFT-6", f"a lifted fetch base must be a multiple of 8 bytes; position {p} reads from "
                     f"element {int(offsets[p])}, {step // 8 if step % 8 == 0 else step / 8} bytes in",
                     label=f"the lifted axes step {step} bits through the DM element `{element}`",
                     help="lift an axis whose DM stride is a multiple of 8 bytes, e.g. pad the inner axes")
