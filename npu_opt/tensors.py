"""Tensor types (`HbmTensor[...]`, `DmTensor[...]`, `TrfTensor[...]`) and traced tensor handles.

Subscripting a tensor class gives a `TensorSpec`: the dtype and level mappings, kept as
written and validated lazily at the first stage or annotation that uses them, so the
diagnostic carries that stage's rule ID (docs/machine/index.md). Inside a trace, instances
of the same classes are handles on traced values and offer the DMA methods.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.mapping.nodes import Mapping
from ir.types import DmType, HbmType, TrfType, VrfType

__all__ = ["TensorSpec", "HbmTensor", "DmTensor", "DmTensorView", "TrfTensor", "VrfTensor"]

_ARITY = {"hbm": ("dtype", "chip", "element"),
          "dm": ("dtype", "chip", "cluster", "slice", "element"),
          "trf": ("dtype", "chip", "cluster", "slice", "lane", "element"),
          "vrf": ("dtype", "chip", "cluster", "slice", "element")}
_CLASS_NAME = {"hbm": "HbmTensor", "dm": "DmTensor", "trf": "TrfTensor", "vrf": "VrfTensor"}


@attrs.frozen
class TensorSpec:
    """A subscripted tensor type such as `DmTensor[bf16, Chip, Cluster, Slice, m("A")]`."""

    kind: str
    items: tuple[Any, ...]

    def __str__(self) -> str:
        return f"{_CLASS_NAME[self.kind]}[{', '.join(_item_text(x) for x in self.items)}]"

    def resolve(self) -> HbmType | DmType | TrfType | VrfType | Violation:
        """The IR type, or a TYPE-6 violation when the subscript has the wrong shape."""
        names = _ARITY[self.kind]
        if len(self.items) != len(names):
            return Violation("TYPE-6", f"{_CLASS_NAME[self.kind]}[...] takes {len(names)} items "
                             f"({', '.join(names)}), got {len(self.items)}",
                             help=f"write {_CLASS_NAME[self.kind]}[{', '.join(names)}]")
        dtype, *maps = self.items
        if not isinstance(dtype, DType):
            return Violation("TYPE-6", f"the first item of {_CLASS_NAME[self.kind]}[...] must be a dtype "
                             f"such as bf16 or i8, not {type(dtype).__name__}")
        for name, mp in zip(names[1:], maps):
            if not isinstance(mp, Mapping):
                return Violation("TYPE-6", f"the {name} level of {_CLASS_NAME[self.kind]}[...] must be a "
                                 f"mapping built by m(), not {type(mp).__name__}",
                                 help=f'wrap it: m("{mp}")' if isinstance(mp, str) else None)
        cls = {"hbm": HbmType, "dm": DmType, "trf": TrfType, "vrf": VrfType}[self.kind]
        return cls(dtype, *maps)


def _item_text(x: Any) -> str:
    return f'm("{x}")' if isinstance(x, Mapping) else str(x)


class _TensorClass:
    """Shared subscript behaviour of the three tensor classes."""

    KIND = ""

    def __class_getitem__(cls, items: Any) -> TensorSpec:
        if not isinstance(items, tuple):
            items = (items,)
        return TensorSpec(cls.KIND, items)

    def __init__(self, value: Any) -> None:
        self.value = value

    @property
    def type(self) -> Any:
        return self.value.type

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.value}: {self.value.type}>"


class HbmTensor(_TensorClass):
    """An HBM tensor: `HbmTensor[dtype, Chip, Element]`; in a trace, offers `to_dm`, `to_hbm`."""

    KIND = "hbm"

    def to_dm(self, dma: Any, dst: Any = None) -> Any:
        """HBM -> DM Tensor DMA into the layout `dst` (a `DmTensor[...]`)."""
        from npu_opt.dma import dma_to_dm

        return dma_to_dm(self, dma, dst)

    def to_hbm(self, dma: Any, dst: Any = None) -> Any:
        """HBM -> HBM Tensor DMA (default layout: every axis whole, docs/porting.md)."""
        from npu_opt.dma import dma_to_hbm

        return dma_to_hbm(self, dma, dst)


class DmTensor(_TensorClass):
    """A DM tensor: `DmTensor[dtype, Chip, Cluster, Slice, Element]`."""

    KIND = "dm"

    def view(self) -> DmTensorView:
        """A read view of this tensor, the argument of `begin`."""
        from npu_opt.dma import make_view

        return make_view(self)

    def to_hbm(self, dma: Any, dst: Any = None) -> Any:
        """DM -> HBM Tensor DMA (default layout: every axis whole, docs/porting.md)."""
        from npu_opt.dma import dma_to_hbm

        return dma_to_hbm(self, dma, dst)

    def to_dm(self, dma: Any, dst: Any = None) -> Any:
        """DM -> DM Tensor DMA into the layout `dst`."""
        from npu_opt.dma import dma_to_dm

        return dma_to_dm(self, dma, dst)


class DmTensorView(_TensorClass):
    """A view of a DM tensor; pass it to `ctx.main.begin` / `ctx.sub.begin`."""

    KIND = "dm"


class TrfTensor(_TensorClass):
    """A TRF tensor: `TrfTensor[dtype, Chip, Cluster, Slice, Lane, Element]`."""

    KIND = "trf"


class VrfTensor(_TensorClass):
    """A VRF tensor: `VrfTensor[dtype, Chip, Cluster, Slice, Element]` (i32 or f32), made by
    `.to_vrf(element)`; pass it as the operand of `vector_fxp`, `vector_clip` or
    `vector_fp_binary`."""

    KIND = "vrf"
