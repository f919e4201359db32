"""Hand-built packed `commit` records each refused by CMT-6 (merged into the verifier tests)."""

from __future__ import annotations

import attrs

from ir.dtypes import DType
from ir.mapping.api import m
from ir.mapping.ops import Entry
from ir.types import DmType, StreamType
from ir.valid_count import Clipper, TimeFilter
from tu_ops import CommitOp, Ref, WritePlan
from tu_ops.valid_count import PackConfig

_AXES = {"A": 256, "H": 5, "R": 10}
_SPACE = tuple(m(t, axes=_AXES) for t in ("1", "1 # 2", "A"))


def _q(text: str):
    return m(text, axes=_AXES)


PACK = PackConfig(filters=[TimeFilter([Entry(8, 1), Entry(2, 0)], 5)], clipper=Clipper([Entry(8, 0), Entry(2, 8)], 10, 8))
GOOD_PACK = CommitOp(result=Ref(3), input=Ref(2), valid_bytes=32, write=WritePlan(time=[], packet=[]), write_bytes=8,
                     dest=512, pack=PACK,
                     input_type=StreamType(DType.F32, *_SPACE, _q("H # 8, R # 16 / 8"), _q("R # 16 % 8"), "sub"),
                     output_type=DmType(DType.F32, *_SPACE, _q("H, R")))


def _bad(**changes):
    return lambda: (attrs.evolve(GOOD_PACK, **changes), None)


BAD_PACK = {
    "CMT-6": _bad(pack=attrs.evolve(PACK, clipper=Clipper([Entry(8, 0), Entry(2, 8)], 11, 8))),
    "CMT-6:main": _bad(input_type=attrs.evolve(GOOD_PACK.input_type, context="main")),
    "CMT-6:plan": _bad(write=WritePlan(time=[(16, 8)], packet=[(8, 1)])),
    "CMT-6:filters": _bad(pack=attrs.evolve(PACK, filters=PACK.filters * 4)),
    "CMT-6:walk": _bad(pack=attrs.evolve(PACK, filters=[TimeFilter([Entry(4, 1), Entry(2, 0)], 5)])),
    "CMT-6:size": _bad(output_type=DmType(DType.F32, *_SPACE, _q("H, R # 16"))),
    "CMT-6:dest": _bad(dest=524_288 - 64),
}


# --- FEED-14: a main-context f32 feed of `R # 8` (R = 6) masked to `R #{0} 8` ----------------

from ir.fetch_mask import FetchMaskConfig, MaskDim  # noqa: E402
from tu_ops import CollectFlits, DestKind, FeedBuffer, FeedDest, FeedElementType, FeedSource, ReadShape, TuContext  # noqa: E402

_MAXES = {"A": 256, "R": 6}
_MSPACE = tuple(m(t, axes=_MAXES) for t in ("1", "1 # 2", "A"))


def _mq(text: str):
    return m(text, axes=_MAXES)


MASK = FetchMaskConfig(axis=_mq("R"), last_axis=1, dim=MaskDim.RIGHTMOST, counts=[6])
GOOD_MASK = FeedBuffer(
    result=Ref(2), context=TuContext.MAIN, source=FeedSource(Ref(1), 0, DType.F32, _mq("R # 8")),
    conversions=[], element_type=FeedElementType.F32,
    shapes=[ReadShape(time=[], packet=[(8, 1)], packet_elems=8, read_elems=8)],
    flits_per_packet=1, collect_flits=CollectFlits.Flit1, beats=1, dest=FeedDest(DestKind.COMMIT, Ref(3)),
    input_type=StreamType(DType.F32, *_MSPACE, _mq("1"), _mq("R # 8"), "main"),
    output_type=StreamType(DType.F32, *_MSPACE, _mq("1"), _mq("R #{0} 8"), "main"), mask=MASK)


def _bad_mask(**changes):
    return lambda: (attrs.evolve(GOOD_MASK, mask=attrs.evolve(MASK, **changes)), None)


BAD_PACK.update({
    "FEED-14": _bad_mask(counts=[7]),                        # keeps a padding cell
    "FEED-14:live": _bad_mask(counts=[5]),                   # zeroes a live cell
    "FEED-14:axis": _bad_mask(axis=_mq("A")),                # not an axis of the stream
    "FEED-14:loop": _bad_mask(last_axis=2, counts=[0, 0], dim=MaskDim.RIGHTMOST_TWO),
})
