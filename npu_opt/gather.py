"""`table.dma_gather_scaled(index, DmTensor[...])` and `dma_gather_unscaled`, traced into
`ir.gather_ops.Gather`; `data.dma_scatter(index, HbmTensor[...], key)` into `Scatter`
(docs/machine/dma.md "Gather", "Scatter")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ir.diagnostic import Violation
from ir.gather import gather_shape
from ir.gather_ops import Gather, Scatter
from ir.scatter import scatter_shape
from ir.mapping.nodes import Mapping
from ir.rules.space import validate_type
from npu_opt.params import refuse_write
from npu_opt.stagebase import Poisoned, location_of, mapping_argument_fault, refuse_call
from npu_opt.tensor_data import DmTensorData, HbmTensorData, TensorSpec
from npu_opt.trace import current
from npu_opt.views import dma_source

if TYPE_CHECKING:  # the public classes, assembled above this module (npu_opt.tensor_data)
    from npu_opt.tensors import DmTensor

__all__ = ["gather", "scatter", "emit_gather"]


def split_type_args(args: tuple, dst: Any, named: tuple) -> tuple[Any, tuple]:
    """(the destination type, the explicit mapping type arguments) of a call that takes the
    reference's type arguments positionally around a target type (rule 3): the one
    `TensorSpec` is the target, the rest fill `named` in order."""
    rest = []
    for a in args:
        if isinstance(a, TensorSpec) and dst is None:
            dst = a
        else:
            rest.append(a)
    filled = list(named)
    for i, a in enumerate(rest[:len(filled)]):
        filled[i] = a if filled[i] is None else filled[i]
    return dst, tuple(filled)


def _type_args_fault(stage: str, tensor: Any, checks: tuple) -> Violation | None:
    """TYPE-6 for the first explicit type argument (name, mapping, the level of `tensor` it
    names) that is not that level of the tensor."""
    for name, given, level in checks:
        bad = mapping_argument_fault(stage, name, given, getattr(tensor.value.type, level),
                                     f"the index's {level}")
        if bad is not None:
            return bad
    return None


def gather(table: Any, index: Any, dst: Any, scaled: bool, index_types: tuple = ()) -> Any:
    """Trace one gather; a wrong argument is TYPE-6 at the call."""
    stage = "dma_gather_scaled" if scaled else "dma_gather_unscaled"
    tracer = current()
    loc = location_of(stage)
    want, kind = (HbmTensorData, "an HbmTensor") if scaled else (DmTensorData, "a DmTensor")
    bad = None
    if not isinstance(index, want):
        where = "in HBM (a scaled index holds byte offsets)" if scaled else "in DM (stage it with `to_dm`)"
        bad = Violation("TYPE-6", f"the index of `{stage}` is {kind} {where}, not {type(index).__name__}",
                        help=f"`table.{stage}(index, DmTensor[...])`")
    elif not isinstance(dst, TensorSpec) or dst.kind != "dm":
        bad = Violation("TYPE-6", f"the destination of `{stage}` must be a DmTensor[...] type, not {dst!s:.60}",
                        help=f"`table.{stage}(index, DmTensor[dtype, Chip, Cluster, Slice, Element])`")
    bad = bad or _type_args_fault(stage, index, index_types)
    dst_type = bad or dst.resolve()
    if not isinstance(dst_type, Violation):
        dst_type = _outermost_key(gather_shape(table.value.type, index.value.type, dst_type), "table") or dst_type
    if isinstance(dst_type, Violation):
        return refuse_call(dst_type, stage)
    return emit_gather(Gather(src=table.value, index=index.value, scaled=scaled, result=tracer.value(dst_type),
                              loc=loc), stage)


def _outermost_key(shape: Any, what: str) -> Violation | None:
    """GATHER-3 / SCATTER-4 for a v0.6 call whose key is not its tensor's one outermost axis
    (the staged `gather` / `scatter` of v0.9 take any one consecutive region)."""
    if isinstance(shape, Violation) or (not shape.outer and len(shape.region) == 1 and not shape.splits):
        return None
    key = shape.key if what == "table" else shape.axis
    payload = ", ".join(a for a, _ in shape.outer + shape.payload) or "1"
    code, call = ("GATHER-3", f"table.gather(m(\"{key}\"), m(\"{payload}\"))") if what == "table" else \
        ("SCATTER-4", f"out.view_mut().scatter(m(\"{key}\"), m(\"{payload}\"))")
    return Violation(code, f"the v0.6 call selects the {what}'s outermost axis; here the index selects {key}, "
                           f"which is {'not one axis' if len(shape.region) != 1 else 'a digit of an axis' if shape.splits else 'not the outermost'}",
                     help=f"state the indexed axis with the staged form, `{call}`")


def emit_gather(op: Gather, stage: str) -> DmTensor:
    """Emit a traced gather (the v0.6 call or a staged plan's `to_dm`); a destination that
    breaks the DMA layout rules is GATHER-4 at its line."""
    current().emit(op, refused=validate_type(op.result.type, None, code="GATHER-4"), stage=stage)
    return DmTensorData.handle(op.result)


def scatter(data: Any, index: Any, output: Any, key: Any, scaled: bool = True, element2: Any = None,
            element3: Any = None) -> Any:
    """Trace one scatter into a new HBM tensor of type `output`, or into the existing HBM
    tensor `output` (a `Mut` parameter or a `new()` tensor: the rows no index names keep
    their values); returns that tensor."""
    stage = "dma_scatter" if scaled else "dma_scatter_unscaled"
    tracer = current()
    loc = location_of(stage)
    bad = None
    if not scaled:
        bad = Violation("SCATTER-5", "`dma_scatter_unscaled` (an index in DM) is not available: the reference "
                                     "declares it without an implementation",
                        help="keep the byte-offset index in HBM and call `dma_scatter(index, HbmTensor[...], key)`")
    elif not isinstance(index, HbmTensorData):
        bad = Violation("TYPE-6", f"the index of `{stage}` is an HbmTensor of byte offsets, not "
                                  f"{type(index).__name__}", help=f"`data.{stage}(index, HbmTensor[...], m(\"K\"))`")
    elif (bad := _type_args_fault(stage, index, (("element3", element3, "element"),))) is not None:
        pass
    elif element2 is not None and (bad := mapping_argument_fault(
            stage, "element2", element2, _output_element(output), "the output's element")) is not None:
        pass
    elif isinstance(output, HbmTensorData):
        bad = isinstance(key, Mapping) and _outermost_key(
            scatter_shape(data.type, key, index.value.type, output.value.type), "output")
        if not bad:
            return _scatter_into(data, index, output, key, loc)
    elif not isinstance(output, TensorSpec) or output.kind != "hbm":
        bad = Violation("TYPE-6", f"the output of `{stage}` is the HbmTensor[...] type it creates, not "
                                  f"{output!s:.60}", help=f"`data.{stage}(index, HbmTensor[...], m(\"K\"))`")
    elif not isinstance(key, Mapping):
        bad = Violation("TYPE-6", f"the key of `{stage}` is a mapping m(\"...\") of the data's key axes, not {key!r:.40}")
    out_type = bad or output.resolve()
    if not isinstance(out_type, Violation):
        out_type = _outermost_key(scatter_shape(data.type, key, index.value.type, out_type), "output") or out_type
    if isinstance(out_type, Violation):
        return refuse_call(out_type, stage)
    op = Scatter(src=dma_source(data), index=index.value, key=key, result=tracer.value(out_type), loc=loc)
    tracer.emit(op)
    return HbmTensorData.handle(op.result)


def _output_element(output: Any) -> Any:
    """The HBM element of a scatter's output: an HBM tensor's, or the `HbmTensor[...]` type's."""
    if isinstance(output, HbmTensorData):
        return output.value.type.element
    t = output.resolve() if isinstance(output, TensorSpec) else None
    return getattr(t, "element", None)


def _scatter_into(data: Any, index: Any, output: Any, key: Any, loc: Any, page: Any = None) -> Any:
    """`data.dma_scatter(index, out, key)` with an HBM tensor `out`: its new contents are the
    old ones with the indexed rows replaced (PARAM-1 when `out` is a read-only parameter).
    `page` = (its type, first cell, write view) for a scatter into one page of `out`
    (`ir.scatter.page_of`), maybe at a runtime start (the view's)."""
    tracer = current()
    bad = None
    if not output.writable:
        bad = refuse_write(output.label or "?")
    elif not isinstance(key, Mapping):
        bad = Violation("TYPE-6", f"the key of `dma_scatter` is a mapping m(\"...\") of the data's key axes, not {key!r:.40}")
    if bad is not None:
        tracer.refuse(bad, loc, "dma_scatter")
        return Poisoned("dma_scatter")
    at = {}
    if page is not None:
        start, stride, limit = page[2]._runtime or (None, None, None)
        at = dict(view=page[0], offset=page[1], start=start, start_stride=stride, start_limit=limit)
    op = Scatter(src=dma_source(data), index=index.value, key=key, into=output.value,   # a runtime tile too
                 result=tracer.value(output.value.type), loc=loc, **at)
    if tracer.emit(op):
        output.value = op.result  # the handle follows the tensor's latest version
    return output
