"""The Vector Register File as memory: its words per slice, the scalars a word holds, and
the words a VRF tensor takes. What a DM tensor op (`tensor_new` of a VRF tensor), the VRF
allocation and the schedule need of the VRF, without its records (tu_ops/vrf.py) or the
Vector Engine."""

from __future__ import annotations

from typing import Any

from ir.dtypes import DType

__all__ = ["vrf_capacity", "VRF_SCALARS", "vrf_words", "vrf_new_problem"]

VRF_SCALARS = (DType.I32, DType.F32)


def vrf_capacity(target: Any) -> int:
    """The 4-byte words of one slice's VRF on `target` (its VRF_BYTES; 2048 on rngd)."""
    return target.constants.VRF_BYTES // 4


def vrf_words(op: Any) -> int | None:
    """The words of the VRF tensor `op` makes: a `vrf_load`'s, or a VRF `tensor_new`'s (its
    element's cells); None for any other op."""
    if getattr(op, "MNEMONIC", None) == "vrf_load":
        return op.words
    if getattr(op, "MNEMONIC", None) == "tensor_new" and op.output_type.kind == "vrf":
        return op.output_type.element.size
    return None


def vrf_new_problem(t: Any, target: Any) -> str | None:
    """Why a VRF tensor of type `t` cannot be made by `tensor_new`, or None."""
    if t.dtype not in VRF_SCALARS:
        return f"the VRF holds i32 and f32 words, not {t.dtype}"
    if t.element.size > vrf_capacity(target):
        return f"{t.element.size} words exceed the slice's {vrf_capacity(target)}-word VRF"
    return None
