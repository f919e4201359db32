"""Traced ops of the valid counts: the Commit Adapter's valid-count packing (sub context).

`commit_valid_count_pack()` (after `commit_trim`) hands each flit's leading `valid_size`
cells, as the Valid Count Generator counts them (`ir.valid_count`), to the Commit Engine
and drops the rest; `commit(element)` after it writes those cells back to back, in stream
order, into a new DM tensor laid out as `element`. So a stream whose rows end in padding is
stored densely: a row of 10 live cells padded to 16 takes 10 cells of DM, not 16.
"""

from __future__ import annotations

import attrs
import numpy as np

from ir.diagnostic import Violation
from ir.mapping.cells import LIVE
from ir.mapping.nodes import Mapping, Pair, Symbol, pair_all, written
from ir.ops import Commit, InputOp
from ir.rules.space import validate_type
from ir.types import Type
from ir.valid_count import checked_slices, derive_vcg, per_slice, sub_expressions
from ir.words import a_an

__all__ = ["CommitValidCountPack", "CommitPacked", "packed_coords", "default_packed_element", "default_element",
           "sliced", "check_pack", "check_packed"]


def check_pack(op: CommitValidCountPack) -> Violation | None:
    """VCG-1 (sub context only), then VCG-2..4: the generator can count the stream's flits."""
    t = op.input.type
    if t.context != "sub":
        return Violation("VCG-1", "`commit_valid_count_pack` runs only in the sub context",
                         label=f"{a_an(t.context)}-context stream",
                         help="begin the chain on `ctx.sub`; the main context's Commit Adapter has no packer")
    found = derive_vcg(t.slice, t.time, t.packet)
    return found if isinstance(found, Violation) else None


@attrs.frozen(kw_only=True)
class CommitValidCountPack(InputOp):
    """Commit Adapter packing: keep each flit's counted prefix for a dense write."""

    STAGE = "commit_valid_count_pack"
    RULES = (check_pack,)
    FOLDED = True  # a field of the one CommitOp its chain lowers to
    SAME_TYPE_AS = "input"


def packed_coords(time: Mapping, packet: Mapping) -> dict[str, np.ndarray]:
    """The axis coordinates of the live cells of `(time; packet)`, in stream order."""
    both = Pair(time, packet)
    table = both.cells(np.arange(both.size))
    live = table.status == LIVE
    return {axis: coords[live] for axis, coords in table.coords.items()}


def sliced(t: Type) -> bool:
    """Whether the stream's counts differ per slice (a padded axis split into Slice)."""
    found = derive_vcg(t.slice, t.time, t.packet)
    return not isinstance(found, Violation) and per_slice(found)


def default_element(t: Type) -> Mapping:
    """The packed commit's default element: the stream's axes whole and unpadded; with
    per-slice counts, its time and packet as they are (without the packet's flit padding),
    so each slice's run is a prefix of the slots its part of the padded axis has."""
    if not sliced(t):
        return default_packed_element(t.time, t.packet)
    subs = sub_expressions(t.packet, "packet")
    packet = t.packet
    if not isinstance(subs, Violation) and len(subs) == 1 and subs[0].span < subs[0].size:
        packet = getattr(t.packet, "operand", t.packet)
    return pair_all([t.time, packet])


def default_packed_element(time: Mapping, packet: Mapping) -> Mapping:
    """`X, Y, ...`: the stream's axes, whole and unpadded, in order of first appearance."""
    order: list[Symbol] = []
    for mapping, where in ((time, "time"), (packet, "packet")):
        subs = sub_expressions(mapping, where)
        for s in [] if isinstance(subs, Violation) else subs:
            if s.axis is not None and "#" not in s.axis and s.axis not in [x.name for x in order]:
                order.append(Symbol(s.axis, s.axis_size))
    return pair_all(order)


def _same_cells(element: Mapping, got: dict[str, np.ndarray]) -> bool:
    n = len(next(iter(got.values()))) if got else int(element.size == 1)
    if element.size != n:
        return False
    table = element.cells(np.arange(element.size))
    if not np.all(table.status == LIVE):
        return False
    zero = np.zeros(n, np.int64)
    return all(np.array_equal(table.coords.get(a, zero), got.get(a, zero)) for a in set(table.coords) | set(got))


def _same_per_slice(t: Type, element: Mapping) -> bool:
    """Per-slice counts: in every slice that holds data, the element's first cells are that
    slice's packed cells in stream order, and the rest of the element is padding there."""
    stream = pair_all([t.slice, t.time, t.packet])
    src = stream.cells(np.arange(stream.size))
    dst_map = pair_all([t.slice, element])
    dst = dst_map.cells(np.arange(dst_map.size))
    n, e = t.time.size * t.packet.size, element.size
    src_live = (src.status == LIVE).reshape(t.slice.size, n)
    dst_live = (dst.status == LIVE).reshape(t.slice.size, e)
    for s in np.flatnonzero(checked_slices(t.slice, t.time.axes() | t.packet.axes())):
        count = int(src_live[s].sum())
        if count > e or not dst_live[s, :count].all() or dst_live[s, count:].any():
            return False
        for axis in set(src.coords) | set(dst.coords):
            a = src.coords.get(axis, np.zeros(stream.size, np.int64)).reshape(t.slice.size, n)[s][src_live[s]]
            b = dst.coords.get(axis, np.zeros(dst_map.size, np.int64)).reshape(t.slice.size, e)[s, :count]
            if not np.array_equal(a, b):
                return False
    return True


def check_packed(op: CommitPacked) -> Violation | None:
    """VCG-5: `element` lists the packed cells in their stream order (per slice, when the
    counts differ per slice); then SPACE/MEM on the tensor."""
    t = op.input.type
    same = _same_per_slice(t, op.element) if sliced(t) else _same_cells(op.element, packed_coords(t.time, t.packet))
    if not same:
        default = default_element(t)
        return Violation("VCG-5", f"the packed cells are not the element {op.element.text()} in order",
                         label=f"the stream packs its live cells of (time {t.time.text()} ; packet "
                               f"{t.packet.text()}) back to back",
                         help=f"the packed write is dense and in stream order; try m(\"{written(default)}\")")
    return validate_type(op.result.type, None)


@attrs.frozen(kw_only=True)
class CommitPacked(Commit):
    """Commit Engine after packing: the counted cells, back to back, as a new DM tensor (a
    sink like every commit)."""

    STAGE = "commit"
    TEXT = "commit_packed"
    RULES = (check_packed,)
