"""Bad TransposeOps, one per verifier rule TRANSPOSE-6..11 and 18, around a legal op: a bf16
stream of Time (A=4, B=2) and 8 live columns, transposed into (A, K) x rows B (two rows);
`GOOD_DOUBLED` reads 16 live columns per packet (doubled input packing)."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ir.dtypes import DType
from ir.mapping import m
from ir.types import StreamType
from tu_ops import Ref, TransposeOp

_AXES = {"A": 4, "B": 2, "K": 8, "J": 16}
_SPACE = (m("1"), m("1 # 2"), m("1 # 256"))


def _stream(time: str, packet: str) -> StreamType:
    return StreamType(DType.BF16, *_SPACE, m(time, axes=_AXES), m(packet, axes=_AXES), "main")


GOOD = TransposeOp(result=Ref(3), input=Ref(2), in_rows=2, in_cols=8, out_rows=8, packets_per_col=1,
                   valid_size_per_packet=8, input_type=_stream("A, B", "K # 16"),
                   output_type=_stream("A, K", "B # 16"))


GOOD_DOUBLED = TransposeOp(result=Ref(3), input=Ref(2), in_rows=2, in_cols=16, out_rows=16, packets_per_col=1,
                           valid_size_per_packet=16, fetch_in_width_shift=1, input_type=_stream("A, B", "J"),
                           output_type=_stream("A, J", "B # 16"))


def _bad(**changes) -> Callable:
    return lambda: (attrs.evolve(GOOD, **changes), None)


TRANSPOSE_BAD: dict[str, Callable] = {
    "TRANSPOSE-6": _bad(valid_size_per_packet=16, in_cols=16),
    "TRANSPOSE-6:dtype": _bad(input_type=attrs.evolve(GOOD.input_type, dtype=DType.I9)),
    "TRANSPOSE-7": _bad(in_cols=16),
    "TRANSPOSE-8": _bad(out_rows=12),
    "TRANSPOSE-9": _bad(input_type=_stream("A, B", "(K, 1 # 2) # 16")),
    "TRANSPOSE-10": _bad(packets_per_col=2, in_cols=16, input_type=_stream("1 # 3", "K # 16")),
    "TRANSPOSE-11": _bad(in_rows=3),
    "TRANSPOSE-11:out-time": _bad(output_type=_stream("A, 1 # 4", "B # 16")),
    "TRANSPOSE-6:doubled-unmarked": lambda: (attrs.evolve(GOOD_DOUBLED, fetch_in_width_shift=None), None),
    "TRANSPOSE-6:marked-base": _bad(fetch_in_width_shift=1),
    "TRANSPOSE-18": lambda: (attrs.evolve(GOOD_DOUBLED, fetch_in_width_shift=2), None),
    "TRANSPOSE-18:explicit-zero": _bad(fetch_in_width_shift=0),
    "TRANSPOSE-18:f32": lambda: (attrs.evolve(GOOD_DOUBLED, input_type=attrs.evolve(
        GOOD_DOUBLED.input_type, dtype=DType.F32, packet=m("K", axes=_AXES)), output_type=attrs.evolve(
        GOOD_DOUBLED.output_type, dtype=DType.F32, packet=m("B # 8", axes=_AXES))), None),
}
