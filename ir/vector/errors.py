"""The Vector Engine's value-level rules and the error that carries them.

These rules are checked where a kernel builds a Vector Engine value (an enum variant, a
constant operand, a shift amount, a conversion width), before any stream exists. Each
is a `VectorRuleError` carrying the rule ID and the user's source location, so the DSL
layer can re-raise it as a diagnostic at the user's line (`violation()` gives the
`ir.diagnostic.Violation`, `location` the `ir.location.Location`).

Every ID here is in `ir.codes.CODES` with an explain page, which says what the rule means
(tests/npu_opt/test_codes_indexed.py holds every raised code to that).
"""

from __future__ import annotations

from ir.codes import CODES
from ir.diagnostic import Violation
from ir.errors import TypeCheckError
from ir.location import Location, user_location

__all__ = ["RULES", "VectorRuleError", "refuse"]

# The IDs of these rules; what each means is its `npu-opt explain` page (`ir.codes.CODES`).
RULES: frozenset[str] = frozenset(code for code in CODES if code.startswith(
    ("VE-ENUM-", "VE-CONST-", "VE-SHIFT-", "VE-CONV-", "VE-SLOT-", "VE-ALU-")))


class VectorRuleError(TypeCheckError):
    """A Vector Engine value broke one of `RULES`; `code` is the rule ID."""

    def __init__(self, code: str, message: str, *, help: str | None = None,
                 location: Location | None = None) -> None:
        if code not in RULES:
            raise ValueError(f"unknown Vector Engine rule {code!r}")
        super().__init__(message, code=code)
        self.help = help
        self.location = location

    def violation(self) -> Violation:
        """The rule failure without its location, for `Diagnostic.from_violation`."""
        return Violation(self.code, self.message, help=self.help)


def refuse(code: str, message: str, *, help: str | None = None, method: str | None = None) -> VectorRuleError:
    """A VectorRuleError located at the user's innermost frame (at `.method` when given)."""
    return VectorRuleError(code, message, help=help, location=user_location(method))
