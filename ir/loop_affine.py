"""What a loop index is worth in a scalar expression, for every iteration at once (docs/loops.md).

A rolled loop's body is checked once for all its index values, never iteration by
iteration. A scalar built from loop indices by `+`, `-`, `*` by a constant and casts to
`usize` is affine in them: `const + sum(coef * index)`, each index ranging over its
loop's values. Its smallest and largest values then sit at the extremes of the indices
(`Affine.low`, `Affine.high`), and `Affine.at` names the iteration that gives one.
Anything else built from an index (a product of two indices, a bitwise op, a mix with
a launch scalar) is `UNPROVEN`: a tile start of that kind is refused (LOOP-2). A scalar
that no index reaches has no form (None).

`combine` works on the op name and operand forms alone, so the trace (`npu_opt.loops`)
and the VISA verifier (`tu_ops.loop_checks`) compute the same forms.
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Index", "Affine", "UNPROVEN", "combine", "index_form", "range_fault"]


@attrs.frozen
class Index:
    """A loop index: its value id, its first value and its last (None: a runtime bound)."""

    vid: int
    first: int
    last: int | None
    name: str = "i"


@attrs.frozen
class Affine:
    """`const + sum(coef * index)` over the loop indices `terms` ((Index, coef) pairs)."""

    const: int
    terms: tuple[tuple[Index, int], ...] = ()

    def _ends(self, high: bool) -> tuple[int | None, dict[Index, int | None]]:
        total, at = self.const, {}
        for index, coef in self.terms:
            pick = index.last if (coef > 0) == high else index.first
            at[index] = pick
            if pick is None:
                return None, at
            total += coef * pick
        return total, at

    def low(self) -> int | None:
        """The smallest value over every iteration (None: unknown, a runtime bound)."""
        return self._ends(False)[0]

    def high(self) -> int | None:
        """The largest value over every iteration (None: unknown, a runtime bound)."""
        return self._ends(True)[0]

    def at(self, high: bool) -> str:
        """The iteration giving the largest (or smallest) value, as `i = 3, j = 0`."""
        return ", ".join(f"{index.name} = {value}" for index, value in self._ends(high)[1].items())

    def plus(self, other: Affine, sign: int = 1) -> Affine:
        coefs: dict[Index, int] = dict(self.terms)
        for index, coef in other.terms:
            coefs[index] = coefs.get(index, 0) + sign * coef
        return Affine(self.const + sign * other.const, tuple((i, c) for i, c in coefs.items() if c))

    def times(self, k: int) -> Affine:
        return Affine(self.const * k, tuple((i, c * k) for i, c in self.terms if c * k))


UNPROVEN = "unproven"
"""The form of a scalar an index reaches other than affinely."""


def index_form(index: Index) -> Affine:
    return Affine(0, ((index, 1),))


def combine(op: str, lhs: Any, rhs: Any, imm: int | None, to_usize: bool) -> Any:
    """The form of `lhs op rhs` (or `lhs op imm`) from its operands' forms (an Affine,
    UNPROVEN, or None: no index). `to_usize`: a CAST whose result is a usize."""
    if lhs is None and rhs is None:
        return None
    if lhs is UNPROVEN or rhs is UNPROVEN:
        return UNPROVEN
    right = Affine(imm) if imm is not None else rhs
    if op == "CAST":
        return lhs if to_usize else UNPROVEN
    if isinstance(lhs, Affine) and isinstance(right, Affine):
        if op in ("ADD", "SUB"):
            return lhs.plus(right, 1 if op == "ADD" else -1)
        if op == "MUL" and not right.terms:
            return lhs.times(right.const)
        if op == "MUL" and not lhs.terms:
            return right.times(lhs.const)
    return UNPROVEN   # a launch scalar mixed in (None on one side), a product of indices, logic, ...


def range_fault(form: Any, limit: int) -> str | None:
    """Why a tile start of `form` leaves `0 ..= limit` for some iteration, or None; the
    message names the iteration."""
    if not isinstance(form, Affine):
        return None
    low, high = form.low(), form.high()
    if low is not None and low < 0:
        return f"is {low} at {form.at(False)}, below 0 (a usize wraps to a start past {limit})"
    if high is not None and high > limit:
        return f"is {high} at {form.at(True)}, past the last start {limit}"
    return None
