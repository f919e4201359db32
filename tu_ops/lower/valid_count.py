"""`commit_trim` + `commit_valid_count_pack` + `commit` lowered: one CommitOp with `pack=`
(`CommitOp.of_types`, made at `commit_trim`, tu_ops.lower.commit). A reduce's Valid Count
Generator configuration is the vector lowering's (`tu_ops.lower.vrf.derived_pass`)."""

from __future__ import annotations

from ir import ops as ir
from ir.valid_count_ops import CommitPacked, CommitValidCountPack
from tu_ops.lower.tables import Site, lowers

__all__ = ["is_packed"]


def is_packed(sink: ir.Op) -> bool:
    """Whether a chain's sink is the commit after `commit_valid_count_pack`."""
    return isinstance(sink, CommitPacked)


@lowers(CommitValidCountPack)
@lowers(CommitPacked)
def _folded_into_trim(op: ir.Op, site: Site) -> None:
    """The packing and its commit are fields of the CommitOp made at `commit_trim`."""
    return None
