"""`commit_trim` + `commit_valid_count_pack` + `commit` lowered: one CommitOp with `pack=`.

The packed write is dense, so the record's write plan is empty; `write_bytes` is the sub
context's access width and `dest` is filled by the allocation pass.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir import ops as ir
from ir.errors import InternalError
from ir.valid_count_ops import CommitPacked, CommitValidCountPack
from ir.vector.reduce_ops import VectorIntraSliceReduce
from tu_ops.base import Ref
from tu_ops.commit import CommitOp, WritePlan
from tu_ops.enums import CommitConversion
from tu_ops.lower.dispatch import Site, lowers
from tu_ops.valid_count import pack_config, reduce_vcg

__all__ = ["lower_packed_commit", "is_packed", "with_vcg"]


def is_packed(sink: ir.Op) -> bool:
    """Whether a chain's sink is the commit after `commit_valid_count_pack`."""
    return isinstance(sink, CommitPacked)


def lower_packed_commit(trim: ir.CommitTrim, site: Site) -> CommitOp:
    """The CommitOp of `trim`, `commit_valid_count_pack`, `commit(element)`."""
    sink = site.chain.sink
    stream = sink.input.type
    bits = site.target.bits_of(stream.dtype) or stream.dtype.bits
    nbits = stream.packet.size * bits
    if nbits % 8:
        raise InternalError(f"{sink.text()}: the committed packet is not whole bytes")
    try:
        pack = pack_config(stream)
    except ValueError as e:
        raise InternalError(f"{sink.text()}: {e}") from e
    return CommitOp(result=Ref(site.result), input=Ref(site.src), valid_bytes=nbits // 8,
                    conversion=CommitConversion.NONE, write=WritePlan(time=(), packet=()),
                    write_bytes=site.target.constants.SUB_ACCESS_BYTES, dest=0, pack=pack,
                    input_type=trim.input.type, output_type=site.type_of(sink.result), loc=trim.loc)


@lowers(CommitValidCountPack)
@lowers(CommitPacked)
def _folded_into_trim(op: ir.Op, site: Site) -> None:
    """The packing and its commit are fields of the CommitOp made at `commit_trim`."""
    return None


def with_vcg(step: Any, op: ir.Op) -> Any:
    """A pass's step for the traced `op`: an intra-slice reduce of a padded axis carries the
    Valid Count Generator's configuration (`vcg=`) that excludes the padding."""
    if not isinstance(op, VectorIntraSliceReduce):
        return step
    t = op.input.type
    try:
        vcg = reduce_vcg(t.slice, t.time, t.packet, op.axis)
    except ValueError as e:
        raise InternalError(f"{op.text()}: {e}") from e
    return step if vcg is None else attrs.evolve(step, vcg=vcg)
