"""Kept only for `driver.compile_command._preload`, which reads `RETRACES`: the table of the
Vector Engine passes' inverses of the lowering is empty now. Every program record, the passes
included, declares its derived fields itself (`TuOp.derived`, `tu_ops`), and `visa.relower`
compares a parsed record with that declaration; nothing here re-runs the lowering."""

from __future__ import annotations

from ir.declare import Table

__all__ = ["RETRACES"]

RETRACES = Table("re-derivation", package="visa")  # empty: no record kind goes back through the lowering
