"""The (time, packet) a way change leaves: the Vector Engine's four packet reshapes.

The 8-way stream carries one flit (8 cells) per time step, the 4-way float path the front
four. `narrow_trim` keeps the front four cells (the back four must be padding);
`narrow_split` moves the back four onto a new innermost time step, so flit t becomes
steps 2t (its front four) and 2t + 1 (its back four); `widen_pad` pads the four cells back
to a flit; `widen_concat` is the split's inverse, joining steps 2t and 2t + 1. Each
function returns the normalized (time, packet) pair or raises `MappingError` when the
shapes do not divide; the traced ops, the lowering and the record's verifier all use them.
"""

from __future__ import annotations

import attrs

from ir.errors import MappingError
from ir.mapping.nodes import Mapping, Modulo, Pad

__all__ = ["FLIT", "HALF", "split_shape", "concat_shape", "trim_shape", "pad_shape"]

FLIT, HALF = 8, 4  # cells per flit; cells of a 4-way packet (and time steps a concat joins: 2)


def split_shape(time: Mapping, packet: Mapping) -> tuple[Mapping, Mapping]:
    """`vector_narrow_split`: (time, packet / 4), packet % 4. A packet that is a digit of a
    padded axis (`R # 16 % 8`, |R| = 10) keeps its inner digit as written, `R # 16 % 4`: its
    normal form `R = 4` beside the time `R # 16 / 4` would decode R past |R| (as `trim_shape`),
    and so does the time its outer half joins, which normalizes to `R # 12 / 4 # 4`."""
    if isinstance(packet, Modulo) and isinstance(packet.operand, Pad) and packet.n % HALF == 0:
        return time.pair(packet.stride(HALF)), attrs.evolve(packet, n=HALF)
    return time.pair(packet.stride(HALF)).normalize(), packet.modulo(HALF).normalize()


def concat_shape(time: Mapping, packet: Mapping) -> tuple[Mapping, Mapping]:
    """`vector_widen_concat`: time / 2, (time % 2, packet)."""
    return time.stride(2).normalize(), time.modulo(2).pair(packet).normalize()


def trim_shape(time: Mapping, packet: Mapping) -> tuple[Mapping, Mapping]:
    """`vector_narrow_trim`: time, the front four cells of the packet. A packet padded from
    four cells keeps them as written when their normal form beside the time has no factor
    form: `R # 16 % 4 # 8` under the time `R # 16 / 4` (|R| = 10) is `R # 16 % 4`, the padded
    axis's inner digit, where its normal form `R = 4` would decode R past |R|."""
    front = packet.resize(HALF).normalize()
    inner = packet
    while isinstance(inner, Pad) and inner.operand.size >= HALF:
        inner = inner.operand
    if isinstance(inner, Pad):
        # fewer live cells than four: `A % 2 # 8` keeps `A % 2 # 4`, the form the trace checks;
        # its normal form `1 # 2, A % 2` (the same cells) is no packet the Valid Count
        # Generator counts (VCG-2)
        return time, attrs.evolve(inner, n=HALF)
    if inner.size != HALF or inner == front:
        return time, front
    try:
        time.pair(front).factors()
    except MappingError:
        return time, inner
    return time, front


def pad_shape(time: Mapping, packet: Mapping) -> tuple[Mapping, Mapping]:
    """`vector_widen_pad`: time, the packet padded to a flit."""
    return time, packet.pad(FLIT).normalize()
