"""`cast` and `commit_trim` [+ `commit_cast` / `commit_cast_relu` | `commit_valid_count_pack`]
+ `commit` lowered (docs/reference/diagnostics.md): a CastOp, and one CommitOp, which fill
their derived fields from their types (`of_types` in `tu_ops.commit`: the write plan is
`ir.rules.commit_plan`'s `commit_write_plan`, the computation COMMIT-2..6 check; a commit
after `commit_valid_count_pack` is the CommitOp with `pack=`). `dest` is filled by the
allocation pass. A reduce's Valid Count Generator configuration is the vector lowering's
(`tu_ops.lower.vrf.derived_pass`).
"""

from __future__ import annotations

from ir import ops as ir
from ir.valid_count_ops import CommitPacked, CommitValidCountPack
from tu_ops.base import Ref
from tu_ops.commit import CastOp, CommitOp
from tu_ops.enums import CommitConversion
from tu_ops.lower.tables import Site, lowers

__all__: list[str] = []


@lowers(ir.Cast, into=CastOp)
def _cast_stage(op: ir.Cast, site: Site) -> CastOp:
    return CastOp.of_types(Ref(site.result), Ref(site.src), op.input.type, op.result.type, op.loc)


@lowers(ir.CommitTrim, into=CommitOp)
def _trim_stage(op: ir.CommitTrim, site: Site) -> CommitOp:
    sink = site.chain.sink
    conv = site.later(ir.CommitCast)
    conversion = CommitConversion.NONE
    if conv is not None:
        conversion = CommitConversion.F32_TO_BF16_RELU if conv.relu else CommitConversion.F32_TO_BF16
    return CommitOp.of_types(Ref(site.result), Ref(site.src), op.input.type, sink.input.type, site.type_of(sink.result),
                             conversion, isinstance(sink, CommitPacked), site.context, site.target, op.loc)


@lowers(CommitValidCountPack)
@lowers(CommitPacked)
@lowers(ir.CommitCast)
@lowers(ir.Commit)
def _folded_into_trim(op: ir.Op, site: Site) -> None:
    """`commit_cast`, `commit_valid_count_pack` and `commit` (a packed one too) are fields of the
    CommitOp made at `commit_trim`."""
    return None
