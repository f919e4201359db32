"""The paired FMA_F of pair mode, beside the other pair ops of `ir.vector.pair_ops`:
`vector_fp_ternary(op, (a0, c0), (a1, c1))` runs `group * a + c`, rounded once, on each group
that has a pair (None skips a group; 4-way f32, the float cluster's FMA ALU). Its
`_with_mode` form reads one TernaryArgMode inside each group (0 the group's stream, 1 its
`a`, 2 its `c`). The step of the `vector_pair` record is `FP_TERNARY` with each group's `a`
in arg0 / arg1 and its `c` in `add0` / `add1`. Rule VE-CONST-2 (each constant is an f32).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.op_frame import attr, rule
from ir.vector import scalars
from ir.vector.numerics._arrays import f32_bits
from ir.vector.ops import _first_fault
from ir.vector.pair_ops import PairOp, _side

__all__ = ["FmaPair", "PairFpTernary", "PAIR_TERNARY_CLASSES"]


class FmaPair(tuple):
    """A group's FMA_F operand `(a, c)`; it prints as the IR text's list `[a, c]`."""

    def __str__(self) -> str:
        return f"[{self[0]!r}, {self[1]!r}]"


def _fma_operand(value: Any) -> FmaPair | None:
    return None if value is None else FmaPair(float(v) for v in value)


def _fma_pair(c: Any) -> tuple[int, int]:
    """(a, c) of a group's FMA_F operand as f32 bits ((0, 0) for a skipped group)."""
    return (0, 0) if c is None else (f32_bits(c[0]), f32_bits(c[1]))


@attrs.frozen(kw_only=True)
class PairFpTernary(PairOp):
    """Float cluster on each group: FMA_F `group * a + c`, rounded once, with the group's own
    `(a, c)` (None: that group is left as it is); a TernaryArgMode is read inside each group
    (0 the group's stream, 1 its a, 2 its c)."""

    STAGE = "vector_fp_ternary"
    op: Any = attr()
    c0: FmaPair | None = attr(converter=_fma_operand)
    c1: FmaPair | None = attr(converter=_fma_operand)
    mode: Any = attr(default=None, optional=True)

    def pair_step(self) -> tuple[str, str, str, int, int]:
        return "FP_TERNARY", self.op.name, _side(self.c0, self.c1), _fma_pair(self.c0)[0], _fma_pair(self.c1)[0]

    def addends(self) -> tuple[int, int]:
        """Each group's `c` (f32 bits; 0 for a skipped group): the step's `add0` / `add1`."""
        return _fma_pair(self.c0)[1], _fma_pair(self.c1)[1]

    @rule("VE-CONST-2")
    def _range(self) -> Violation | None:
        return _first_fault(scalars.f32_constant, (v for c in (self.c0, self.c1) for v in c or ()))


PAIR_TERNARY_CLASSES: tuple[type, ...] = (PairFpTernary,)
