"""Argument modes: which of the stream and the operands feed an op's arguments.

Binary MODEXY runs op(argX, argY) with 0 the stream and 1 the operand; the default is
MODE01, op(stream, operand). Ternary MODEXYZ runs op(argX, argY, argZ) with 0 the
stream, 1 the first operand, 2 the second; the default is MODE012.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["apply_mode"]


def apply_mode(fn: Callable[..., Any], mode: Any, stream: Any, *operands: Any) -> Any:
    """fn applied to the arguments `mode` selects from the stream and one operand (a
    BinaryArgMode, None for MODE01) or two (a TernaryArgMode, None for MODE012)."""
    name = mode.name if mode is not None else "MODE01" if len(operands) == 1 else "MODE012"
    pick = dict(zip("012", (stream, *operands)))
    return fn(*(pick[c] for c in name[4:]))
