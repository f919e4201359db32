"""The table of the Vector Engine passes' inverses of the lowering (`@retraces("mnemonic")`,
visa/unlower*.py declare them; `visa.unlower.relowered` reads them) and the failure of a record
whose types fix no record (`Underivable`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Iterator

from ir import ops as ir
from ir.declare import Table

__all__ = ["Underivable", "retraces", "RETRACES"]

Retrace = Callable[[Any, ir.Value, dict[int, Any], Any, Iterator[int]], tuple[ir.Op, ...]]


RETRACES = Table("re-derivation", package="visa")  # filled by visa/unlower*.py, which visa.unlower imports


class Underivable(Exception):
    """The record's types fix no record (`op` is the record)."""

    def __init__(self, op: Any, detail: str) -> None:
        super().__init__(detail)
        self.op = op
        self.detail = detail


def retraces(mnemonic: str) -> Callable[[Retrace], Retrace]:
    """Declare `fn` as the inverse of the lowering for records of kind `mnemonic`."""
    return RETRACES.declare(mnemonic)
