"""Runtime scalars (docs/runtime.md): their types and their exact integer arithmetic.

A runtime scalar is a value the host passes at launch (`HbmScalar[T]`), read into the
scalar memory by `to_spm` and combined by `scalar` ops into the condition of a runtime
guard (`ctx.when`). Its type is one of `bool`, `i32`, `u32`, `i64`, `u64`, `usize`
(`usize` is 64 bits wide on RNGD's sequencer). Arithmetic wraps to the type's width, as
Rust's release builds and the sequencer do; comparisons give `bool`. `apply` is the one
evaluation the cpu backend and the VISA interpreter share, so they agree bit for bit.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ir.errors import NpuOptError, RunTimeRefusal
from ir.words import a_an

__all__ = ["ScalarDType", "ScalarType", "SCALAR_DTYPES", "INTEGER_NAMES", "scalar_dtype", "wrap", "apply",
           "BINARY", "COMPARE", "LOGIC", "OP_NAMES", "checked_start"]


@attrs.frozen
class ScalarDType:
    """One runtime scalar type: its name, width and signedness."""

    name: str
    bits: int
    signed: bool

    def __str__(self) -> str:
        return self.name

    @property
    def min(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        return 1 if self.name == "bool" else (1 << (self.bits - (1 if self.signed else 0))) - 1

    @property
    def host_dtype(self) -> np.dtype:
        return np.dtype(np.bool_ if self.name == "bool" else f"{'i' if self.signed else 'u'}{self.bits // 8}")


SCALAR_DTYPES: dict[str, ScalarDType] = {d.name: d for d in (
    ScalarDType("bool", 8, False), ScalarDType("i32", 32, True), ScalarDType("u32", 32, False),
    ScalarDType("i64", 64, True), ScalarDType("u64", 64, False), ScalarDType("usize", 64, False))}
INTEGER_NAMES = ("i32", "u32", "i64", "u64", "usize")


def scalar_dtype(x: Any) -> ScalarDType | None:
    """The runtime scalar type `x` names: a `ScalarDType`, Python's `bool`, npu_opt's `i32`
    (the tensor dtype of the same name) or a name; None for anything else."""
    if isinstance(x, ScalarDType):
        return x
    if x is bool:
        return SCALAR_DTYPES["bool"]
    name = getattr(x, "value", x)
    return SCALAR_DTYPES.get(name) if isinstance(name, str) else None


@attrs.frozen
class ScalarType:
    """The IR type of a runtime scalar value: `scalar<u32>`."""

    dtype: ScalarDType
    kind = "scalar"

    def levels(self) -> tuple[()]:
        return ()

    def __str__(self) -> str:
        return f"scalar<{self.dtype}>"


BINARY = {"ADD": "+", "SUB": "-", "MUL": "*"}
COMPARE = {"LT": "<", "LE": "<=", "GT": ">", "GE": ">=", "EQ": "==", "NE": "!="}
LOGIC = {"AND": "&", "OR": "|", "XOR": "^"}
OP_NAMES = (*BINARY, *COMPARE, *LOGIC, "NOT", "CAST")


def wrap(value: int, dtype: ScalarDType) -> int:
    """`value` reduced to `dtype`: two's complement wrapping; a bool is 0 or 1."""
    if dtype.name == "bool":
        return int(value != 0)
    span = 1 << dtype.bits
    value %= span
    return value - span if dtype.signed and value >= span >> 1 else value


def apply(op: str, dtype: ScalarDType, lhs: int, rhs: int | None = None) -> int:
    """The result of scalar op `op` (`OP_NAMES`) whose result type is `dtype`."""
    if op == "CAST":
        return wrap(lhs, dtype)
    if op == "NOT":
        return wrap(1 - lhs if dtype.name == "bool" else ~lhs, dtype)
    assert rhs is not None, op
    if op in COMPARE:
        return int({"LT": lhs < rhs, "LE": lhs <= rhs, "GT": lhs > rhs, "GE": lhs >= rhs,
                    "EQ": lhs == rhs, "NE": lhs != rhs}[op])
    if op in LOGIC:
        return wrap({"AND": lhs & rhs, "OR": lhs | rhs, "XOR": lhs ^ rhs}[op], dtype)
    return wrap({"ADD": lhs + rhs, "SUB": lhs - rhs, "MUL": lhs * rhs}[op], dtype)


def host_scalar(name: str, dtype: ScalarDType, value: Any) -> np.ndarray:
    """The launch value of scalar parameter `name` as a 0-d array of its host dtype: a
    Python or numpy int (a bool for `bool`) in the type's range; else a USAGE error."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, np.generic):
        value = value.item()
    ok = isinstance(value, bool) if dtype.name == "bool" else (isinstance(value, int) and not isinstance(value, bool))
    if not ok or not dtype.min <= int(value) <= dtype.max:
        raise NpuOptError(f"parameter `{name}` is HbmScalar[{dtype}]: pass "
                          f"{a_an('bool' if dtype.name == 'bool' else f'int in [{dtype.min}, {dtype.max}]')}, "
                          f"not {value!r}", code="USAGE")
    return np.array(value, dtype.host_dtype)


def checked_start(value: Any, limit: int, where: str) -> int:
    """The run-time start `value` of a tile (docs/runtime.md#runtime-tile-starts) as an int;
    RUNTIME-10 when it is above `limit`: the cpu backend and the interpreter share this check."""
    start = int(value)
    if not 0 <= start <= limit:
        raise RunTimeRefusal(f"{where}: the runtime tile start {start} is outside 0..={limit}: the tile would run "
                          "past the values of its index", code="RUNTIME-10")
    return start
