"""`commit_trim` + `commit_valid_count_pack` + `commit` lowered: one CommitOp with `pack=`
(`CommitOp.of_types`, made at `commit_trim`, tu_ops.lower.commit), and a reduce's Valid Count
Generator configuration."""

from __future__ import annotations

from typing import Any

import attrs

from ir import ops as ir
from ir.errors import InternalError
from ir.valid_count_ops import CommitPacked, CommitValidCountPack
from ir.vector.reduce_ops import VectorIntraSliceReduce
from tu_ops.lower.dispatch import Site, lowers
from tu_ops.valid_count import reduce_vcg

__all__ = ["is_packed", "with_vcg"]


def is_packed(sink: ir.Op) -> bool:
    """Whether a chain's sink is the commit after `commit_valid_count_pack`."""
    return isinstance(sink, CommitPacked)


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
