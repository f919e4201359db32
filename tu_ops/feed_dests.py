"""Every feed destination kind at once (FEED-2 and FEED-12 as data): the record classes'
own declarations (`FEED_DEST`, `tu_ops.feed_fields.DestKind`), every record module loaded
first (tu_ops/op_classes.py)."""

from __future__ import annotations

from tu_ops.enums import FeedElementType
from tu_ops.feed_fields import DestKind
from tu_ops import op_classes  # noqa: F401  every record module loaded: every kind declared

__all__ = ["feed_destinations", "dest_element_types", "dest_mnemonics"]


def feed_destinations() -> dict[DestKind, type]:
    """The record class of every destination kind."""
    return {kind: kind.op_class for kind in DestKind}


def dest_element_types() -> dict[DestKind, frozenset[FeedElementType]]:
    """FEED-2 as data: the element types each destination kind accepts, Flit1 and Flit2 alike."""
    return {kind: cls.FEED_ELEMENTS for kind, cls in feed_destinations().items()}


def dest_mnemonics() -> dict[DestKind, str]:
    """The op mnemonic each destination kind names (FEED-12)."""
    return {kind: cls.MNEMONIC for kind, cls in feed_destinations().items()}
