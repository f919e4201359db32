"""The derived fields of a Vector Engine pass record, filled by its own declaration: the
lowering of every pass record (`vector`, `vector_pair`, `vector_branch` and their `_rf`
forms) builds the record from its traced ops' choices and hands it to `derived_pass`, which
calls the record's `with_derived` (each reduce step's `vcg=`, each VRF tensor's `rf_read`:
the declaration the VISA verifier compares a parsed record with, `TuOp.derived`)."""

from __future__ import annotations

from typing import Any

from ir.errors import InternalError

__all__ = ["derived_pass"]


def derived_pass(rec: Any, tensors: Any = ()) -> Any:
    """`rec` with its derived fields filled; `tensors` are the traced VRF values its `rf` names."""
    try:
        return rec.with_derived(tuple(t.type for t in tensors))
    except ValueError as e:  # a padded reduce axis the Valid Count Generator cannot count
        raise InternalError(f"{rec.MNEMONIC} {rec.result}: {e}") from e
