"""A TRF tensor made by `TrfTensor[...].new()`: a `tensor_new` record of TRF type (docs/views.md).

Where a TRF tensor lands is the compiler's to decide, so the record carries no row: like a
`trf_load`'s result, it gets the lowest free row of the TRF allocation rule (even when its
lanes hold a whole number of 64-byte bank pairs, as a Flit2 load would). Its geometry is
its type's: `lanes` is the size of the Lane mapping, `bytes_per_lane` the element's bytes
rounded up to whole 32-byte rows, and the cells read back in the format a load of its
dtype would store (`CELL_FORMATS`). The chip does not clear the rows; the cpu backend and
the interpreter read them as zeros, the reference's host model.

`trf_maker` gives the TRF geometry of whatever made a TRF tensor (a `trf_load` or such a
`tensor_new`), so liveness, allocation and the contraction's TRF reads treat both alike.
"""

from __future__ import annotations

from typing import Any

import attrs

from tu_ops.enums import CELL_FORMATS, CellFormat, CollectFlits, FeedElementType, Region

__all__ = ["TrfShape", "trf_shape", "trf_maker", "trf_new_problem"]

_FLIT = 32  # bytes of one TRF row (FLIT_BYTES of every target)


@attrs.frozen
class TrfShape:
    """The TRF geometry a `trf_load` record spells out, derived for a `tensor_new` of TRF type."""

    lanes: int
    bytes_per_lane: int
    collect_flits: CollectFlits
    cell_format: CellFormat | None
    base_row: int = 0
    region: Region = Region.FULL

    def rows(self, target: Any) -> int:
        return -(-self.bytes_per_lane // target.constants.FLIT_BYTES)

    def occupied_rows(self, target: Any) -> tuple[int, int]:
        return self.base_row, self.base_row + self.rows(target)


def trf_shape(t: Any, bits: int) -> TrfShape:
    """The geometry of a TRF tensor of type `t` whose cells are `bits` wide."""
    element = -(-t.element.size * bits // 8)
    per_lane = max(-(-element // _FLIT), 1) * _FLIT
    flits = CollectFlits.Flit2 if per_lane % (2 * _FLIT) == 0 else CollectFlits.Flit1
    return TrfShape(t.lane.size, per_lane, flits, CELL_FORMATS.get(FeedElementType.of(t.dtype)))


def trf_maker(op: Any, target: Any) -> Any | None:
    """The TRF geometry of `op` when it makes a TRF tensor (the op itself for a `trf_load`)."""
    if op.MNEMONIC == "trf_load":
        return op
    if op.MNEMONIC == "tensor_new" and op.output_type.kind == "trf":
        return trf_shape(op.output_type, target.bits_of(op.output_type.dtype) or op.output_type.dtype.bits)
    return None


def trf_new_problem(t: Any, target: Any) -> str | None:
    """Why a TRF tensor of type `t` cannot be made on `target`, or None."""
    bits = target.bits_of(t.dtype) or 0
    shape = trf_shape(t, bits or t.dtype.bits)
    if t.dtype not in target.trf_storage or shape.cell_format is None:
        return f"{t.dtype} cannot be stored in the TRF of target {target.name}"
    if shape.lanes not in target.constants.LANES:
        return f"{shape.lanes} lanes; legal: {list(target.constants.LANES)}"
    if t.element.size * bits % 8:
        return "the TRF element is not whole bytes"
    if shape.lanes * shape.bytes_per_lane > target.constants.TRF_BYTES:
        return f"{shape.lanes} lanes x {shape.bytes_per_lane} bytes exceed the TRF's {target.constants.TRF_BYTES}"
    return None
