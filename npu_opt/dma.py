"""Tensor DMA calls (`to_dm`, `to_hbm`) and `view`, traced into IR ops (docs/machine/dma.md),
and the shuffles the Tensor DMA engine runs: `view.dm_cluster_shuffle(ctx.tdma, DIM, pattern)`,
`view.dm_chip_shuffle(...)` and `hbm.hbm_chip_shuffle(...)`, traced into `ir.gather_ops.Shuffle`
(docs/machine/topology.md). `pattern[target] = source`: chip (cluster) `target` of the result
holds what chip (cluster) `source` of the input held. `hbm_cluster_shuffle` is refused (SHUFFLE-3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ir.diagnostic import Violation
from ir.errors import MappingError
from ir.gather_ops import Shuffle
from ir.mapping.factors import AxisFactor, RaggedFactor
from ir.mapping.nodes import IDENTITY, Mapping, Symbol, axis_sizes, pair_all
from ir.ops import ToDm, ToHbm, View
from ir.rules.space import validate_type
from ir.types import DmType, HbmType
from npu_opt.engines import TensorDma, _check_engine
from npu_opt.params import refuse_write
from npu_opt.stagebase import Poisoned, location_of, refuse_call
from npu_opt.tensor_data import DmTensorData, HbmTensorData, TensorSpec
from npu_opt.trace import current
from npu_opt.views import dma_source, into_hbm_view, read_view
from ir.words import a_an

if TYPE_CHECKING:  # the public classes, assembled above this module (npu_opt.tensor_data)
    from npu_opt.tensors import DmTensor, DmTensorView

__all__ = ["dma_to_dm", "dma_to_hbm", "make_view", "TensorDma", "default_hbm_element", "shuffle"]


def _resolve_dst(dst: Any, kind: str, stage: str) -> DmType | HbmType | Violation:
    want = "DmTensor[...]" if kind == "dm" else "HbmTensor[...]"
    if not isinstance(dst, TensorSpec) or dst.kind != kind:
        return Violation("TYPE-6", f"the destination of `{stage}` must be {a_an(want)} type, not {dst!s:.60}",
                         help=f"e.g. `.{stage}(ctx.tdma, {want})`")
    return dst.resolve()


def default_hbm_element(t: DmType | HbmType) -> Mapping:
    """Every axis of the tensor once, whole and unpadded, in order of first appearance
    reading Cluster, Slice, Element outer to inner (docs/porting.md); `1` when none."""
    seen: dict[str, int] = {}
    levels = (t.element,) if isinstance(t, HbmType) else (t.cluster, t.slice, t.element)
    for mapping in levels:
        for factor in mapping.factors():
            if isinstance(factor, AxisFactor):
                seen.setdefault(factor.axis, factor.axis_size)
            elif isinstance(factor, RaggedFactor):
                for name in sorted({k for cell in factor.cells if hasattr(cell, "keys") for k in cell}):
                    seen.setdefault(name, axis_sizes(mapping)[name])
    if not seen:
        return IDENTITY
    shared = set(t.chip.axes()) & set(seen)
    return pair_all([_off_chip(name, size, levels) if name in shared else Symbol(name, size)
                     for name, size in seen.items()])


def _off_chip(name: str, size: int, levels: tuple[Mapping, ...]) -> Mapping:
    """The digits of axis `name` the levels hold besides the Chip's (a Chip `A / 4 % 4`
    leaves `A / 16, A % 4`), outer first."""
    digits = sorted({(f.step, f.extent) for level in levels for f in level.factors()
                     if isinstance(f, AxisFactor) and f.axis == name}, reverse=True)
    parts = []
    for step, extent in digits:
        part = Symbol(name, size).stride(step) if step > 1 else Symbol(name, size)
        parts.append(part.modulo(extent) if step * extent < size else part)
    return pair_all(parts)


def _dma(src: Any, dma: Any, dst: Any, kind: str) -> Any:
    stage = "to_dm" if kind == "dm" else "to_hbm"
    tracer = current()
    loc = location_of(stage)
    bad = _check_engine(dma, stage)
    if bad is None and type(dma).__name__ == "PcieDma" and (kind == "dm" or src.type.kind == "dm"):
        bad = Violation("CTX-1", f"`{stage}` touches DM; the PCIe DMA (ctx.pdma) moves HBM -> HBM only",
                        help=f"pass ctx.tdma: `.{stage}(ctx.tdma, ...)`")
    if bad is None and dst is None and kind == "hbm":
        try:
            dst_type: Any = HbmType(src.type.dtype, src.type.chip, default_hbm_element(src.type))
        except MappingError:
            if tracer.is_poisoned(src.value):  # a refused chain's type: no second report
                return Poisoned(stage)
            dst_type = Violation("TYPE-6", "cannot infer the HBM layout of this tensor",
                                 help="pass it explicitly: `.to_hbm(ctx.tdma, HbmTensor[dtype, Chip, m(\"...\")])`")
    else:
        dst_type = bad or _resolve_dst(dst, kind, stage)
    if isinstance(dst_type, Violation):
        return refuse_call(dst_type, stage)
    spec_fault = validate_type(dst_type, None, code="DMA-3")
    extra = {"inferred": dst is None} if kind == "hbm" else {}
    op_cls = ToDm if kind == "dm" else ToHbm
    op = op_cls(src=dma_source(src), result=tracer.value(dst_type), loc=loc, **extra)
    tracer.emit(op, refused=spec_fault if spec_fault is not None and spec_fault.code == "TYPE-3" else None,
                stage=stage)
    return (DmTensorData if kind == "dm" else HbmTensorData).handle(op.result)


def dma_to_dm(src: Any, dma: Any, dst: Any = None) -> Any:
    """`src.to_dm(ctx.tdma, DmTensor[...])`; `src.to_dm(DmTensor[...])` lacks the engine."""
    if dst is None and not isinstance(dma, TensorDma):
        return refuse_call(Violation("TYPE-6", "`to_dm` is missing its DMA engine operand: it takes ctx.tdma, "
                                               "then the destination type",
                                     help="write `.to_dm(ctx.tdma, DmTensor[...])`"), "to_dm")
    return _dma(src, dma, dst, "dm")


def dma_to_hbm(src: Any, dma: Any, dst: Any = None) -> Any:
    """`src.to_hbm(ctx.tdma, HbmTensor[...] | None)`; `src.to_hbm(ctx.tdma, out)` with an HBM
    tensor `out` writes the whole of `out` (its type gives the layout) and returns `out`,
    which then holds the new contents (PARAM-1 when `out` is a read-only parameter)."""
    if isinstance(dst, Poisoned):
        return dst
    if dst is not None:
        dst = into_hbm_view(src, dma, dst)
        if dst is None or isinstance(dst, Poisoned):
            return dst
    if not isinstance(dst, HbmTensorData):
        return _dma(src, dma, dst, "hbm")
    if not dst.writable:
        return refuse_call(refuse_write(dst.label or "?"), "to_hbm")
    spec = TensorSpec("hbm", (dst.type.dtype, dst.type.chip, dst.type.element))
    written = _dma(src, dma, spec, "hbm")
    if isinstance(written, HbmTensorData):
        dst.value = written.value  # the handle follows the tensor's latest version
        return dst
    return written


def make_view(src: DmTensor) -> DmTensorView:
    """`dm.view()`: the identity on data and type."""
    tracer = current()
    op = View.build(tracer.value, src=src.value, loc=location_of("view"))
    tracer.emit(op)
    return read_view(DmTensorData.handle(op.result))


def _pattern(pattern: Any) -> tuple[int, ...] | None:
    try:
        items = tuple(pattern)
    except TypeError:
        return None
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in items):
        return None
    return items


def shuffle(src: Any, dma: Any, dim: Any, pattern: Any, level: str, stage: str) -> Any:
    """Trace one shuffle; wrong arguments are TYPE-6 (CTX-1 for another engine). `dim` may be
    left out (`(ctx.tdma, pattern)`, v0.9's inferred `CHIP_DIM`): it is the pattern's length."""
    tracer = current()
    loc = location_of(stage)
    if pattern == () and not isinstance(dim, (int, type(None))) and _pattern(dim) is not None:
        dim, pattern = len(tuple(dim)), dim   # v0.9: DIM is read off the pattern's length
    items = _pattern(pattern)
    bad = None
    if stage == "hbm_cluster_shuffle":
        bad = Violation("SHUFFLE-3", "`hbm_cluster_shuffle` is not available: an HBM tensor has no Cluster level "
                                     "(clusters are chosen by `to_dm`), and the reference leaves it unimplemented",
                        help="move the tensor to DM and call `view().dm_cluster_shuffle(ctx.tdma, DIM, pattern)`")
    elif not isinstance(dma, TensorDma):
        code = "CTX-1" if type(dma).__name__ == "TuContext" else "TYPE-6"
        bad = Violation(code, f"`{stage}` runs on the Tensor DMA engine: pass ctx.tdma first",
                        help=f"`.{stage}(ctx.tdma, DIM, pattern)`")
    elif isinstance(dim, bool) or not isinstance(dim, int) or items is None:
        bad = Violation("TYPE-6", f"`{stage}` takes ctx.tdma, the int DIM and a list of ints (pattern[target] = "
                                  f"source), not {dim!r:.20}, {pattern!r:.40}", help=f"`.{stage}(ctx.tdma, 2, [1, 0])`")
    if bad is not None:
        return refuse_call(bad, stage)
    op = Shuffle.build(tracer.value, src=src.value, level=level, dim=dim, pattern=",".join(map(str, items)), loc=loc)
    tracer.emit(op)
    return (DmTensorData if op.result.type.kind == "dm" else HbmTensorData).handle(op.result)
