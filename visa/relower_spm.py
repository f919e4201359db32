"""Re-derive a `dma_spm` record from its types (as `visa.relower` does for `dma`): the traced
`to_spm` / `to_dm` is rebuilt and checked by its trace rules (SPM-1..3), the record's commands
are the ones its types fix (`tu_ops.dma_records.spm_record`), its DM side at the derived allocation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ir import ops as ir
from ir.spm_ops import SpmToDm, ToSpm
from tu_ops.dma_records import spm_record
from visa.relower import Underivable

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["expected_spm"]


def expected_spm(op: Any, types: dict[int, Any], dm_base: dict[int, int], target: Target) -> Any:
    """The SpmDmaOp `op`'s types fix (`tu_ops.dma_records.spm_record`), at the derived allocations."""
    into_spm = op.output_type.kind == "spm"
    cls = ToSpm if into_spm else SpmToDm
    traced = cls(src=ir.Value(op.src.id, op.input_type), result=ir.Value(op.result.id, op.output_type), loc=op.loc)
    found = traced.check()
    if found is not None:
        raise Underivable(op, f"[{found.code}] {found.message}")
    try:
        low = spm_record(op.result, op.src, op.input_type, op.output_type, target, op.loc)
    except Exception as e:  # noqa: BLE001 - any failure of the builder means: not derivable
        raise Underivable(op, str(e).splitlines()[0] if str(e) else type(e).__name__) from None
    src_off = dm_base.get(op.src.id, 0) if into_spm else 0        # the DM side's allocation
    dst_off = 0 if into_spm else dm_base.get(op.result.id, 0)
    commands = tuple(attrs.evolve(c, src_base=c.src_base + src_off, dst_base=c.dst_base + dst_off)
                     for c in low.commands)
    return attrs.evolve(low, commands=commands, aggregate=None, src_alloc=op.src_alloc, dst_alloc=op.dst_alloc)
