"""The Vector Register File as memory: its words per slice, the scalars a word holds, and
the words a VRF tensor takes. What a DM tensor op (`tensor_new` of a VRF tensor), the VRF
allocation and the schedule need of the VRF, without its records (tu_ops/vrf.py) or the
Vector Engine."""

from __future__ import annotations

from typing import Any

from ir.dtypes import DType

__all__ = ["VRF_WORDS", "VRF_SCALARS", "vrf_words", "vrf_new_problem"]

VRF_WORDS = 2048  # 8192 bytes per slice, in 4-byte words
VRF_SCALARS = (DType.I32, DType.F32)


def vrf_words(op: Any) -> int | None:
    """The words of the VRF tensor `op` makes: a `vrf_load`'s, or a VRF `tensor_new`'s (its
    element's cells); None for any other op."""
    if getattr(op, "MNEMONIC", None) == "vrf_load":
        return op.words
    if getattr(op, "MNEMONIC", None) == "tensor_new" and op.output_type.kind == "vrf":
        return op.output_type.element.size
    return None


def vrf_new_problem(t: Any) -> str | None:
    """Why a VRF tensor of type `t` cannot be made by `tensor_new`, or None."""
    if t.dtype not in VRF_SCALARS:
        return f"the VRF holds i32 and f32 words, not {t.dtype}"
    if t.element.size > VRF_WORDS:
        return f"{t.element.size} words exceed the slice's {VRF_WORDS}-word VRF"
    return None
