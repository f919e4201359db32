"""The numerics of an op enum value as its unit declares them (`ir.vector.units`: the unit's
`fn`), under an argument mode, on int32 / float32 arrays: what the tests of the numerics
modules call."""

from __future__ import annotations

import numpy as np

from ir.vector.numerics.fold import fold, Groups
from ir.vector.numerics.modes import apply_mode
from ir.vector.units import SPECS, op_text


def unit_fn(op):
    """The element-wise function of the unit whose op enum `op` belongs to."""
    spec = next(s for s in SPECS.values() if s.op_enum is type(op))
    return spec.fn(op_text(op))


def apply_unary(op, x):
    return unit_fn(op)(x)


def apply_binary(op, stream, operand, mode=None):
    return apply_mode(unit_fn(op), mode, stream, operand)


def apply_ternary(op, stream, operand0, operand1, mode=None):
    return apply_mode(unit_fn(op), mode, stream, operand0, operand1)


def apply_reduce(op, x, axis=-1):
    """A reduce op enum value folded along `axis` by the reducers' fold (one output)."""
    x = np.asarray(x)
    values = np.moveaxis(x, axis, -1)[..., None]  # (..., N, 1): N positions, one lane
    groups = Groups(np.zeros(values.shape[-2], np.int64), 1)
    return fold("f32" if x.dtype == np.float32 else "i32", op.name, values, groups)[..., 0, 0]
