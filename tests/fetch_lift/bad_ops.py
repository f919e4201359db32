"""Feed records with broken `lift=` fields, each refused by FEED-16 (tests/tu_ops/test_verifiers.py)."""

from __future__ import annotations

from ir.dtypes import DType
from ir.fetch_lift import LiftDim
from ir.mapping.api import m
from ir.types import StreamType
from tu_ops import CollectFlits, DestKind, FeedBuffer, FeedDest, FeedElementType, FeedSource, ReadShape, Ref, TuContext
from tu_ops.feed_lift import FeedLift

_AX = {"A": 128, "H": 2, "V": 16}


def _q(text):
    return m(text, axes=_AX)


def _feed(lift):
    """A bf16 feed of `A, 2` slices, time `H`, one 32-byte packet per slice after `lift`."""
    space = (_q("1"), _q("1 # 2"))
    return FeedBuffer(
        result=Ref(2), context=TuContext.MAIN, source=FeedSource(Ref(1), 0, DType.BF16, _q("H, V")),
        conversions=[], element_type=FeedElementType.BF16,
        shapes=[ReadShape(time=[], packet=[(16, 1)], packet_elems=16, read_elems=16)],
        flits_per_packet=1, collect_flits=CollectFlits.Flit1, beats=1, dest=FeedDest(DestKind.COMMIT, Ref(3)),
        input_type=StreamType(DType.BF16, *space, _q("A, 2"), _q("H"), _q("V"), "main"),
        output_type=StreamType(DType.BF16, *space, _q("A, H"), _q("1"), _q("V"), "main"),
        lift=lift)


def _case(lift):
    return lambda: (_feed(lift), None)


BAD_LIFT = {
    "FEED-16": _case([FeedLift(LiftDim.SLICE, _q("A, H"), _q("H"))]),             # H lifted and still walked
    "FEED-16:nothing": _case([FeedLift(LiftDim.SLICE, _q("A, 2"), _q("1"))]),       # no axis lifted
    "FEED-16:order": _case([FeedLift(LiftDim.SLICE, _q("A, H"), _q("1")),
                            FeedLift(LiftDim.CHIP, _q("1"), _q("1"))]),             # chip after slice
}


def _unaligned():
    """Rows of 4 i8: the base of H = 1 is 4 bytes in, not a whole 8-byte word."""
    ax = {"A": 128, "H": 2, "W": 4}
    q = lambda t: m(t, axes=ax)  # noqa: E731
    space = (q("1"), q("1 # 2"))
    return FeedBuffer(
        result=Ref(2), context=TuContext.MAIN, source=FeedSource(Ref(1), 0, DType.I8, q("H, W")),
        conversions=[], element_type=FeedElementType.RawInt8,
        shapes=[ReadShape(time=[], packet=[(8, 1)], packet_elems=8, read_elems=8)],
        flits_per_packet=1, collect_flits=CollectFlits.Flit1, beats=1, dest=FeedDest(DestKind.COMMIT, Ref(3)),
        input_type=StreamType(DType.I8, *space, q("A, 2"), q("H"), q("W # 8"), "main"),
        output_type=StreamType(DType.I8, *space, q("A, H"), q("1"), q("W # 32"), "main"),
        lift=[FeedLift(LiftDim.SLICE, q("A, H"), q("1"))]), None


BAD_LIFT["FEED-16:base"] = _unaligned
