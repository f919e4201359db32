"""A toy Vector Engine unit for tests/vector/test_unit_spec.py: TOY_ABSDIFF, `|x - c|` on i32
(wrapping to 32 bits), at the Fxp stage on the Fxp adder, DSL method `vector_toy_absdiff`.

`declare()` is its one declaration; this module imports only `ir.vector` so a fresh
interpreter can declare the unit before the DSL, the lowering and the cpu backend load (as
a built-in unit is declared), which is how the end-to-end test runs it.
"""

from __future__ import annotations

import numpy as np

from ir.vector import enums as E
from ir.vector.stages import VeStage
from ir.vector.units import GENERATED, UnitSpec, elementwise, register
from ir.vector.variants import RustEnum, Unit

__all__ = ["ToyOp", "declare", "oracle", "X"]


class ToyOp(RustEnum):
    """The toy unit's one op; it occupies the Fxp cluster's adder."""

    TOY_ABS_DIFF = Unit("ToyAbsDiff")

    @property
    def alu(self) -> E.RngdAlu:
        return E.RngdAlu.FXP_ADD


def _abs_diff(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The unit's numerics (what the declaration names; the tests check it against `oracle`)."""
    return np.abs(x.astype(np.int64) - np.asarray(c, np.int64)).astype(np.uint32).view(np.int32)


def declare() -> UnitSpec:
    """THE declaration: every layer the tests run reads it (the traced op is made from it)."""
    return register(UnitSpec("TOY_ABSDIFF", VeStage.FXP, ToyOp, "i32", arg="i32", arity=2,
                             fn=lambda op: {"TOY_ABS_DIFF": _abs_diff}[op], methods=("vector_toy_absdiff",),
                             codec=elementwise(GENERATED.VectorToyAbsDiff)))


def oracle(x: np.ndarray, c: int) -> np.ndarray:
    """|x - c| in exact Python integers, wrapped to 32 bits: element by element, no numpy arithmetic."""
    return np.array([(abs(int(v) - c) + 2**31) % 2**32 - 2**31 for v in x.ravel()], np.int32).reshape(x.shape)


X = (np.arange(8 * 64, dtype=np.int64).reshape(8, 64) * 7919 - 2**31 + 12345).astype(np.int32)
X[0, :4] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max, 0, -7]
