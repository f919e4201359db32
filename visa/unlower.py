"""The inverse of the lowering: the traced stages a TU program record stands for.

`visa.relower` rebuilds, from a parsed record's input and output types, the minimal traced
ops (`ir.ops`) the lowering's builders read. Each record kind declares its inverse here,
`@retraces("mnemonic")` on a function `(rec, src, types, target, fresh) -> traced ops`
(`src` the traced value the record streams from, `types` the type of every value id,
`fresh` new negative ids for intermediate values), so a new engine adds one declaration.
The feed, which opens every program, is `visa.relower`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Iterator

import attrs

from ir import ops as ir
from ir.declare import Table
from ir.data_movement_ops import Transpose
from ir.mapping.nodes import Resize
from ir.valid_count_ops import CommitPacked, CommitValidCountPack
from ir.vector import enums as E
from ir.vector.inter_ops import VectorInterSliceReduce
from tu_ops.dma_view import with_levels
from tu_ops.enums import CommitConversion
from tu_ops.lower.vector import traced_pass
from tu_ops.lower.vector_branch import traced_branch
from tu_ops.lower.vector_pair import traced_pair

__all__ = ["Underivable", "retraces", "retrace_stage", "RETRACES"]

Retrace = Callable[[Any, ir.Value, dict[int, Any], Any, Iterator[int]], tuple[ir.Op, ...]]


def _load() -> None:
    """The other modules of `visa` that declare a re-derivation (visa/unlower*.py)."""
    from visa import unlower_branch_rf, unlower_pair_rf, unlower_vrf  # noqa: F401


RETRACES = Table("re-derivation", _load, package="visa")


class Underivable(Exception):
    """The lowering's builders cannot lower the record's types (`op` is the record)."""

    def __init__(self, op: Any, detail: str) -> None:
        super().__init__(detail)
        self.op = op
        self.detail = detail


def retraces(mnemonic: str) -> Callable[[Retrace], Retrace]:
    """Declare `fn` as the inverse of the lowering for records of kind `mnemonic`."""
    return RETRACES.declare(mnemonic)


def retrace_stage(rec: Any, src: ir.Value, types: dict[int, Any], target: Any,
                  fresh: Iterator[int]) -> tuple[ir.Op, ...]:
    """The traced ops of the record `rec` (one stage, or the trim-cast-commit group)."""
    fn = RETRACES.get(rec.MNEMONIC)
    if fn is None:
        raise Underivable(rec, f"a `{rec.MNEMONIC}` record has no place in a TU program")
    return fn(rec, src, types, target, fresh)


def _result(rec: Any) -> ir.Value:
    return ir.Value(rec.result.id, rec.output_type)


@retraces("trf_load")
def _trf_load(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    out = rec.output_type
    return (ir.ToTrf(input=src, lane=out.lane, element=out.element, result=_result(rec), loc=rec.loc),)


@retraces("contract_outer")
def _contract_outer(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    out = rec.output_type
    trf_t = types.get(rec.weights.id)
    if getattr(trf_t, "kind", None) != "trf":
        raise Underivable(rec, f"the weights {rec.weights} are not a TRF tensor")
    return (ir.ContractOuter(input=src, trf=ir.Value(rec.weights.id, trf_t), time=out.time, packet=out.packet,
                             result=_result(rec), loc=rec.loc),)


@retraces("packet_reduce")
def _packet_reduce(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    return (ir.ContractPacket(input=src, packet=rec.output_type.packet, result=_result(rec), loc=rec.loc),)


@retraces("time_reduce")
def _time_reduce(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    return (ir.ContractTime(input=src, time=rec.output_type.time, result=_result(rec), loc=rec.loc),)


@retraces("lane_fold")
def _lane_fold(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    out = rec.output_type
    return (ir.ContractLane(input=src, time=out.time, packet=out.packet, mode=rec.mode, result=_result(rec),
                            loc=rec.loc),)


@retraces("cast_op")
def _cast(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    out = rec.output_type
    return (ir.Cast(input=src, dtype=out.dtype, packet=out.packet, result=_result(rec), loc=rec.loc),)


@retraces("transpose")
def _transpose(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    out = rec.output_type
    return (Transpose(input=src, out_time=out.time, out_packet=out.packet, result=_result(rec), loc=rec.loc),)


@retraces("vector")
def _vector(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    return traced_pass(rec, src, fresh)


@retraces("vector_pair")
def _vector_pair(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    return traced_pair(rec, src, fresh)


@retraces("vector_branch")
def _vector_branch(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    return traced_branch(rec, src, fresh)


@retraces("commit")
def _commit(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    """`commit_trim(P') [commit_cast] commit(element)`: the trim keeps the input packet's first
    `valid_bytes` worth of cells of the committed dtype (TRIM-2); a commit into a tensor
    commits its window `view`."""
    out = rec.output_type
    if getattr(rec, "view", None) is not None:
        out = with_levels(out, rec.view)
    bits = target.bits_of(out.dtype) or out.dtype.bits
    if (rec.valid_bytes * 8) % bits:
        raise Underivable(rec, f"valid_bytes {rec.valid_bytes} is not a whole number of {out.dtype} cells")
    n = rec.valid_bytes * 8 // bits
    packet = src.type.packet
    if not 1 <= n <= packet.size:
        raise Underivable(rec, f"valid_bytes {rec.valid_bytes} keeps {n} cells of a {packet.size}-cell packet")
    trimmed = packet if n == packet.size else Resize(packet, n).normalize()
    trim = ir.CommitTrim(input=src, packet=trimmed, result=ir.Value(next(fresh), attrs.evolve(src.type, packet=trimmed)),
                         loc=rec.loc)
    ops: list[ir.Op] = [trim]
    cur = trim.result
    if rec.conversion is not CommitConversion.NONE:
        relu = rec.conversion is CommitConversion.F32_TO_BF16_RELU
        conv = ir.CommitCast(input=cur, dtype=out.dtype, relu=relu,
                             result=ir.Value(next(fresh), attrs.evolve(cur.type, dtype=out.dtype)))
        ops.append(conv)
        cur = conv.result
    if getattr(rec, "pack", None) is not None:  # valid-count packing (ir.valid_count_ops)
        pack = CommitValidCountPack(input=cur, result=ir.Value(next(fresh), cur.type))
        return (*ops, pack, CommitPacked(input=pack.result, element=out.element, result=ir.Value(rec.result.id, out)))
    ops.append(ir.Commit(input=cur, element=out.element, result=ir.Value(rec.result.id, out)))
    return tuple(ops)


@retraces("inter_slice_reduce")
def _inter_slice_reduce(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    family = E.InterSliceReduceOpF32 if rec.scalar == "f32" else E.InterSliceReduceOpI32
    op = getattr(family, rec.op.name, None)
    if op is None:
        raise Underivable(rec, f"{rec.op.name} is not an inter-slice reduce op on {rec.scalar}")
    return (VectorInterSliceReduce(input=src, out_slice=rec.out_slice, out_time=rec.output_type.time, op=op,
                                   result=_result(rec), loc=rec.loc),)
