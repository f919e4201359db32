"""A commit's f32 -> bf16 cast (`F32_TO_BF16`, and its relu form) for the interpreter's hook
"narrow_bf16" (visa/interp/shortcuts.py; issue 61 item 2).

The cast itself is `ir.float_bits.narrow_bf16` / `commit_cast_relu`, which work over
cache-sized blocks with the rounding bit trick, so the interpreter and the cpu backend share
one rule and one speed; this hook only refuses what is not f32 bits.
"""

from __future__ import annotations

import numpy as np

from ir.float_bits import commit_cast_relu, narrow_bf16
from visa.interp.shortcuts import register

__all__ = ["narrowed"]


@register("narrow_bf16")
def narrowed(bits: np.ndarray, relu: bool) -> np.ndarray | None:
    """The bf16 codes (uint16) of f32 bit patterns `bits` (uint32), cast as a commit does
    (`relu`: `F32_TO_BF16_RELU`), or None for anything but uint32 (the plain cast then
    says what is wrong)."""
    if not isinstance(bits, np.ndarray) or bits.dtype != np.uint32:
        return None
    return commit_cast_relu(bits) if relu else narrow_bf16(bits)
