"""The tensors' data: the tensor types (`TensorSpec`, what `HbmTensor[...]` gives) and the
state of a traced tensor handle, below the operations on them.

A handle's methods are its operations' (`to_dm` is npu_opt.dma's, `to_spm` npu_opt.spm's,
...); the public classes (`HbmTensor`, `DmTensor`, the views) are assembled from the data
classes here with those methods in npu_opt.tensors, above the operations. An operation
imports the data class (`DmTensorData`) and makes a handle of the public class by
`DmTensorData.handle(value)`; `isinstance(x, DmTensorData)` holds for every DM tensor handle.
Only the types' own acts live here: `.new()` (a tensor of zeros, docs/views.md) and `.alloc()`
(a resident buffer, docs/parameters.md).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.errors import NpuOptError
from ir.mapping.nodes import Mapping
from ir.resident import Device as _Device, DmBuffer
from ir.rules.space import validate_type
from ir.types import DmType, HbmType, TrfType, VrfType
from ir.view_ops import NewTensor
from ir.vrf_ops import vrf_type_problem
from npu_opt.stagebase import location_of, refuse_call as _refuse
from npu_opt.trace import current

__all__ = ["Assembled", "TensorSpec", "HbmTensorData", "DmTensorData", "DmTensorViewData", "TrfTensorData",
           "VrfTensorData", "new_tensor", "alloc"]

# a data class -> the public class assembled from it (npu_opt.tensors)
_ASSEMBLED: dict[type, type] = {}


class Assembled:
    """A data class whose public class, the data with its operations' methods, is declared above
    the operations: `class DmTensor(..., DmTensorData, assembles=DmTensorData)`."""

    def __init_subclass__(cls, assembles: type | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if assembles is not None:
            _ASSEMBLED[assembles] = cls

    @classmethod
    def handle(cls, *args: Any, **kwargs: Any) -> Any:
        """An instance of the public class assembled from this data class."""
        return _ASSEMBLED[cls](*args, **kwargs)


# kind -> the tensor class's name, its IR type and the items of its subscript
_KINDS = {"hbm": ("HbmTensor", HbmType, ("dtype", "chip", "element")),
          "dm": ("DmTensor", DmType, ("dtype", "chip", "cluster", "slice", "element")),
          "trf": ("TrfTensor", TrfType, ("dtype", "chip", "cluster", "slice", "lane", "element")),
          "vrf": ("VrfTensor", VrfType, ("dtype", "chip", "cluster", "slice", "element"))}


@attrs.frozen
class TensorSpec:
    """A subscripted tensor type such as `DmTensor[bf16, Chip, Cluster, Slice, m("A")]`."""

    kind: str
    items: tuple[Any, ...]

    def __str__(self) -> str:
        return f"{_KINDS[self.kind][0]}[{', '.join(_item_text(x) for x in self.items)}]"

    def new(self) -> Any:
        """`HbmTensor[...].new()` / `DmTensor[...].new()`: a fresh tensor of zeros (docs/views.md)."""
        return new_tensor(self)

    def alloc(self, device: Any) -> Any:
        """`DmTensor[...].alloc(device)`: SRAM kept across launches on an `npu_opt.Device`, a
        `DmBuffer` to pass for a `DmTensor[...]` / `Mut[DmTensor[...]]` parameter (docs/parameters.md)."""
        return alloc(self, device)

    def resolve(self) -> HbmType | DmType | TrfType | VrfType | Violation:
        """The IR type, or a TYPE-6 violation when the subscript has the wrong shape."""
        label, cls, names = _KINDS[self.kind]
        if len(self.items) != len(names):
            return Violation("TYPE-6", f"{label}[...] takes {len(names)} items ({', '.join(names)}), got "
                             f"{len(self.items)}", help=f"write {label}[{', '.join(names)}]")
        dtype, *maps = self.items
        if not isinstance(dtype, DType):
            return Violation("TYPE-6", f"the first item of {label}[...] must be a dtype such as bf16 or i8, not "
                             f"{type(dtype).__name__}")
        for name, mp in zip(names[1:], maps):
            if not isinstance(mp, Mapping):
                return Violation("TYPE-6", f"the {name} level of {label}[...] must be a mapping built by m(), not "
                                 f"{type(mp).__name__}", help=f'wrap it: m("{mp}")' if isinstance(mp, str) else None)
        return cls(dtype, *maps)


def _item_text(x: Any) -> str:
    return f'm("{x}")' if isinstance(x, Mapping) else str(x)


class _TensorClass(Assembled):
    """What every tensor class shares: subscripting it gives its type (a `TensorSpec`; the
    `SpmTensor` of npu_opt.spm gives its own spec), and an instance is a traced value's handle."""

    KIND = ""

    def __class_getitem__(cls, items: Any) -> TensorSpec:
        if not isinstance(items, tuple):
            items = (items,)
        return TensorSpec(cls.KIND, items)

    def __init__(self, value: Any, *, writable: bool = True, label: str | None = None) -> None:
        self.value = value
        self.writable = writable  # False for a parameter not marked in-out (rule PARAM-1)
        self.label = label  # the parameter's name, for a tensor that is one

    @property
    def type(self) -> Any:
        return self.value.type

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.value}: {self.value.type}>"


class HbmTensorData(_TensorClass):
    """An HBM tensor handle's data (the public class: npu_opt.tensors.HbmTensor)."""

    KIND = "hbm"


class DmTensorData(_TensorClass):
    """A DM tensor handle's data (npu_opt.tensors.DmTensor)."""

    KIND = "dm"


class DmTensorViewData(_TensorClass):
    """A view of a DM tensor, what `begin` takes (npu_opt.tensors.DmTensorView)."""

    KIND = "dm"


class TrfTensorData(_TensorClass):
    """A TRF tensor handle's data (npu_opt.tensors.TrfTensor)."""

    KIND = "trf"


class VrfTensorData(_TensorClass):
    """A VRF tensor handle's data (npu_opt.tensors.VrfTensor)."""

    KIND = "vrf"


def new_tensor(spec: TensorSpec) -> Any:
    """`HbmTensor[...].new()` / `DmTensor[...].new()` / `TrfTensor[...].new()` /
    `VrfTensor[...].new()`: a tensor that reads as zeros."""
    t = spec.resolve()
    fault = t if isinstance(t, Violation) else validate_type(t, None) or vrf_type_problem(t)
    if fault is not None:
        return _refuse(fault, "new")
    tracer = current()
    op = NewTensor(result=tracer.value(t), loc=location_of("new"))
    tracer.emit(op)
    return {"hbm": HbmTensorData, "dm": DmTensorData, "trf": TrfTensorData, "vrf": VrfTensorData}[spec.kind].handle(op.result)


def alloc(spec: TensorSpec, device: Any) -> DmBuffer:
    """`DmTensor[...].alloc(device)`: a resident buffer of that type on `device`."""
    if spec.kind != "dm":
        raise NpuOptError(f"`alloc` allocates SRAM: call it on a DmTensor[...] type, not {spec}", code="USAGE")
    if not isinstance(device, _Device):
        raise NpuOptError(f"`alloc` takes the npu_opt.Device the buffer lives on, not {type(device).__name__}",
                          code="USAGE")
    t = spec.resolve()
    fault = t if isinstance(t, Violation) else validate_type(t, None)
    if fault is not None:
        raise NpuOptError(f"{spec} is not a DM tensor type: {fault.message}", code=fault.code)
    return DmBuffer(t, str(spec), device)
