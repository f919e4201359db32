"""`SpmTensor[dtype, Chip, Cluster, Pe, Element]` and its moves (docs/machine/spm.md):
`dm.to_spm(ctx.tdma, SpmTensor[...])` (also from a DM read view) and
`spm.to_dm(ctx.tdma, DmTensor[...])`, traced into `ir.spm_ops.ToSpm` / `SpmToDm`."""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.mapping.nodes import Mapping
from ir.rules.space import validate_type
from ir.spm_ops import SpmToDm, ToSpm
from ir.types import SpmType
from npu_opt.dma import _check_engine
from npu_opt.stagebase import location_of, refuse_call
from npu_opt.tensor_data import DmTensorData, TensorSpec, _TensorClass
from npu_opt.trace import current
from npu_opt.views import dma_source

__all__ = ["SpmTensor", "SpmSpec", "to_spm", "spm_to_dm"]

_LEVELS = ("dtype", "chip", "cluster", "pe", "element")


@attrs.frozen
class SpmSpec:
    """A subscripted `SpmTensor[dtype, Chip, Cluster, Pe, Element]`, validated at its first use."""

    items: tuple[Any, ...]
    kind = "spm"

    def __str__(self) -> str:
        return "SpmTensor[" + ", ".join(f'm("{x}")' if isinstance(x, Mapping) else str(x) for x in self.items) + "]"

    def resolve(self) -> SpmType | Violation:
        """The IR type, or a TYPE-6 violation when the subscript has the wrong shape."""
        if len(self.items) != len(_LEVELS):
            return Violation("TYPE-6", f"SpmTensor[...] takes 5 items ({', '.join(_LEVELS)}), got {len(self.items)}",
                             help="write SpmTensor[dtype, Chip, Cluster, Pe, Element]")
        dtype, *maps = self.items
        if not isinstance(dtype, DType):
            return Violation("TYPE-6", f"the first item of SpmTensor[...] must be a dtype, not {type(dtype).__name__}")
        for name, mp in zip(_LEVELS[1:], maps):
            if not isinstance(mp, Mapping):
                return Violation("TYPE-6", f"the {name} level of SpmTensor[...] must be a mapping built by m(), "
                                           f"not {type(mp).__name__}")
        return SpmType(dtype, *maps)


class SpmTensor(_TensorClass):
    """A scratchpad tensor: `SpmTensor[dtype, Chip, Cluster, Pe, Element]`; in a trace, the
    handle `to_spm` returns, which offers `to_dm` and serves as a `by_positions` index."""

    KIND = "spm"

    def __class_getitem__(cls, items: Any) -> SpmSpec:  # type: ignore[override]
        return SpmSpec(items if isinstance(items, tuple) else (items,))

    def to_dm(self, dma: Any, dst: Any = None) -> Any:
        """SPM -> DM Tensor DMA into the layout `dst` (a `DmTensor[...]`, Slice = 64 x Pe)."""
        return spm_to_dm(self, dma, dst)


def to_spm(src: Any, dma: Any, dst: Any) -> Any:
    """`dm.to_spm(ctx.tdma, SpmTensor[...])`: a DM tensor (or read view, maybe tiled at a
    runtime start: a Tensor DMA reads it) into SPM."""
    tracer = current()
    loc = location_of("to_spm")
    bad = _check_engine(dma, "to_spm")
    if bad is None and not isinstance(dst, SpmSpec):
        bad = Violation("TYPE-6", f"the destination of `to_spm` must be an SpmTensor[...] type, not {dst!s:.60}",
                        help="e.g. `.to_spm(ctx.tdma, SpmTensor[i32, Chip, Cluster, m(\"1 # 4\"), m(\"K\")])`")
    dst_type = bad or dst.resolve()
    if isinstance(dst_type, Violation):
        return refuse_call(dst_type, "to_spm")
    op = ToSpm(src=dma_source(src), result=tracer.value(dst_type), loc=loc)   # a runtime tile start too
    tracer.emit(op)
    return SpmTensor(op.result)


def spm_to_dm(src: SpmTensor, dma: Any, dst: Any) -> Any:
    """`spm.to_dm(ctx.tdma, DmTensor[...])`: an SPM tensor into DM."""
    tracer = current()
    loc = location_of("to_dm")
    bad = _check_engine(dma, "to_dm")
    if bad is None and (not isinstance(dst, TensorSpec) or dst.kind != "dm"):
        bad = Violation("TYPE-6", f"the destination of an SPM tensor's `to_dm` must be a DmTensor[...] type, not "
                                  f"{dst!s:.60}", help="e.g. `.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, "
                                                       "m(\"1 # 256\"), m(\"K\")])`")
    dst_type = bad or dst.resolve()
    if isinstance(dst_type, Violation):
        return refuse_call(dst_type, "to_dm")
    op = SpmToDm(src=src.value, result=tracer.value(dst_type), loc=loc)
    fault = validate_type(dst_type, None, code="DMA-3")
    tracer.emit(op, refused=fault if fault is not None and fault.code == "TYPE-3" else None, stage="to_dm")
    return DmTensorData.handle(op.result)
