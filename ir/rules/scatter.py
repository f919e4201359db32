"""Scatter rules SCATTER-1..5 (docs/machine/dma.md "Scatter"); SCATTER-6 is the run-time index check.

SCATTER-1: the index is an i32 HBM tensor of byte offsets (or, from the staged `by_positions`,
           an i32 SPM list of row numbers).
SCATTER-2: data, index and output live on the same chips.
SCATTER-3: the key is whole axes of the data, and the index lists exactly the key's axes.
SCATTER-4: the output is the payload with one consecutive region of scatter axes among it
           (a v0.6 call: one axis, outermost); the rows move as a `to_hbm` of the data
           would (DMA-1..6) and are whole bytes.
SCATTER-5: `dma_scatter_unscaled` (an index in DM) is not available: the reference declares
           it and leaves it unimplemented.
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.gather import is_index_dtype
from ir.rules.dma import check_dma_for
from ir.scatter import ScatterShape, scatter_shape, virtual_rows

__all__ = ["check_scatter", "scatter_parts"]


def scatter_parts(op: Any) -> tuple[ScatterShape, Any] | Violation:
    """(shape, virtual rows type) of a scatter op, or its first SCATTER violation."""
    data, index = op.src.type, op.index.type
    out = op.result.type if getattr(op, "view", None) is None else op.view   # into one page: the page's type
    if index.kind not in ("hbm", "spm") or not is_index_dtype(index.dtype):   # SPM: positions (gather_plan)
        return Violation("SCATTER-1", f"the index of a scatter is an i32 HBM tensor of byte offsets, not {index}",
                         help="store the indices as HbmTensor[i32, Chip, m(\"K\")]")
    for what, t in (("index", index), ("output", out)):
        if not t.chip.equivalent(data.chip):
            return Violation("SCATTER-2", f"the {what}'s Chip `{t.chip}` differs from the data's `{data.chip}`")
    if out.dtype != data.dtype:
        return Violation("SCATTER-4", f"a scatter cannot change the dtype ({data.dtype} -> {out.dtype})")
    shape = scatter_shape(data, op.key, index, out)
    if isinstance(shape, Violation):
        return shape
    if shape.row_cells * data.dtype.bits % 8:
        return Violation("SCATTER-4", f"a row of {shape.row_cells} {data.dtype} cells is not a whole number of bytes")
    return shape, virtual_rows(data, shape)


def check_scatter(op: Any) -> Violation | None:
    """SCATTER-1..4 for a `Scatter` op, first failure wins."""
    parts = scatter_parts(op)
    if isinstance(parts, Violation):
        return parts
    return check_dma_for("SCATTER-4", "the data cannot be read as rows", op.src.type, parts[1],
                         f"a to_hbm into {parts[1]}")
