"""Resident DM parameters (`DmTensor[...]` / `Mut[DmTensor[...]]`, docs/parameters.md).

A kernel parameter may be a DM tensor that lives across launches (the reference's
`DmTensor::alloc(&device)?` passed as `&DmTensor` / `&mut DmTensor`). Its host form,
which `DmBuffer.write` / `read` take and give, is the host array of the HBM tensor whose
element is the four DM levels side by side, `m![Chip, Cluster, Slice, Element]`: one
dimension per top-level term of each level in that order, padding left out
(`ir.host_layout`). Both executing backends move a resident buffer through that HBM
type, so they share one conversion.

Placement (the rule the VISA signature records as `at N`): resident parameters take
the lowest DM byte addresses of every slice, in parameter order, each at the next
multiple of 8 after the one before; they stay live for the whole kernel, so no
temporary is placed over them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ir import host_layout
from ir.errors import NpuOptError
from ir.mapping.nodes import IDENTITY, pair_all
from ir.types import DmType, HbmType, same_layout
from ir.words import a_an

__all__ = ["host_type", "element_bytes", "placements", "ALIGN", "Device", "DmBuffer", "check_resident"]

ALIGN = 8
"""Resident parameters start at multiples of 8 bytes (a DM write's alignment)."""


def host_type(t: DmType) -> HbmType:
    """The HBM type whose host array is the host form of a resident DM tensor of type `t`."""
    return HbmType(t.dtype, IDENTITY, pair_all((t.chip, t.cluster, t.slice, t.element)))


def element_bytes(t: DmType) -> int:
    """Bytes one slice holds of a DM tensor of type `t` (the element, padding included)."""
    return -(-t.element.size * t.dtype.bits // 8)


def placements(types: Iterable[DmType]) -> list[int]:
    """The DM byte address of each resident parameter, in parameter order."""
    out, at = [], 0
    for t in types:
        out.append(at)
        at += -(-element_bytes(t) // ALIGN) * ALIGN
    return out


class Device:
    """`npu_opt.Device(target)`: the chips a process opened (the reference's `Device`), here
    the target that resident buffers are allocated on and launches run on."""

    def __init__(self, target: str = "rngd") -> None:
        if not isinstance(target, str):
            raise NpuOptError(f"Device(target) takes a target name or file, not {type(target).__name__}",
                              code="USAGE")
        self.target = target

    def __repr__(self) -> str:
        return f"<npu_opt.Device {self.target}>"


class DmBuffer:
    """SRAM kept across launches: what `DmTensor[...].alloc(device)` returns. Pass it to
    `npu_opt.run` for a `DmTensor[...]` or `Mut[DmTensor[...]]` parameter; a launch that
    writes it updates it when the launch completes. `write` / `read` move its contents from
    and to the host (the host form of the module docstring). It starts zero (the reference
    leaves new SRAM uninitialized; npu-opt zero-fills it so every run is reproducible)."""

    def __init__(self, t: DmType, spec_text: str, device: Device) -> None:
        self.type = t
        self.spec_text = spec_text
        self.device = device
        self.shape = host_layout.host_shape(host_type(t).element)
        self._data = np.zeros(self.shape, t.dtype.host_dtype)

    def __repr__(self) -> str:
        return f"<DmBuffer {self.spec_text} on {self.device.target}>"

    def write(self, array: Any) -> None:
        """Replace the contents with `array` (the host form: shape `self.shape`, a host dtype of the element type)."""
        d = self.type.dtype
        host_layout.refuse_masked(self.spec_text, array)
        if not isinstance(array, np.ndarray) or array.dtype not in d.host_dtypes or array.shape != self.shape:
            got = f"{array.dtype} array of shape {array.shape}" if isinstance(array, np.ndarray) else type(array).__name__
            raise NpuOptError(f"{self.spec_text} holds {d} of host shape {self.shape}; write "
                              f"{a_an(' or '.join(str(x) for x in d.host_dtypes))} array of that shape, not {a_an(got)}",
                              code="USAGE")
        data = d.host_values(array)
        if data.dtype != d.host_dtype:  # bit patterns of a small float: its ml_dtypes form
            data = data.view(d.host_dtype)
        self._data = np.array(data, copy=True)

    def copy(self) -> DmBuffer:
        """A second buffer on the same device holding the same contents."""
        twin = DmBuffer(self.type, self.spec_text, self.device)
        twin._data = np.array(self._data, copy=True)
        return twin

    def read(self) -> np.ndarray:
        """A copy of the contents, in the host form."""
        return np.array(self._data, copy=True)

    def host_array(self) -> np.ndarray:
        """The contents for a launch (the backends' argument; not a copy)."""
        return self._data

    def store(self, array: np.ndarray) -> None:
        """The contents a completed launch left (a backend's call)."""
        self._data = np.array(array, copy=True)


def check_resident(params: Sequence[tuple[str, Any, bool]], args: Sequence[Any], target: str | None,
                   name_of: Callable[[str], str] = str) -> None:
    """The launch rules of resident parameters, before anything runs: RESIDENT-1 (the
    argument is a `DmBuffer` of the parameter's type), RESIDENT-2 (a buffer bound to a
    writable parameter is bound to no other parameter), RESIDENT-3 (it lives on the
    launch's target, `target` the launch's target name and `name_of` the name of a
    device's target)."""
    seen: dict[int, tuple[str, bool]] = {}
    for (name, t, inout), arg in zip(params, args):
        if t.kind != "dm":
            if isinstance(arg, DmBuffer):
                raise NpuOptError(f"parameter `{name}` is an HBM tensor; a resident DmBuffer binds only a "
                                  "DmTensor[...] parameter", code="RESIDENT-1")
            continue
        spec = "Mut[DmTensor[...]]" if inout else "DmTensor[...]"
        if not isinstance(arg, DmBuffer):
            raise NpuOptError(f"parameter `{name}` is a resident {spec}: pass the buffer "
                              f"DmTensor[...].alloc(device) returned, not {type(arg).__name__}", code="RESIDENT-1")
        if not same_layout(arg.type, t):
            raise NpuOptError(f"parameter `{name}` is {t}; the buffer passed for it was allocated as "
                              f"{arg.type} ({arg.spec_text})", code="RESIDENT-1")
        if target is not None and name_of(arg.device.target) != target:
            raise NpuOptError(f"the buffer passed for `{name}` lives on a device of target "
                              f"{arg.device.target!r}; this launch runs on {target!r}", code="RESIDENT-3")
        other = seen.get(id(arg))
        if other is not None and (inout or other[1]):
            raise NpuOptError(f"one resident buffer is bound to `{other[0]}` and to `{name}`, and "
                              f"`{name if inout else other[0]}` writes it", code="RESIDENT-2")
        seen[id(arg)] = (name, inout)
