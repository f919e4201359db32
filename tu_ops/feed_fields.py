"""The fields of a `FeedBuffer` record (tu_ops/feed.py): its source, second source, destination
and read shapes, and the elements one DM access of a read shape fetches.

A destination's kind (`DestKind`) is derived from the record classes, not listed beside
them: it is the `FEED_DEST` name a class declares, and the class. So a feed's verifier has
the one class it checks against without loading the other record modules (issue 29), and a
record declared in a registry of its own (ir.declare.Registry) is a kind while that is open.
Its enum-like face (`DestKind.VECTOR`, `DestKind["CAST"]`, iteration) knows the classes
loaded so far (`tu_ops.OP_CLASSES` loads them all; the VISA parser has)."""

from __future__ import annotations

from typing import Any, ClassVar, Iterator

import attrs

from ir.dtypes import DType
from ir.mapping.nodes import Mapping as MappingExpr
from ir.rules.read_plan import ReadPlan, read_run, sized_read
from tu_ops.base import FEED_DESTS, Entry, Ref, as_entries
from tu_ops.enums import TuContext
from tu_ops.stage_record import stage_records
from ir.words import a_an

__all__ = ["DestKind", "FeedSource", "FeedInterleave", "FeedDest", "ReadShape", "as_entries", "sized_feed_read"]


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


class _Kinds(type):
    """`DestKind`'s members: the names the loaded record classes declare (and declared stages')."""

    @property
    def __members__(cls) -> dict[str, DestKind]:
        stage_records()  # the declared stages' records declare theirs when made
        return {name: DestKind.of(op_class) for name, op_class in FEED_DESTS.items()}

    def __getattr__(cls, name: str) -> DestKind:
        kind = cls.__members__.get(name) if name.isupper() else None
        if kind is None:
            raise AttributeError(name)
        return kind

    def __getitem__(cls, name: str) -> DestKind:
        return cls.__members__[name]

    def __iter__(cls) -> Iterator[DestKind]:
        return iter(cls.__members__.values())


@attrs.frozen
class DestKind(metaclass=_Kinds):
    """Kind of op a FeedBuffer delivers to: the `FEED_DEST` a record class declares, printed
    by that name, and the class (`op_class`)."""

    TEXT_STYLE: ClassVar[str | None] = None  # printed as its name (tu_ops.printing)
    name: str
    op_class: type = attrs.field(eq=False, repr=False)

    def __str__(self) -> str:
        return self.name

    @classmethod
    def of(cls, op_class: type) -> DestKind:
        """The kind naming `op_class` (the class of its MRO that declares `FEED_DEST`), one
        object per class."""
        owner = next(c for c in op_class.__mro__ if vars(c).get("FEED_DEST") is not None)
        kind = vars(owner).get("DEST_KIND")
        if kind is None:
            kind = DestKind(owner.FEED_DEST, owner)
            owner.DEST_KIND = kind  # type: ignore[attr-defined]
        return kind


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


def sized_feed_read(context: TuContext, src: DType, plan: ReadPlan, out: DType, target: Any) -> tuple[ReadPlan, int]:
    """The read the feed makes and the elements of one DM access: the widest legal fetch of the
    read (FETCH-11, `ir.rules.read_plan.sized_read`: the plan itself, or its over-read of a
    `#`-padded packet when only that has a legal size), with the adapter leaving `out`: 8 bytes'
    worth in SUB; in MAIN the largest fetch size dividing the contiguous run (the innermost
    packet entry when its stride is 1, else one element) that the adapter's widening keeps
    within one flit and, below 8 bytes, whole words."""
    if context is TuContext.MAIN and plan.innermost_packet.stride != 1:
        return plan, 1  # a strided packet: one element per access (FEED-7), outside FETCH-11
    bits = lambda d: target.bits_of(d) or d.bits  # noqa: E731
    sized = sized_read(plan, context.value, bits(src), bits(out))
    if sized is None:
        raise ValueError(f"no legal fetch size reads {a_an(read_run(plan))}-element run of {src} as {out}")
    return sized
