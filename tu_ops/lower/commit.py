"""`cast` and `commit_trim` [+ `commit_cast` / `commit_cast_relu`] + `commit` lowered
(docs/reference/diagnostics.md): a CastOp, and one CommitOp whose write plan is `ir.rules.commit_plan`'s
`commit_write_plan` (the computation COMMIT-2..6 check).

`write_bytes` (visa/visa.lark granularity): `valid_bytes` when one packet is one
contiguous write, else its contiguous piece, in MAIN; 8 in SUB. `dest` is filled by the
allocation pass.
"""

from __future__ import annotations

from typing import Any

from ir import ops as ir
from ir.errors import InternalError
from ir.rules.commit_plan import commit_write_plan
from ir.types import DmType
from tu_ops.base import Ref
from tu_ops.commit import CastOp, CommitOp, WritePlan
from tu_ops.enums import CommitConversion, FeedElementType, TuContext
from tu_ops.lower.dispatch import Site, lowers
from tu_ops.lower.valid_count import is_packed, lower_packed_commit

__all__ = ["lower_cast", "lower_commit"]


def lower_cast(op: ir.Cast, result: int, src: int) -> CastOp:
    """The CastOp of `op`: narrow one 32-bit flit, `valid_elems = size(P)`."""
    t = op.input.type
    return CastOp(result=Ref(result), input=Ref(src), in_type=FeedElementType.of(t.dtype),
                  out_type=FeedElementType.of(op.dtype), valid_elems=t.packet.size, input_type=t,
                  output_type=op.result.type, loc=op.loc)


def lower_commit(trim: ir.CommitTrim, conv: ir.CommitCast | None, commit: ir.Commit, result: int,
                 src: int, out_type: DmType, context: TuContext, target: Any) -> CommitOp:
    """The CommitOp of the commit path `trim [conv] commit`, located at `commit_trim`."""
    stream = commit.input.type
    bits = target.bits_of(stream.dtype) or stream.dtype.bits
    nbits = stream.packet.size * bits
    if nbits % 8:
        raise InternalError(f"{commit.text()}: the committed packet is not whole bytes")
    valid = nbits // 8
    try:
        plan = commit_write_plan(stream, commit.element)
    except ValueError as e:
        raise InternalError(f"{commit.text()}: {e}") from e
    if context is TuContext.SUB:
        write_bytes = target.constants.SUB_ACCESS_BYTES
    elif plan.contiguous:
        write_bytes = valid
    else:
        write_bytes = plan.piece_elems * bits // 8
    conversion = CommitConversion.NONE
    if conv is not None:
        conversion = CommitConversion.F32_TO_BF16_RELU if conv.relu else CommitConversion.F32_TO_BF16
    return CommitOp(result=Ref(result), input=Ref(src), valid_bytes=valid, conversion=conversion,
                    write=WritePlan(time=plan.time, packet=plan.packet), write_bytes=write_bytes, dest=0,
                    input_type=trim.input.type, output_type=out_type, loc=trim.loc)


# --- declarations: how each commit-path stage lowers -----------------------------------------

@lowers(ir.Cast, into=CastOp)
def _cast_stage(op: ir.Cast, site: Site) -> CastOp:
    return lower_cast(op, site.result, site.src)


@lowers(ir.CommitTrim, into=CommitOp)
def _trim_stage(op: ir.CommitTrim, site: Site) -> CommitOp:
    sink = site.chain.sink
    if is_packed(sink):  # valid-count packing (tu_ops.lower.valid_count)
        return lower_packed_commit(op, site)
    return lower_commit(op, site.later(ir.CommitCast), sink, site.result, site.src, site.type_of(sink.result),
                        site.context, site.target)


@lowers(ir.CommitCast)
@lowers(ir.Commit)
def _folded_into_trim(op: ir.Op, site: Site) -> None:
    """`commit_cast` and `commit` are fields of the CommitOp made at `commit_trim`."""
    return None
