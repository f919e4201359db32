"""What a feed may deliver to: the record classes that declare a `FEED_DEST` name (with the
element types they take, `FEED_ELEMENTS`). `DestKind` is derived from them, not listed
beside them: a kind is a declared name and the class declaring it, so a feed's verifier
finds the one class it checks against without loading every module of `tu_ops` (issue 29),
and a record declared in a registry of its own (ir.declare.Registry) is a kind while the
registry is open. Only asking for every kind (`DestKind.__members__`, a parser reading a
kind's name) loads every record class.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterator, Mapping

import attrs

import tu_ops
from tu_ops import stage_record
from tu_ops.base import FEED_DESTS
from tu_ops.enums import FeedElementType

__all__ = ["DestKind", "feed_destination", "feed_destinations", "dest_element_types", "dest_mnemonics"]


class _Kinds(type):
    """The enum-like face of `DestKind` (`DestKind.VECTOR`, `DestKind["CAST"]`, iteration):
    its members are the names every record class declares."""

    @property
    def __members__(cls) -> dict[str, DestKind]:
        tu_ops.OP_CLASSES  # noqa: B018  every record class declared
        stage_record.stage_records()  # and those the stage declarations make
        return {name: DestKind.of(op_class) for name, op_class in FEED_DESTS.items()}

    def __getattr__(cls, name: str) -> DestKind:
        op_class = FEED_DESTS.get(name) if not name.startswith("_") else None  # a class loaded already
        kind = DestKind.of(op_class) if op_class is not None else cls.__members__.get(name) if name.isupper() else None
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


def feed_destination(kind: DestKind) -> type:
    """The record class `kind` names."""
    return kind.op_class


def feed_destinations() -> dict[DestKind, type]:
    """The record class of every destination kind."""
    return {kind: kind.op_class for kind in DestKind}


def dest_element_types() -> Mapping[DestKind, frozenset[FeedElementType]]:
    """FEED-2 as data: the element types each destination kind accepts, with Flit1 and Flit2
    alike, from each op class's `FEED_ELEMENTS`. (RawInt8, Flit2, TRF_LOAD) is the
    reference's v0.3 failure and is legal here."""
    return {kind: cls.FEED_ELEMENTS for kind, cls in feed_destinations().items()}


def dest_mnemonics() -> Mapping[DestKind, Any]:
    """The op mnemonic each destination kind names (FEED-12)."""
    return {kind: cls.MNEMONIC for kind, cls in feed_destinations().items()}
