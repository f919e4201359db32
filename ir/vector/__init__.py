"""The Vector Engine's framework-independent foundation: its enums, operand kinds,
value rules and the exact numerics of every op (see README.md in this package)."""

from ir.vector.enums import *  # noqa: F403
from ir.vector.enums import __all__ as _enum_names
from ir.vector.errors import RULES, VectorRuleError
from ir.vector.variants import RustEnum, VariantConstructor, expect

__all__ = [*_enum_names, "RULES", "VectorRuleError", "RustEnum", "VariantConstructor", "expect"]
