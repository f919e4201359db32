"""Resident DM parameters in the interpreter (ir/resident.py): the launch's DM holds each
one's bytes at its signature address (`at`) before the first record runs, and the final
contents of a written one are read back from there after the last.

The host side hands a resident buffer over as the HBM bytes of its host type
(`ir.resident.host_type`): the four DM levels side by side, so the bytes of
(chip c, cluster k, slice s) are the `size`-byte run at `((c K + k) S + s) size`.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ir.resident import host_type
from visa.interp.dma import DmTensor, live_parts, tensor_bytes
from visa.interp.errors import check
from visa.interp.memory import Memory

__all__ = ["as_hbm_param", "load", "save"]


def as_hbm_param(param: Any) -> Any:
    """The parameter as the HBM tensor its host array is converted through."""
    return attrs.evolve(param, type=host_type(param.type), at=None)


def _runs(t: Any, size: int, data: np.ndarray) -> np.ndarray:
    return data.reshape(t.chip.size, t.cluster.size, t.slice.size, size)


def load(mem: Memory, param: Any, data: np.ndarray) -> DmTensor:
    """Write the host type's bytes `data` into the DM at the parameter's address."""
    t, base = param.type, param.at
    size = tensor_bytes(t, mem.target)
    check(data.size == t.chip.size * t.cluster.size * t.slice.size * size,
          f"the resident bytes of {param.ref} do not split into one {size}-byte run per slice", None)
    runs = _runs(t, size, data)
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
