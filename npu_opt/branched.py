"""`Branched`, the guarded operand layout a kernel writes, and `TagGuard` (the user-facing half
of npu_opt/vector_branch.py, which emits the branched ops).

Kept apart so that `from npu_opt import *` defines `Branched` without loading the branched
ops, the chain's methods and the stash (issue 29): a kernel without a Vector Engine chain
never needs them. See npu_opt/vector_branch.py for the slots and their rules.
"""

from __future__ import annotations

import numbers
from typing import Any

from ir.vector.branch import BranchedOperand, TagGuard
from ir.vector.errors import refuse
from ir.vector.operands import Constant, Stash, TernaryOperand, rf_port
from npu_opt.tensor_data import VrfTensorData

__all__ = ["Branched", "TagGuard"]


def _constant(value: Any, method: str = "imm") -> Any:
    """A slot's value: a Constant, or for FMA_F the pair `(a, c)` as a TernaryOperand."""
    if isinstance(value, tuple) and len(value) == 2:
        a, c = value
        rhs = a if a is Stash else _f32(a, method)
        return TernaryOperand(rhs, _f32(c, method))
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, float)):
        raise refuse("VE-CONST-3", f"a branched slot holds an int or a float, not {type(value).__name__}",
                     method=method)
    return Constant(value, "f32" if isinstance(value, float) else "i32")


def _f32(value: Any, method: str) -> Constant:
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, float)):
        raise refuse("VE-CONST-3", f"an FMA_F slot pairs two numbers (a, c), not {type(value).__name__}",
                     help="write `(2.0, 0.5)`; the rf slot takes `(Stash, 0.5)`", method=method)
    return Constant(float(value), "f32")


def _guard(guard: Any) -> TagGuard:
    if not isinstance(guard, TagGuard):
        raise refuse("VE-ENUM-3", f"a branched slot is guarded by a TagGuard, not {type(guard).__name__}",
                     help="build one with TagGuard.all(), .group(...), .matches([...]) or .not_matches([...])",
                     method="imm")
    return guard


class Branched:
    """A guarded operand layout: `Branched.imm(guard, value).imm(guard, value)`, maybe ending in
    `.rf(guard, vrf_tensor)` (the register-file slot); slots match in call order (VE-SLOT-2 a
    guard that admits nothing, VE-SLOT-3 a slot after the rf slot, VE-SLOT-4 a fourth
    immediate, VE-SLOT-5 a slot after an unconditional one)."""

    def __init__(self, layout: BranchedOperand, vrf: Any = None) -> None:
        self.layout = layout
        self.vrf = vrf  # the VrfTensor of the rf slot

    @classmethod
    def start(cls) -> Branched:
        return cls(BranchedOperand.start())

    def _imm(self, guard: Any, value: Any) -> Branched:
        return Branched(self.layout.imm(_guard(guard), _constant(value)), self.vrf)

    def _rf(self, guard: Any, source: Any) -> Branched:
        if source is Stash:
            return Branched(self.layout.rf(_guard(guard), Stash), None)
        if isinstance(source, tuple) and len(source) == 2 and source[0] is Stash:  # FMA_F: (Stash, c)
            return Branched(self.layout.rf(_guard(guard), TernaryOperand(Stash, _f32(source[1], "rf"))), None)
        if isinstance(source, tuple) and len(source) == 2 and isinstance(source[0], VrfTensorData):  # (vrf, c)
            port = TernaryOperand(rf_port(), _f32(source[1], "rf"))
            return Branched(self.layout.rf(_guard(guard), port), source[0])
        if not isinstance(source, VrfTensorData):
            raise refuse("VE-CONST-3", f"the register-file slot reads a VRF tensor or the stash, not "
                         f"{type(source).__name__}", help="store the operand with `.to_vrf(element)` first, or "
                         "pass `Stash`; a constant takes an `imm` slot", method="rf")
        return Branched(self.layout.rf(_guard(guard), rf_port()), source)

    def __repr__(self) -> str:
        return f"Branched({len(self.layout.slots())} slots)"


class _SlotDescriptor:
    """`Branched.imm(...)` / `Branched.rf(...)` on the class starts a layout (`Branched.rf(guard,
    vrf)` one with the rf slot), on a layout adds a slot (`fill`: `Branched._imm` / `_rf`)."""

    def __init__(self, fill: Any) -> None:
        self.fill = fill

    def __get__(self, obj: Any, owner: Any) -> Any:
        return lambda guard, value: self.fill(obj if isinstance(obj, Branched) else Branched.start(), guard, value)


Branched.imm = _SlotDescriptor(Branched._imm)  # type: ignore[assignment]
Branched.rf = _SlotDescriptor(Branched._rf)  # type: ignore[assignment]
