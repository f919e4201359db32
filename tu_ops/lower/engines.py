"""The data-movement engines lowered: `transpose` becomes a TransposeOp, which fills the
engine parameters from its types (`TransposeOp.of_types`)."""

from __future__ import annotations

from ir.data_movement_ops import Transpose
from tu_ops.base import Ref
from tu_ops.lower.tables import Site, lowers
from tu_ops.transpose import TransposeOp

__all__ = ["lower_transpose"]


@lowers(Transpose, into=TransposeOp)
def lower_transpose(op: Transpose, site: Site) -> TransposeOp:
    """The TransposeOp of a legal traced transpose."""
    return TransposeOp.of_types(Ref(site.result), Ref(site.src), op.input.type, op.result.type, op.loc)
