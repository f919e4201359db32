"""Host arrays in and out of the interpreter (docs/testing.md, docs/numerics.md), as HBM bytes.

A parameter `hbm[D, "Chip", "Element"]` is a C-order numpy array with one dimension per
top-level term of its element mapping, padding left out (`ir.host_layout`; `"1"` is (1,)); floats come as their `ml_dtypes` /
`float32` host form or as unsigned bit patterns, integers in their host dtype (i4 as
int8 holding -8..7). Its HBM tensor is the element's little-endian byte image, one copy
per chip position. Results come back in the host forms (small floats as `ml_dtypes`).

Resident DM parameters (ir/resident.py): the launch's DM holds each one's bytes at its
signature address (`at`) before the first record runs, and the final contents of a written
one are read back from there after the last. The host side hands a resident buffer over as
the HBM bytes of its host type (`ir.resident.host_type`): the four DM levels side by side, so
the bytes of (chip c, cluster k, slice s) are the `size`-byte run at `((c K + k) S + s) size`.
"""

from __future__ import annotations

from typing import Any, Sequence

import attrs
import numpy as np

from ir import convert as cv
from ir.dtypes import DType
from ir.errors import NpuOptError
from ir import host_layout
from ir.host_layout import host_shape
from ir.resident import host_type
from ir.runtime_types import host_scalar
from ir.topology import accepted_host_shapes, chip_host_dims, padded_chip_note, unequal_chip_copies
from visa.interp.dma import DmTensor, live_parts, tensor_bytes
from visa.interp.errors import check
from visa.interp.memory import Memory
from visa.interp.values import from_bytes, pad_mask, to_bytes
from ir.words import a_an

__all__ = ["host_shape", "to_hbm", "from_hbm", "check_count", "as_hbm_param", "load", "save"]


def _usage(message: str) -> NpuOptError:
    return NpuOptError(message, code="USAGE")


def check_count(name: str, params: Sequence[Any], arrays: Sequence[Any]) -> None:
    """USAGE unless one array is given per parameter."""
    if len(arrays) != len(params):
        names = ", ".join(p.name for p in params) or "none"
        raise _usage(f"{name} takes {len(params)} array(s) ({names}), got {len(arrays)}")


def to_hbm(param: Any, array: Any, target: Any, copy: bool = True) -> np.ndarray:
    """The HBM bytes of one kernel parameter (a `KernelParam`), validated like `npu_opt.run`;
    never a view of `array` unless `copy` is False (a caller that only reads them, or copies
    before a write: `np.may_share_memory` tells it which)."""
    t, name = param.type, param.name
    host_layout.refuse_masked(f"parameter `{name}`", array)
    if t.kind == "scalar":  # HbmScalar[T] (docs/runtime.md)
        return host_scalar(name, t.dtype, array)
    d: DType = t.dtype
    chips = chip_host_dims(t.chip)
    shape = chips + host_shape(t.element)
    accepted = d.host_dtypes
    if not isinstance(array, np.ndarray):
        raise _usage(f"parameter `{name}` must be a numpy array of shape {shape}, not {type(array).__name__}")
    if array.dtype not in accepted:
        names = " or ".join(str(a) for a in accepted)
        raise _usage(f"parameter `{name}` is {d}: pass {a_an(names)} array, not {array.dtype}")
    if array.shape not in accepted_host_shapes(t):
        whose = f"element `{t.element}`" if not chips else f"type (Chip `{t.chip}`, element `{t.element}`)"
        raise _usage(f"parameter `{name}` has shape {array.shape}; its HBM {whose} needs shape {shape}"
                     f"{padded_chip_note(t)}")
    unequal = unequal_chip_copies(name, array, t.chip)
    if unequal is not None:
        raise _usage(unequal)
    flat = np.ascontiguousarray(d.host_values(array)).reshape(-1)
    try:
        if d.is_float:
            values = cv.to_bits(flat, d)
        elif flat.dtype.itemsize * 8 == d.bits and flat.dtype == d.host_dtype:
            values = flat     # every value of the host dtype is one of `d`: the round trip is the identity
        else:
            values = cv.from_bits(cv.to_bits(flat, d), d)
    except ValueError as e:
        raise _usage(f"parameter `{name}`: {e}") from None
    for dim in host_layout.broadcast_dims(t.element):
        shaped = values.reshape(shape)
        if not np.array_equal(shaped, np.broadcast_to(shaped.take([0], axis=dim), shape)):
            raise _usage(f"parameter `{name}`: dimension {dim} is the broadcast "
                         f"`{host_layout.terms(t.element)[dim]}` of its HBM element; its copies must be equal")
    values = host_layout.place(values.reshape(shape), t.element)
    bits = target.bits_of(d) or d.bits
    if values.size * bits % 8:
        raise _usage(f"parameter `{name}`: {flat.size} x {d} is not a whole number of bytes")
    if chips:
        return _per_chip(values, t, d, bits)
    image = to_bytes(values, d, bits)
    if t.chip.size == 1:
        return image.copy() if copy and np.may_share_memory(image, array) else image
    return np.tile(image, t.chip.size)


