"""PACKET-5 at `contract_packet`: the adder tree may not sum padding the fetch read from memory.

`#` padding holds whatever memory holds there (the reference's book), and a fetch whose packet
is padded reads it; the Collect Engine fills the padding it adds to complete a flit with
zeros. The cpu backend and the interpreter read every padding leaf as zero, so only the
first kind can differ on the chip: refused unless zeroed (`fetch_mask`, `#{0}`). The IR op
alone cannot tell the two kinds apart (both are `#` in the stream type), so the DSL looks
back along the stream to its fetch."""

from __future__ import annotations

from typing import Any

import numpy as np

from ir import ops
from ir.errors import OvershootError
from ir.fetch_mask_ops import FetchMask
from ir.mapping.cells import OVERSHOOT
from ir.mapping.nodes import Mapping, PaddingKind
from ir.rules.contract_reducers import summed_packet_padding
from npu_opt.trace import current
from ir.memo import memo

__all__ = ["refuse_summed_memory_padding"]


def refuse_summed_memory_padding(out: Any) -> Any:
    """`out`, the stream after `contract_packet`; PACKET-5 recorded when its tree sums `#`
    padding that the stream's fetch read from memory."""
    tracer = current()
    op = tracer.ops[-1] if tracer.ops else None
    if not isinstance(op, ops.ContractPacket) or getattr(out, "value", None) is not op.result:
        return out
    if op.result.id in tracer.poisoned or not _fetch_reads_padding(tracer.ops, op):
        return out
    violation = summed_packet_padding(op.input.type.packet, op.packet)
    if violation is not None:
        tracer.refuse(violation, op.loc, op.STAGE, op)
    return out


def _fetch_reads_padding(trace: list[Any], op: Any) -> bool:
    """Whether the fetch feeding `op`'s stream has `#` / `#{!}` padding in its packet (and no
    fetch mask zeroed it). The producers are looked up from the newest op back, as far as the
    fetch: a tile loop's earlier tiles are never scanned."""
    made: dict[int, Any] = {}
    older = (o for o in reversed(trace) if o.result is not None)
    value = op.input
    while value is not None:
        while value.id not in made:
            o = next(older, None)
            if o is None:
                return False
            made[o.result.id] = o
        producer = made[value.id]
        if isinstance(producer, FetchMask):
            return False
        if isinstance(producer, ops.Fetch):
            return _memory_padding(producer.packet)
        value = getattr(producer, "input", None)
    return False


@memo()
def _memory_padding(packet: Mapping) -> bool:
    """Whether `packet` has a `#` or `#{!}` padding cell, its positions read in order (a
    position decoding outside its axes before any such cell raises, as `Mapping.cell` does).
    A function of the mapping alone, so cached on it."""
    status = packet.cells(np.arange(packet.size)).status
    hits = np.flatnonzero((status == PaddingKind.TOP) | (status == PaddingKind.BOTTOM) | (status == OVERSHOOT))
    if hits.size == 0:
        return False
    if status[hits[0]] == OVERSHOOT:
        raise OvershootError(f"position {int(hits[0])} of `{packet}` decodes outside its axes "
                             "(docs/mapping-language.md)")
    return True
