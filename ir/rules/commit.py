"""Cast and Commit rules (pipeline.md 10): CAST-1..4, TRIM-1..2, CCAST-1..2, CTX-4, COMMIT-1..7."""

from __future__ import annotations

from ir.diagnostic import Violation

__all__ = ["check_cast", "check_trim", "check_commit_cast", "check_commit"]


def check_cast(op) -> Violation | None:
    return None


def check_trim(op) -> Violation | None:
    return None


def check_commit_cast(op) -> Violation | None:
    return None


def check_commit(op) -> Violation | None:
    return None
