"""Views, tiles and allocation of HBM and DM tensors, traced into `ir.view_ops` (docs/views.md).

`t.view()` is a read view, `t.view_mut()` a write view; both keep the tensor's addresses
and narrow what they name: `tile` (element level), `chip_tile`, `cluster_tile` and
`slice_tile` (those levels), `pad` / `unpad` (one outermost padding of the element level)
and `reshape` (every level relabelled, sizes kept). A read view copies out with
`to_dm` / `to_hbm` (into a fresh tensor) or `to_dm_view` / `to_hbm_view` (into a write
view); the write replaces the written tensor's value, so later uses of the tensor see it.
Tile starts are Python ints: a loop over tiles unrolls while tracing (VIEW-8); a `usize`
runtime scalar is a start a Tensor DMA or a `begin` takes (npu_opt.runtime_scalars). A TRF or
VRF tensor is relabelled by `rf_reshape` (the reference's `unsafe { v.reshape::<...>() }`).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.mapping.nodes import Mapping
from ir.rf_reshape import RfReshape
from ir.rules.views import check_pad, check_reshape, tile_offset
from ir.types import HbmType
from ir.view_ops import ToView, Window
from npu_opt.engines import TensorDma, _check_engine, check_sub
from npu_opt.method_arguments import checked_arguments
from npu_opt.params import ParamSpec
from npu_opt.runtime_tiles import refuse_runtime_read, runtime_retile
from npu_opt.scalars import plain_number
from npu_opt.stagebase import Poisoned, location_of, refuse_call as _refuse
from npu_opt.tensor_data import Assembled, DmTensorViewData, HbmTensorData, TensorSpec
from npu_opt.trace import current
from ir.words import a_an

__all__ = ["dma_source", "read_view", "write_view", "HbmTensorViewData", "DmReadViewData", "HbmTensorViewMutData",
           "DmTensorViewMutData", "rf_reshape"]

_LEVELS = {"hbm": ("chip", "element"), "dm": ("chip", "cluster", "slice", "element"),
           "trf": ("chip", "cluster", "slice", "lane", "element"), "vrf": ("chip", "cluster", "slice", "element")}


@checked_arguments
class _View(Assembled):
    """A view: the tensor handle it borrows, the base value when made, its type and cell
    offsets per level (relative to the base's positions), and its type right after its
    last `reshape` (None when never reshaped: the window records it, docs/views.md)."""

    WRITABLE = False

    def __init__(self, base: Any, type_: Any, offsets: tuple[int, ...], reshaped: Any = None,
                 runtime: Any = None) -> None:
        self._base = base
        self._base_value = base.value
        self._type = type_
        self._offsets = offsets
        self._reshaped = reshaped
        self._runtime = runtime  # (usize scalar, cells per step, largest start): npu_opt.runtime_scalars
        self._window: Any = None
        self._runtime_window: Any = None

    @property
    def type(self) -> Any:
        return self._type

    def _level_names(self) -> tuple[str, ...]:
        return _LEVELS[self._type.kind]

    def _derive(self, type_: Any, offsets: tuple[int, ...], reshaped: Any = None, runtime: Any = None) -> Any:
        return type(self)(self._base, type_, offsets, self._reshaped if reshaped is None else reshaped,
                          self._runtime if runtime is None else runtime)

    def _retile(self, method: str, level: str, index: Any, length: Any, mapping: Any, start: Any) -> Any:
        names = self._level_names()
        if level not in names:
            return _refuse(Violation("VIEW-9", f"`{method}` tiles a DM view; an HBM view has no {level} level"),
                           method)
        if not isinstance(index, Mapping) or not isinstance(mapping, Mapping):
            return _refuse(Violation("TYPE-6", f"`{method}` takes (index mapping, length, tile mapping, start)",
                                     help=f'e.g. `.{method}(m("B"), 4, m("B = 4 # 8"), 0)`'), method)
        k = names.index(level)
        if getattr(start, "RUNTIME_SCALAR", False):
            return runtime_retile(self, method, level, index, plain_number(length), mapping, start)
        length, start = plain_number(length), plain_number(start)
        offset = tile_offset(getattr(self._type, level), index, length, mapping, start, self.WRITABLE)
        if isinstance(offset, Violation):
            return _refuse(offset, method)
        offsets = self._offsets[:k] + (self._offsets[k] + offset,) + self._offsets[k + 1:]
        return self._derive(_with_level(self._type, level, mapping), offsets)

    def tile(self, index: Any, length: Any, element: Any, start: Any) -> Any:
        """The tile of the element level: `v.tile(m("B"), 4, m("B = 4 # 8"), start)`."""
        return self._retile("tile", "element", index, length, element, start)

    def chip_tile(self, index: Any, length: Any, chip: Any, start: Any) -> Any:
        """The tile of the Chip level."""
        return self._retile("chip_tile", "chip", index, length, chip, start)

    def cluster_tile(self, index: Any, length: Any, cluster: Any, start: Any) -> Any:
        """The tile of the Cluster level (DM views)."""
        return self._retile("cluster_tile", "cluster", index, length, cluster, start)

    def slice_tile(self, index: Any, length: Any, slice_: Any, start: Any) -> Any:
        """The tile of the Slice level (DM views)."""
        return self._retile("slice_tile", "slice", index, length, slice_, start)

    def reshape(self, *levels: Any) -> Any:
        """Relabel every level (HBM: chip, element; DM: chip, cluster, slice, element), sizes kept.
        Unsafe in the reference's sense: the cells keep their addresses, so only regroupings
        that keep the order of the cells mean what they say (docs/views.md)."""
        names = self._level_names()
        if len(levels) == 1 and isinstance(levels[0], ParamSpec):   # HbmTensorView[...] / HbmTensorViewMut[...]
            target = levels[0]
            if target.form == "tensor" or (target.form == "view_mut") != self.WRITABLE:
                want = "HbmTensorViewMut" if self.WRITABLE else "HbmTensorView"
                return _refuse(Violation("TYPE-6", f"`reshape` keeps the kind of view: {target} is not {a_an(want)}[...] "
                                                   "type", help=f"pass {want}[...] (or the tensor type)"), "reshape")
            levels = (target.tensor,)
        if len(levels) == 1 and isinstance(levels[0], TensorSpec):  # the whole target type, as to_dm takes
            levels = _spec_levels(levels[0], self._type, len(names))
            if isinstance(levels, Violation):
                return _refuse(levels, "reshape")
        if len(levels) != len(names) or not all(isinstance(x, Mapping) for x in levels):
            return _refuse(Violation("TYPE-6", f"`reshape` of this view takes {len(names)} mappings "
                                               f"({', '.join(names)}) or the target type"), "reshape")
        bad = check_reshape(names, self._type.levels(), levels)
        if bad is not None:
            return _refuse(bad, "reshape")
        out = self._type
        for name, mp in zip(names, levels):
            out = _with_level(out, name, mp)
        return self._derive(out, self._offsets, reshaped=out)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._base_value}: {self._type} at {self._offsets}>"


def _spec_levels(spec: TensorSpec, current_type: Any, count: int) -> tuple[Any, ...] | Violation:
    """The level mappings of a target type given to `reshape`: a tensor type of the same
    kind and dtype (a reshape relabels cells, it never converts them)."""
    resolved = spec.resolve()
    if isinstance(resolved, Violation):
        return resolved
    if type(resolved) is not type(current_type):
        return Violation("TYPE-6", f"`reshape` keeps the kind of tensor: {spec} is not {a_an(current_type.kind)} type")
    if resolved.dtype != current_type.dtype:
        return Violation("TYPE-6", f"`reshape` keeps the element type {current_type.dtype}; {spec} has "
                                   f"{resolved.dtype}", help="cast the values instead (a cast stage)")
    return tuple(spec.items[1:1 + count])


def _with_level(t: Any, level: str, mapping: Mapping) -> Any:
    return attrs.evolve(t, **{level: mapping})


@checked_arguments
class _ReadMixin:
    """What only a read view offers: `pad` / `unpad` and the copies out."""

    def _repad(self, method: str, element: Any, unpad: bool) -> Any:
        if not isinstance(element, Mapping):
            return _refuse(Violation("TYPE-6", f"`{method}` takes the new element mapping, built by m()"), method)
        bad = check_pad(self._type.element, element, unpad)
        if bad is not None:
            return _refuse(bad, method)
        return self._derive(_with_level(self._type, "element", element), self._offsets)

    def view(self) -> Any:
        """This read view itself: the reference's `t.reshape().view()` and a view parameter's
        `.view()` spell the same view."""
        return self

    def pad(self, element: Any) -> Any:
        """The same cells inside a wider element, one outermost padding: `m("A, B")` as `m("A # 128, B")`."""
        return self._repad("pad", element, unpad=False)

    def unpad(self, element: Any) -> Any:
        """The live cells of a padded element alone: the inverse of `pad`."""
        return self._repad("unpad", element, unpad=True)

    @property
    def value(self: Any) -> Any:
        """The IR value of the view: the base itself, or a `window` of it (a runtime-tiled
        view read this way is RUNTIME-2: only a DMA, `to_spm`, a redistribution, a scatter or a `begin` reads
        it, through `read_value`)."""
        if self._runtime is not None:
            refuse_runtime_read("this reader")
        if self._offsets == (0,) * len(self._offsets) and self._type == self._base_value.type:
            return self._base_value
        if self._window is None:
            self._window = self._emit_window(None)
        return self._window

    def read_value(self: Any) -> Any:
        """The IR value a Tensor DMA, a redistribution or a stream's `begin` reads: `value`, or
        the `window` at the runtime start."""
        if self._runtime is None:
            return self.value
        if self._runtime_window is None:
            self._runtime_window = self._emit_window(self._runtime)
        return self._runtime_window

    def _emit_window(self: Any, runtime: Any) -> Any:
        start, stride, limit = runtime or (None, None, None)
        tracer = current()
        op = Window(src=self._base_value, start=start, offset=self._offsets, reshaped=self._reshaped,
                    start_stride=stride, start_limit=limit, result=tracer.value(self._type), loc=location_of("view"))
        tracer.emit(op)
        return op.result

    def to_hbm_view(self, dma: Any, dst: Any) -> None:
        """Tensor DMA into the HBM write view `dst` (`t.view_mut()` or a tile of it)."""
        _copy_into(self, dma, dst, "hbm", "to_hbm_view")

    def to_dm_view(self, dma: Any, dst: Any) -> None:
        """Tensor DMA into the DM write view `dst`."""
        _copy_into(self, dma, dst, "dm", "to_dm_view")

    def to_dm_view_pcopy(self, sub: Any, dst: Any) -> None:
        """The parallel copy (Sub context) into the DM write view `dst`."""
        bad = check_sub(sub, "to_dm_view_pcopy")
        if bad is not None:
            _refuse(bad, "to_dm_view_pcopy")
            return
        _copy_into(self, None, dst, "dm", "to_dm_view_pcopy")


def destination_fault(dst: Any, kind: str, method: str) -> Violation | None:
    """VIEW-4 / VIEW-9 when `dst`, the destination of `method`, is not a write view of a `kind` tensor."""
    if isinstance(dst, _View) and not dst.WRITABLE:
        return Violation("VIEW-4", f"the destination of `{method}` is a read-only view",
                         help="write through `t.view_mut()` (or a tile of it)")
    if not isinstance(dst, _View) or dst.type.kind != kind:
        want = "HbmTensorViewMut" if kind == "hbm" else "DmTensorViewMut"
        return Violation("VIEW-9", f"the destination of `{method}` must be {a_an(want)}, not {type(dst).__name__}",
                         help="pass `t.view_mut()` (or a tile of it)")
    return None


def _copy_into(src: Any, dma: Any, dst: Any, kind: str, method: str) -> None:
    bad = None if dma is None else _check_engine(dma, method)  # None: a parallel copy, checked
    if bad is None and kind == "dm" and type(dma).__name__ == "PcieDma":
        bad = Violation("CTX-1", f"`{method}` writes DM; the PCIe DMA (ctx.pdma) moves HBM -> HBM only",
                        help=f"pass ctx.tdma: `.{method}(ctx.tdma, ...)`")
    if bad is None and isinstance(dst, Poisoned):
        return
    bad = bad or destination_fault(dst, kind, method)
    if bad is not None:
        _refuse(bad, method)
        return
    tracer = current()
    start, stride, limit = dst._runtime or (None, None, None)
    op = ToView.build(tracer.value, src=dma_source(src), into=dst._base.value, start=start, view=dst.type,
                      offset=dst._offsets, start_stride=stride, start_limit=limit, loc=location_of(method))
    tracer.emit(op)
    dst._base.value = op.result


# The views' data; the public classes (npu_opt.tensors) add their operations' methods.
class HbmTensorViewData(_ReadMixin, _View):
    """A read view of an HBM tensor (npu_opt.tensors.HbmTensorView)."""


class DmReadViewData(_ReadMixin, _View, DmTensorViewData):
    """A read view of a DM tensor (npu_opt.tensors.DmReadView)."""


@checked_arguments
class HbmTensorViewMutData(_View):
    """A write view of an HBM tensor (npu_opt.tensors.HbmTensorViewMut)."""

    WRITABLE = True

    def view_mut(self) -> Any:
        """This write view itself (a `HbmTensorViewMut[...]` parameter's `.view_mut()`)."""
        return self


class DmTensorViewMutData(_View):
    """A write view of a DM tensor (npu_opt.tensors.DmTensorViewMut)."""

    WRITABLE = True


def into_hbm_view(src: Any, dma: Any, dst: Any) -> Any:
    """`src.to_hbm(dma, dst)` with an HBM view `dst`: a whole view stands for its tensor (returned,
    so the caller writes it); a write view of part of it is a `to_hbm_view` (None returned)."""
    if not isinstance(dst, _View) or dst.type.kind != "hbm":
        return dst
    if dst._offsets == (0,) * len(dst._offsets) and dst.type == dst._base.type and dst._runtime is None:
        return dst._base
    if isinstance(src, HbmTensorData):
        src = read_view(src)
    _copy_into(src, dma, dst, "hbm", "to_hbm")
    return None


def dma_source(src: Any) -> Any:
    """The IR value a Tensor DMA copies from `src` (a tensor or a view, maybe runtime-tiled)."""
    return src.read_value() if isinstance(src, _ReadMixin) else src.value


def read_view(t: Any) -> Any:
    """`t.view()` of an HBM or DM tensor handle."""
    cls = HbmTensorViewData if isinstance(t.type, HbmType) else DmReadViewData
    return cls.handle(t, t.type, (0,) * len(t.type.levels()))


def write_view(t: Any) -> Any:
    """`t.view_mut()` of an HBM or DM tensor handle."""
    cls = HbmTensorViewMutData if isinstance(t.type, HbmType) else DmTensorViewMutData
    return cls.handle(t, t.type, (0,) * len(t.type.levels()))


def commit_view(stage: Any, loc: Any, dst: Any, commit: Any) -> None:
    """`.commit_view(dst)`: commit the stream into the DM write view `dst` (a tile of an
    existing tensor). Traced as a `commit` into the view's element (`commit`, the stage's own,
    npu_opt.stages), then a copy of the committed tensor into the view."""
    if isinstance(dst, Poisoned):
        return None
    if not isinstance(dst, _View) or not dst.WRITABLE or dst.type.kind != "dm":
        code = "VIEW-4" if isinstance(dst, _View) and not dst.WRITABLE else "VIEW-9"
        current().refuse(Violation(code, f"`commit_view` writes a DM write view, not {type(dst).__name__}",
                                   help="pass `t.view_mut()` of a DM tensor (or a tile of it)"), loc, "commit_view")
        return None
    committed = commit(stage, loc, dst.type.element)
    if isinstance(committed, Poisoned):
        return None
    _copy_into(read_view(committed), TensorDma(), dst, "dm", "commit_view")
    return None


def _rf_target(tensor: Any, levels: tuple[Any, ...]) -> Any:
    """The target type of `reshape(*levels)`, or a TYPE-6 violation."""
    t = tensor.value.type
    if len(levels) == 1 and isinstance(levels[0], TensorSpec):
        return levels[0].resolve()
    names = _LEVELS[t.kind]
    if len(levels) == len(names) and all(isinstance(x, Mapping) for x in levels):
        return type(t)(t.dtype, *levels)
    cls = "TrfTensor" if t.kind == "trf" else "VrfTensor"
    return Violation("TYPE-6", f"`reshape` of {a_an(cls)} takes the target type {cls}[...] or its {len(names)} level "
                               f"mappings ({', '.join(names)})", help=f"e.g. `.reshape({cls}[...])`")


def rf_reshape(tensor: Any, levels: tuple[Any, ...]) -> Any:
    """`v.reshape(VrfTensor[dtype, chip, cluster, slice, element])`, or the level mappings
    alone, `v.reshape(chip, cluster, slice, element)` (a TRF tensor adds its lane before the
    element): the register-file tensor `tensor` under the target type `levels` give. The
    words stay where they are; the rules are the traced op's (`ir.rf_reshape`)."""
    loc = location_of("reshape")
    tracer = current()
    if isinstance(tensor.value, Poisoned) or tracer.is_poisoned(tensor.value):
        return Poisoned("reshape")
    target = _rf_target(tensor, levels)
    if isinstance(target, Violation):
        return _refuse(target, "reshape")
    op = RfReshape.build(tracer.value, input=tensor.value, to=target, loc=loc)
    if not tracer.emit(op):  # refused: later uses of it are silent
        return Poisoned("reshape")
    return type(tensor)(op.result)
