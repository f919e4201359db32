"""A traced `ToSpm` / `SpmToDm` lowered to an `SpmDmaOp` (tu_ops/spm.py, docs/machine/spm.md),
whose commands are the record's own derivation from its types (`tu_ops.dma_records.spm_record`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ir.errors import InternalError
from tu_ops.base import Ref
from tu_ops.dma_records import spm_record
from tu_ops.spm import SpmDmaOp

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["lower_spm_move"]


def lower_spm_move(op: Any, result: int, src: int, target: Target) -> SpmDmaOp:
    """The SpmDmaOp of a trace-valid `to_spm` (into SPM) or SPM `to_dm` whose result is `%result`."""
    try:
        return spm_record(Ref(result), Ref(src), op.src.type, op.result.type, target, op.loc)
    except ValueError as e:
        raise InternalError(f"{op.text()}: {e}") from None
