"""Re-derive a `dma_spm` record from its types (as `visa.relower` does for `dma`): the traced
`to_spm` / `to_dm` is rebuilt and checked by its trace rules (SPM-1..3), the record's commands
are the ones its types fix (`tu_ops.dma_records.spm_record`), its DM side at the derived allocation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ir import ops as ir
from ir.spm_ops import SpmToDm, ToSpm
from tu_ops.dma_records import spm_record
from visa.relower import built, placed

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["expected_spm"]


def expected_spm(op: Any, types: dict[int, Any], dm_base: dict[int, int], target: Target) -> Any:
    """The SpmDmaOp `op`'s types fix (`tu_ops.dma_records.spm_record`), at the derived allocations."""
    into_spm = op.output_type.kind == "spm"
    cls = ToSpm if into_spm else SpmToDm
    traced = cls(src=ir.Value(op.src.id, op.input_type), result=ir.Value(op.result.id, op.output_type), loc=op.loc)
    low = built(op, lambda: spm_record(op.result, op.src, op.input_type, op.output_type, target, op.loc), traced)
    if into_spm:  # the DM side's allocation
        return placed(op, low, src=dm_base.get(op.src.id, 0))
    return placed(op, low, dst=dm_base.get(op.result.id, 0))
