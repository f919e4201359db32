"""The Vector Engine's value-level rules and the error that carries them.

These rules are checked where a kernel builds a Vector Engine value (an enum variant, a
constant operand, a shift amount, a conversion width), before any stream exists. Each
is a `VectorRuleError` carrying the rule ID and the user's source location, so the DSL
layer can re-raise it as a diagnostic at the user's line (`violation()` gives the
`ir.diagnostic.Violation`, `location` the `ir.location.Location`).

Every ID here is in `ir.codes.CODES` with an explain page
(tests/npu_opt/test_codes_indexed.py holds every raised code to that).
"""

from __future__ import annotations

from ir.diagnostic import Violation
from ir.errors import TypeCheckError
from ir.location import Location, user_location

__all__ = ["RULES", "VectorRuleError", "refuse"]

RULES: dict[str, str] = {
    "VE-ENUM-1": (
        "A variant that carries data was used without it: `FpBinaryOp.MUL_F` names a "
        "constructor, the op is `FpBinaryOp.MUL_F(FpMulAlu.MUL0)`."),
    "VE-ENUM-2": (
        "A variant was given the wrong number of values, a keyword it does not have, or "
        "is missing one: tuple variants take their values positionally, struct variants "
        "by keyword (`TagMode.AXIS_TOGGLE(axis=A)`)."),
    "VE-ENUM-3": (
        "A variant's value has the wrong kind: `FpBinaryOp.MUL_F` takes an `FpMulAlu`, "
        "`TagMode.COMPARISON` takes four `Cmp`s of one scalar type, `Cmp.LESS` takes an "
        "int (i32 stream) or a float (f32 stream)."),
    "VE-ENUM-4": (
        "A value of another enum (or no enum at all) was passed where this enum is "
        "expected, e.g. an `FxpBinaryOp` to a method that takes an `FpBinaryOp`."),
    "VE-ENUM-5": (
        "A variant that carries no data was called: `TagMode.ZERO` is already a value, "
        "write it without parentheses."),
    "VE-CONST-1": (
        "An integer constant operand does not fit i32 (-2^31 ... 2^31-1), the only "
        "integer type the Vector Engine holds."),
    "VE-CONST-2": (
        "A float constant operand is finite but too large for f32 (its f32 rounding "
        "would be infinite); write `math.inf` if infinity is meant."),
    "VE-CONST-3": (
        "A constant operand has the wrong kind for the stream: an int for i32, a float "
        "(or an int exactly representable in f32) for f32; bools and other objects are "
        "refused."),
    "VE-SHIFT-1": (
        "A constant shift amount is outside 0 ... 31 (shifts of the Fxp and Logic "
        "clusters shift a 32-bit value)."),
    "VE-CONV-1": (
        "The integer width of `vector_fxp_to_fp` / `vector_fp_to_fxp` is outside 0 ... 31 "
        "(the fixed-point value has 31 - int_width fraction bits)."),
    "VE-SLOT-1": (
        "A branched operand fills no slot, so its pass would occupy an ALU and drive nothing."),
    "VE-SLOT-2": (
        "A tag guard admits no execution id (`TagGuard.not_matches` of a pattern that "
        "constrains no bit), so the slot it gates can never fire."),
    "VE-SLOT-3": (
        "A branched operand's slots are out of order: an immediate was added after the "
        "register-file slot, or the register-file slot was filled twice."),
    "VE-SLOT-4": (
        "A branched operand asks for a fourth immediate; a pass has three immediate "
        "registers."),
    "VE-SLOT-5": (
        "A slot follows an unconditional one (`TagGuard.all()`), which already takes every "
        "element the earlier slots left, so the later slot could never fire."),
    "VE-ALU-1": (
        "Two ops of one Vector Engine pass need the same ALU (e.g. `ADD_FXP` then "
        "`SUB_FXP`, both on `FxpAdd`); each ALU runs one op per Tensor Unit invocation. "
        "Split the chain across two passes or pick an op on a free ALU."),
}


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
