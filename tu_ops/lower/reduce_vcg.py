"""The Valid Count Generator configuration of a Vector Engine pass's intra-slice reduce step:
the lowering of every pass record (`vector`, `vector_pair`, `vector_branch`) gives each step
its traced op's, through `with_vcg`."""

from __future__ import annotations

from typing import Any

import attrs

from ir import ops as ir
from ir.errors import InternalError
from ir.vector.reduce_ops import VectorIntraSliceReduce
from tu_ops.valid_count import reduce_vcg

__all__ = ["with_vcg"]


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
