"""The fields of a `FeedBuffer` record (tu_ops/feed.py): its source, second source, destination
and read shapes, and the elements one DM access of a read shape fetches."""

from __future__ import annotations

from typing import Any, ClassVar, Iterable

import attrs

from ir.dtypes import DType
from ir.mapping.nodes import Mapping as MappingExpr
from ir.rules.fetch import ReadPlan, fetch_volume, read_run
from tu_ops.base import Entry, Ref
from tu_ops.enums import TuContext
from tu_ops.feed_dests import DestKind

__all__ = ["FeedSource", "FeedInterleave", "FeedDest", "ReadShape", "as_entries", "read_elems"]


def as_entries(items: Iterable[Entry | tuple[int, int]]) -> tuple[Entry, ...]:
    """A tuple of loop entries from entries or `(size, stride)` pairs."""
    return tuple(e if isinstance(e, Entry) else Entry(*e) for e in items)


@attrs.frozen
class FeedSource:
    """`(%tensor, element offset, source dtype, "element mapping")`: the DM tensor read."""

    TEXT_STYLE: ClassVar[str] = "tuple"
    tensor: Ref
    offset: int
    dtype: DType
    element: MappingExpr


@attrs.frozen
class FeedInterleave:
    """`(%tensor, "I")`: the second DM tensor of an interleaved begin and its size-2 axis. The
    feed then reads the virtual tensor of element `I, <source element>`: virtual element
    `v` is element `v` of the source for `v < n` and element `v - n` of this tensor above
    (n = the source element's size); the read shape walks that virtual tensor."""

    TEXT_STYLE: ClassVar[str] = "tuple"
    tensor: Ref
    axis: MappingExpr


@attrs.frozen
class FeedDest:
    """`(KIND, %op)`: the op this feed delivers to."""

    TEXT_STYLE: ClassVar[str] = "tuple"
    kind: DestKind
    op: Ref


@attrs.frozen(kw_only=True)
class ReadShape:
    """One read loop nest: coalesced `time` and `packet` entries (strides in source elements,
    0 = broadcast), the fetch packet's size and the elements of one DM access."""

    TEXT_STYLE: ClassVar[str] = "struct"
    time: tuple[Entry, ...] = attrs.field(converter=as_entries)
    packet: tuple[Entry, ...] = attrs.field(converter=as_entries)
    packet_elems: int
    read_elems: int

    def entries(self) -> tuple[Entry, ...]:
        return self.time + self.packet

    def sizes(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return tuple(e.size for e in self.time), tuple(e.size for e in self.packet)


def read_elems(context: TuContext, src: DType, plan: ReadPlan, out: DType, target: Any) -> int:
    """Elements of one DM access: the widest legal fetch of the read (FETCH-11,
    `ir.rules.fetch.fetch_volume`), with the adapter leaving `out`: 8 bytes' worth in SUB; in MAIN
    the largest fetch size dividing the contiguous run (the innermost packet entry when its stride
    is 1, else one element) that the adapter's widening keeps within one flit and, below 8 bytes,
    whole words."""
    if context is TuContext.MAIN and plan.innermost_packet.stride != 1:
        return 1  # a strided packet: one element per access (FEED-7), outside FETCH-11
    bits = lambda d: target.bits_of(d) or d.bits  # noqa: E731
    n = fetch_volume(context.value, bits(src), bits(out), read_run(plan))
    if n is None:
        raise ValueError(f"no legal fetch size reads a {read_run(plan)}-element run of {src} as {out}")
    return n
