"""Host arrays in and out of the cpu backend (docs/testing.md, docs/numerics.md).

A parameter `HbmTensor[D, Chip, Element]` is a C-order numpy array with one dimension per
top-level term of `Element`, padding left out (`ir.host_layout`; `m("1")` is shape (1,)). bf16 / f8 / f4 come as `ml_dtypes` arrays or
as unsigned bit patterns of the same width, f32 as float32 (or uint32 bits), integers in
their host dtype (i4 as int8 holding -8..7). Results use the host forms, the small
floats as `ml_dtypes` arrays. A bad argument is a `USAGE` error naming the parameter.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import numpy as np

from ir import convert as cv
from ir.dtypes import f4e2m1, i4
from ir import host_layout, resident
from ir.mapping.nodes import Mapping
from ir.ops import Param
from ir.runtime_types import host_scalar
from ir.topology import chip_host_dims, unequal_chip_copies
from ir.types import HbmType

from backends.cpu import layout, moves
from backends.inout import check_array, usage_error

__all__ = ["to_buffer", "from_buffer", "returns_tuple"]


def to_buffer(param: Param, array: Any) -> np.ndarray:
    """The HBM buffer (chip, element) of one parameter, validated: dtype, shape, range."""
    t: HbmType = param.result.type
    if t.kind == "scalar":  # HbmScalar[T] (docs/runtime.md)
        return host_scalar(param.name, t.dtype, array)
    if t.kind == "dm":  # a resident buffer, through its host HBM type (ir/resident.py)
        return _hbm_buffer(param.name, resident.host_type(t), array.host_array()).reshape(layout.shape_of(t))
    return _hbm_buffer(param.name, t, array)


@functools.lru_cache(maxsize=256)
def _facts(t: HbmType) -> tuple[np.dtype, tuple[int, ...], bool, np.ndarray, tuple[int, ...]]:
    """(storage dtype, the element's host shape, whether it has broadcast dimensions, the
    live chip rows, the Chip's host dimensions) of HBM type `t`, found once per type (a run
    places every parameter: issue 61, the cpu backend's per-run cost)."""
    live = ~moves.logical_pad((t.chip,))
    live.setflags(write=False)
    return (layout.storage_dtype(t.dtype), host_layout.host_shape(t.element),
            bool(host_layout.broadcast_dims(t.element)), live, chip_host_dims(t.chip))


def _hbm_buffer(name: str, t: HbmType, array: Any) -> np.ndarray:
    dtype = t.dtype
    check_array(f"parameter `{name}`", t, array)
    array = dtype.host_values(array)
    flat = np.ascontiguousarray(array).reshape(-1)
    if dtype == i4 and flat.size and (flat.min() < -8 or flat.max() > 7):
        raise usage_error(f"parameter `{name}` is i4: values must lie in -8..7")
    if dtype == f4e2m1 and array.dtype == dtype.bits_dtype and flat.size and flat.max() > 0xF:
        raise usage_error(f"parameter `{name}` is f4e2m1: bit patterns must lie in 0..15")
    values = cv.to_bits(flat, dtype) if dtype.is_float else flat
    unequal = unequal_chip_copies(name, array, t.chip)
    if unequal is not None:
        raise usage_error(unequal)
    storage, shape, broadcasts, chip_live, chips = _facts(t)
    per_chip = values.astype(storage, copy=False).reshape((-1, *shape))
    if broadcasts:
        for one in per_chip:
            _check_broadcasts(name, one, t.element)
    if not chips and chip_live.size == 1 and chip_live[0]:
        placed = host_layout.place(per_chip[0], t.element)  # one chip, no padding: a view of the array
        if np.shares_memory(placed, array):
            view = placed.reshape(layout.shape_of(t))
            view.flags.writeable = False  # written in place only when `CpuBackend.run` lets it (in-out)
            return view
    buf = np.zeros(layout.shape_of(t), per_chip.dtype)
    if chips:
        buf[chip_live] = np.stack([host_layout.place(one, t.element) for one in per_chip])
    else:  # one host array for every live chip row
        buf[chip_live] = host_layout.place(per_chip[0], t.element)
    return buf


def from_buffer(buf: np.ndarray, t: HbmType, copy: bool = True) -> np.ndarray:
    """The host array of a result buffer: chip row 0 (every live chip row, in front, for a Chip
    with axes: `ir.topology.chip_host_dims`), host dtype, one dimension per term. `copy=False`
    may return a view of `buf` (read before `buf`'s memory is reused: an in-out's final,
    written into the caller's array at once)."""
    if t.kind == "dm":  # the final contents of a resident buffer, in its host form
        return from_buffer(np.ascontiguousarray(buf).reshape(1, -1), resident.host_type(t), copy)
    chips = chip_host_dims(t.chip)
    rows = buf[~moves.logical_pad((t.chip,))] if chips else buf[:1]
    if len(rows) == 1:  # one chip row: a view of it, copied once below
        live = host_layout.select(np.ascontiguousarray(rows[0]), t.element)[None]
    else:
        live = np.stack([host_layout.select(np.ascontiguousarray(r), t.element) for r in rows])
    out = cv.from_bits(live, t.dtype) if t.dtype.is_float else live.astype(t.dtype.host_dtype, copy=False)
    if not copy:
        return out.reshape(chips + host_layout.host_shape(t.element))
    return np.array(out, order="C", copy=True).reshape(chips + host_layout.host_shape(t.element))


def _check_broadcasts(name: str, array: np.ndarray, element: Mapping) -> None:
    """USAGE when the copies along a broadcast dimension of the element differ."""
    for d in host_layout.broadcast_dims(element):
        if not np.array_equal(array, np.broadcast_to(array.take([0], axis=d), array.shape)):
            raise usage_error(f"parameter `{name}`: dimension {d} is the broadcast `{host_layout.terms(element)[d]}` "
                         "of its HBM element; its copies must be equal")


def returns_tuple(kernel: Any) -> bool:
    """Does the kernel's return annotation declare a tuple (then `run` returns a tuple)?"""
    ann = inspect.signature(kernel.fn).return_annotation
    if isinstance(ann, str):  # `from __future__ import annotations` in the kernel's module
        try:
            ann = eval(ann, kernel.fn.__globals__)  # noqa: S307 - the user's own annotation
        except Exception:  # the trace already accepted it; fall back to "not a tuple"
            return False
    return isinstance(ann, tuple) or getattr(ann, "__origin__", None) is tuple