def _per_chip(values: np.ndarray, t: Any, d: DType, bits: int) -> np.ndarray:
    """The HBM bytes of a chip-distributed tensor: live chip position c holds host row c,
    a padding position zeros."""
    rows = iter(values.reshape(-1, t.element.size))
    live = ~pad_mask(t.chip)
    copies = [to_bytes(next(rows), d, bits) if live[c] else None for c in range(t.chip.size)]
    width = next(c.size for c in copies if c is not None)
    return np.concatenate([c if c is not None else np.zeros(width, np.uint8) for c in copies])


def from_hbm(data: np.ndarray, t: Any, target: Any, owned: bool = False) -> np.ndarray:
    """The host array of an HBM result tensor (chip copy 0; every live chip's copy, in front,
    for a Chip with axes: `ir.topology.chip_host_dims`). A copy, unless the caller hands
    `data` over (`owned`: nothing else holds or writes it), when it may be a view of it."""
    d: DType = t.dtype
    bits = target.bits_of(d) or d.bits
    n = t.element.size
    width = -(-n * bits // 8)
    chips = chip_host_dims(t.chip)
    live = [c for c in range(t.chip.size) if not pad_mask(t.chip)[c]] if chips else [0]
    copies = [host_layout.select(from_bytes(data[c * width:(c + 1) * width], d, bits)[:n], t.element) for c in live]
    values = copies[0][None] if len(copies) == 1 else np.stack(copies)
    out = cv.from_bits(cv.to_bits(values, d), d) if d.is_float else values.astype(d.host_dtype, copy=False)
    out = np.ascontiguousarray(out).reshape(chips + host_shape(t.element))
    return out.copy() if not owned and np.may_share_memory(out, data) else out


def as_hbm_param(param: Any) -> Any:
    """The parameter as the HBM tensor its host array is converted through."""
    return attrs.evolve(param, type=host_type(param.type), at=None)


def load(mem: Memory, param: Any, data: np.ndarray) -> DmTensor:
    """Write the host type's bytes `data` into the DM at the parameter's address."""
    t, base = param.type, param.at
    size = tensor_bytes(t, mem.target)
    check(data.size == t.chip.size * t.cluster.size * t.slice.size * size,
          f"the resident bytes of {param.ref} do not split into one {size}-byte run per slice", None)
    runs = data.reshape(t.chip.size, t.cluster.size, t.slice.size, size)
    for chip, cluster in live_parts(t):
        dm = mem.dm(chip, cluster)
        dm._grow(base + size, t.slice.size)
        dm.data[:t.slice.size, base:base + size] = runs[chip, cluster]
    return DmTensor(base, t)


def save(mem: Memory, value: DmTensor) -> np.ndarray:
    """The host type's bytes of a resident tensor's DM contents (padding parts zero)."""
    t, base = value.type, value.base
    size = tensor_bytes(t, mem.target)
    out = np.zeros((t.chip.size, t.cluster.size, t.slice.size, size), np.uint8)
    for chip, cluster in live_parts(t):
        dm = mem.dm(chip, cluster)
        dm._grow(base + size, t.slice.size)
        out[chip, cluster] = dm.data[:t.slice.size, base:base + size]
    return out.reshape(-1)
