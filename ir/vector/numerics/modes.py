"""Argument modes: which of the stream and the operands feed an op's arguments.

Binary MODEXY runs op(argX, argY) with 0 the stream and 1 the operand; the default is
MODE01, op(stream, operand). Ternary MODEXYZ runs op(argX, argY, argZ) with 0 the
stream, 1 the first operand, 2 the second; the default is MODE012.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["apply_binary_mode", "apply_ternary_mode"]


def apply_binary_mode(fn: Callable[[Any, Any], Any], mode: Any, stream: Any, operand: Any) -> Any:
    """fn applied to the pair `mode` (a BinaryArgMode, or None for MODE01) selects."""
    name = "MODE01" if mode is None else mode.name
    pick = {"0": stream, "1": operand}
    return fn(pick[name[4]], pick[name[5]])


def apply_ternary_mode(fn: Callable[[Any, Any, Any], Any], mode: Any, stream: Any,
                       operand0: Any, operand1: Any) -> Any:
    """fn applied to the triple `mode` (a TernaryArgMode, or None for MODE012) selects."""
    name = "MODE012" if mode is None else mode.name
    pick = {"0": stream, "1": operand0, "2": operand1}
    return fn(pick[name[4]], pick[name[5]], pick[name[6]])
