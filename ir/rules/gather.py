"""Gather rules GATHER-1..5 (docs/machine/dma.md "Gather"); GATHER-6 is the run-time index check.

GATHER-1: the index is an i32 tensor (HBM for a scaled gather, DM for an unscaled one).
GATHER-2: table, index and output live on the same chips (a gather never crosses chips); an
          index broadcast over the table's chips is one list each chip reads.
GATHER-3: the index selects one consecutive region of table axes, the axes after it a row of
          whole bytes (`ir.gather.gather_shape`); a v0.6 call, the one outermost axis.
GATHER-4: the gathered rows move into DM as a `to_dm` would (DMA-1..6 on the virtual source).
GATHER-5: an unscaled index fits the SPM of one processing element per (chip, cluster).
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.gather import SPM_INDEX_BYTES, GatherShape, gather_shape, is_index_dtype, virtual_source
from ir.rules.dma import check_dma_for
from ir.types import DmType

__all__ = ["check_gather", "gather_parts"]


def gather_parts(op: Any) -> tuple[GatherShape, Any] | Violation:
    """(shape, virtual source type) of a gather op, or its first GATHER violation."""
    table, index, out = op.src.type, op.index.type, op.result.type
    if not is_index_dtype(index.dtype):
        return Violation("GATHER-1", f"the index tensor holds {index.dtype}; gather indices are i32",
                         help="store the indices as i32")
    for what, t in (("index", index), ("output", out)):
        shared = what == "index" and _broadcast(t.chip) and t.chip.size == table.chip.size   # one list for every chip
        if not shared and not t.chip.equivalent(table.chip):
            return Violation("GATHER-2", f"the {what}'s Chip `{t.chip}` differs from the table's `{table.chip}`",
                             help="a gather reads rows on its own chip; give all three the table's Chip")
    shape = gather_shape(table, index, out)
    if isinstance(shape, Violation):
        return shape
    if shape.row_bytes(table.dtype.bits) is None:
        return Violation("GATHER-3", f"a row of {shape.row_cells} {table.dtype} cells is not a whole number of bytes")
    return shape, virtual_source(table, shape)


def _broadcast(chip: Any) -> bool:
    """A Chip that holds the same cells on every chip (`m("2")`)."""
    factors = list(chip.factors())
    return bool(factors) and all(type(f).__name__ == "BroadcastFactor" for f in factors)


def check_gather(op: Any) -> Violation | None:
    """GATHER-1..5 for a `Gather` op, first failure wins."""
    parts = gather_parts(op)
    if isinstance(parts, Violation):
        return parts
    shape, virtual = parts
    moved = check_dma_for("GATHER-4", "the gathered rows cannot be written into this DM layout", virtual,
                          op.result.type, f"a to_dm from {virtual}")
    if moved is not None:
        return moved
    if not op.scaled and op.index.type.kind == "dm":   # an SPM index fits by its own type (SPM-1)
        return _spm_budget(op.index.type, shape)
    return None


def _spm_budget(index: DmType, shape: GatherShape) -> Violation | None:
    per_part = index.slice.size * index.element.size * 4
    if per_part > SPM_INDEX_BYTES:
        return Violation("GATHER-5", f"the unscaled index holds {per_part} bytes per (chip, cluster); one "
                                     f"processing element's SPM takes {SPM_INDEX_BYTES}",
                         help="split the index into chunks of at most 1024 entries per cluster, or scale it "
                              "into byte offsets and use dma_gather_scaled")
    return None
