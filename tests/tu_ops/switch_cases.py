"""Bad switching FeedBuffers, one per way of breaking FEED-13, around a legal feed: an i8
stream on Slice S (256 slices) of Time A and 32-byte packets E, switched with
TRANSPOSE(slice1=32, slice0=2) or with a CUSTOM_BROADCAST that moves S % 4 into Time."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ir.dtypes import DType
from ir.mapping import m
from ir.types import StreamType
from tu_ops import CollectFlits, DestKind, FeedBuffer, FeedDest, FeedElementType, FeedSource, ReadShape, Ref, TuContext
from tu_ops.switch import SwitchKind, SwitchRoute

_AXES = {"S": 256, "A": 8, "E": 32, "X": 4}


def _q(text: str):
    return m(text, axes=_AXES)


def _stream(slice_: str, time: str) -> StreamType:
    return StreamType(DType.I8, _q("1"), _q("1 # 2"), _q(slice_), _q(time), _q("E"), "main")


SWAPPED = "S / 64, S % 2, S / 2 % 32"
ROUTE = SwitchRoute(config=SwitchKind.TRANSPOSE, slice1=32, slice0=2, time0=0, ring_size=64,
                    out_slice=_q(SWAPPED), out_time=_q("A"), bitmap=())
GOOD = FeedBuffer(
    result=Ref(3), context=TuContext.MAIN, source=FeedSource(Ref(2), 0, DType.I8, _q("A, E")),
    conversions=[], element_type=FeedElementType.RawInt8,
    shapes=[ReadShape(time=[(8, 32)], packet=[(32, 1)], packet_elems=32, read_elems=32)],
    flits_per_packet=1, collect_flits=CollectFlits.Flit1, beats=8, dest=FeedDest(DestKind.COMMIT, Ref(4)),
    switch=ROUTE, input_type=_stream("S", "A"), output_type=_stream(SWAPPED, "A"))

# a CUSTOM_BROADCAST: output slice (s / 4, x) reads the 4 input slices s / 4 * 4 + 0..3
CUSTOM_ROUTE = SwitchRoute(config=SwitchKind.CUSTOM_BROADCAST, slice1=0, slice0=0, time0=0, ring_size=4,
                           out_slice=_q("S / 4, X"), out_time=_q("A, S % 4"),
                           bitmap=[[s // 4 * 4 + k for k in range(4)] for s in range(256)])
CUSTOM = attrs.evolve(GOOD, switch=CUSTOM_ROUTE, beats=32, output_type=_stream("S / 4, X", "A, S % 4"))


def _bad(base: FeedBuffer = GOOD, **changes) -> Callable:
    return lambda: (attrs.evolve(base, **changes), None)


SWITCH_BAD: dict[str, Callable] = {
    "FEED-13": _bad(switch=attrs.evolve(ROUTE, ring_size=32)),
    "FEED-13:frame": _bad(switch=attrs.evolve(ROUTE, out_slice=_q("S")), output_type=_stream("S", "A")),
    "FEED-13:field": _bad(switch=attrs.evolve(ROUTE, time0=2)),
    "FEED-13:collected": _bad(output_type=_stream("S", "A")),
    "FEED-13:bitmap": _bad(CUSTOM, switch=attrs.evolve(CUSTOM_ROUTE, bitmap=[[s] for s in range(256)])),
    "FEED-13:named-bitmap": _bad(switch=attrs.evolve(ROUTE, bitmap=[[0]])),
}
