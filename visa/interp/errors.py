"""The one error the VISA interpreter raises for an artifact it cannot execute.

An artifact whose fields contradict each other (a read plan that covers fewer elements
than its packet, a TRF walk past the lane, a write outside its allocation, ...) is a
corrupt artifact: `npu-opt visa --exec` reports it like a format error (exit 2).
"""

from __future__ import annotations

from typing import Any

from ir.errors import VisaFormatError

__all__ = ["InterpError", "check"]


class InterpError(VisaFormatError):
    """The interpreter refused to execute a record: `op` is the record (or None)."""

    def __init__(self, message: str, op: Any = None) -> None:
        self.op = op
        where = ""
        if op is not None and getattr(op, "result", None) is not None:
            where = f"{op.result} = {getattr(op, 'MNEMONIC', type(op).__name__)}: "
        super().__init__(f"cannot execute the artifact: {where}{message}", code="USAGE")


def check(condition: bool, message: str, op: Any = None) -> None:
    """Raise InterpError(message, op) unless `condition`."""
    if not condition:
        raise InterpError(message, op)
