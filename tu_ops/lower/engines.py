"""The data-movement engines lowered: `transpose` becomes a TransposeOp carrying the
parameters the traced rules found (`ir.data_movement_ops.Transpose.params`), with
`fetch_in_width_shift=1` when they chose doubled input packing."""

from __future__ import annotations

from ir.data_movement_ops import Transpose
from tu_ops.base import Ref
from tu_ops.lower.dispatch import Site, lowers
from tu_ops.transpose import TransposeOp

__all__ = ["lower_transpose"]


@lowers(Transpose, into=TransposeOp)
def lower_transpose(op: Transpose, site: Site) -> TransposeOp:
    """The TransposeOp of a legal traced transpose."""
    p = op.params()
    return TransposeOp(result=Ref(site.result), input=Ref(site.src), in_rows=p.in_rows, in_cols=p.in_cols,
                       out_rows=p.out_rows, packets_per_col=p.packets_per_col,
                       valid_size_per_packet=p.valid_size_per_packet,
                       fetch_in_width_shift=p.fetch_in_width_shift or None, input_type=op.input.type,
                       output_type=op.result.type, loc=op.loc)
