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
