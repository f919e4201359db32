"""Rust-style enums in Python (the surface's enum rule): unit, tuple and struct variants.

An enum is a class deriving `RustEnum` whose class attributes are variant specs:

    class FpBinaryOp(RustEnum):
        ADD_F = Unit("AddF")
        MUL_F = Tuple("MulF", Field("alu", enum_field(FpMulAlu)))

A unit variant becomes a value of the class (`FpBinaryOp.ADD_F`); a data variant becomes
a `VariantConstructor` that builds one when called (`FpBinaryOp.MUL_F(FpMulAlu.MUL0)`).
Tuple variants take their values positionally, struct variants by keyword. Every misuse
raises a `VectorRuleError` with a VE-ENUM rule at the user's line; a method that takes an
enum argument calls `expect(...)`, which also catches a constructor passed uncalled.
Values are immutable, hashable and compare by enum, variant and data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs
import numpy as np

from ir.vector.errors import refuse
from ir.words import a_an

__all__ = ["Field", "Unit", "Tuple", "Struct", "RustEnum", "VariantConstructor", "expect", "enum_field"]


@attrs.frozen
class Field:
    """One datum of a variant: its name, and `convert`, which returns the stored value or
    raises `ValueError(reason)` (reported as VE-ENUM-3) or a VectorRuleError of its own."""

    name: str
    convert: Callable[[Any], Any]
    kind: str


@attrs.frozen
class Unit:
    """Spec of a variant without data; `rust` is the reference's variant name."""

    rust: str


@attrs.frozen
class _DataSpec:
    """Spec of a variant with data: the reference's name and the fields in order."""

    rust: str
    fields: tuple[Field, ...] = attrs.field(converter=tuple)

    def __init__(self, rust: str, *fields: Field) -> None:
        self.__attrs_init__(rust, fields)


class Tuple(_DataSpec):
    """Spec of a tuple variant: values passed positionally."""


class Struct(_DataSpec):
    """Spec of a struct variant: values passed by keyword."""


class _EnumMeta(type):
    """Iterating an enum class yields its members (values and constructors) in order."""

    def __iter__(cls) -> Iterator[Any]:
        return iter(getattr(cls, n) for n in cls._member_names)

    def __len__(cls) -> int:
        return len(cls._member_names)


class RustEnum(metaclass=_EnumMeta):
    """Base of every Rust-style enum; instances are the enum's values."""

    __slots__ = ("name", "rust_name", "values", "_spec")
    _member_names: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = []
        for name, spec in list(vars(cls).items()):
            if isinstance(spec, (Unit, Tuple, Struct)):
                names.append(name)
                member = _new_value(cls, name, spec, ()) if isinstance(spec, Unit) \
                    else VariantConstructor(cls, name, spec)
                setattr(cls, name, member)
        cls._member_names = tuple(names)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} values are immutable")

    def __getattr__(self, key: str) -> Any:
        spec = object.__getattribute__(self, "_spec")
        for field, value in zip(getattr(spec, "fields", ()), object.__getattribute__(self, "values")):
            if field.name == key:
                return value
        raise AttributeError(f"{type(self).__name__}.{self.name} has no field {key!r}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        what = "carries no data" if isinstance(self._spec, Unit) else "already holds its data"
        raise refuse("VE-ENUM-5", f"`{self!r}` {what}, so it cannot be called",
                     help=f"write `{self!r}` without parentheses")

    def __eq__(self, other: object) -> bool:
        return (type(other) is type(self) and other.name == self.name  # type: ignore[attr-defined]
                and other.values == self.values)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name, self.values))

    def __repr__(self) -> str:
        head = f"{type(self).__name__}.{self.name}"
        if isinstance(self._spec, Unit):
            return head
        if isinstance(self._spec, Struct):
            inner = ", ".join(f"{f.name}={_show(v)}" for f, v in zip(self._spec.fields, self.values))
        else:
            inner = ", ".join(_show(v) for v in self.values)
        return f"{head}({inner})"

    def __copy__(self) -> Any:
        return self  # immutable

    def __deepcopy__(self, memo: dict) -> Any:
        return self

    def __reduce__(self) -> tuple:
        return _rebuild, (type(self), self.name, self.values)

    def is_(self, member: Any) -> bool:
        """Whether this value is the unit `member` or was built by the constructor `member`."""
        if isinstance(member, VariantConstructor):
            return member.enum is type(self) and member.name == self.name
        return member == self

    @property
    def fields(self) -> dict[str, Any]:
        """The variant's data by field name (empty for a unit variant)."""
        return {f.name: v for f, v in zip(getattr(self._spec, "fields", ()), self.values)}


def _show(value: Any) -> str:
    """A field value as a kernel would write it (f32 scalars as plain floats, lists as lists)."""
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, np.generic):
        return repr(value.item())
    return repr(value)


def _rebuild(cls: type, name: str, values: tuple) -> Any:
    """Unpickle a value: the unit member itself, or the data variant rebuilt unchecked."""
    member = getattr(cls, name)
    return member if isinstance(member, RustEnum) else _new_value(cls, name, member.spec, values)


def _new_value(cls: type, name: str, spec: Any, values: tuple) -> Any:
    value = object.__new__(cls)
    for key, item in (("name", name), ("rust_name", spec.rust), ("values", values), ("_spec", spec)):
        object.__setattr__(value, key, item)
    return value


class VariantConstructor:
    """A data-carrying variant before it has its data; calling it builds the value."""

    __slots__ = ("enum", "name", "spec")

    def __init__(self, enum: type, name: str, spec: Tuple | Struct) -> None:
        self.enum, self.name, self.spec = enum, name, spec

    @property
    def rust_name(self) -> str:
        return self.spec.rust

    def __repr__(self) -> str:
        return f"{self.enum.__name__}.{self.name}"

    def usage(self) -> str:
        """How a call looks, for messages: `FpBinaryOp.MUL_F(<FpMulAlu>)`."""
        if isinstance(self.spec, Struct):
            inner = ", ".join(f"{f.name}=<{f.kind}>" for f in self.spec.fields)
        else:
            inner = ", ".join(f"<{f.kind}>" for f in self.spec.fields)
        return f"{self!r}({inner})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raw = self._bind(args, kwargs)
        values = []
        for field, item in zip(self.spec.fields, raw):
            try:
                values.append(field.convert(item))
            except ValueError as e:
                raise refuse("VE-ENUM-3", f"`{self!r}` field `{field.name}` takes {field.kind}: {e}",
                             help=f"write `{self.usage()}`") from None
        return _new_value(self.enum, self.name, self.spec, tuple(values))

    def _bind(self, args: tuple, kwargs: dict) -> list[Any]:
        fields = self.spec.fields
        names = [f.name for f in fields]
        if isinstance(self.spec, Tuple):
            if kwargs or len(args) != len(fields):
                got = f"{len(args)} positional" + (f" and keywords {sorted(kwargs)}" if kwargs else "")
                raise refuse("VE-ENUM-2", f"`{self!r}` takes {len(fields)} positional value(s), got {got}",
                             help=f"write `{self.usage()}`")
            return list(args)
        if args or set(kwargs) != set(names):
            got = f"keywords {sorted(kwargs)}" + (f" and {len(args)} positional" if args else "")
            raise refuse("VE-ENUM-2", f"`{self!r}` takes the keyword(s) {names}, got {got}",
                         help=f"write `{self.usage()}`")
        return [kwargs[n] for n in names]


def _describe(value: Any) -> str:
    if isinstance(value, (RustEnum, VariantConstructor)):
        return f"`{value!r}`"
    return f"{value!r} ({type(value).__name__})"


def expect(enum: type | tuple[type, ...], value: Any, *, method: str | None = None) -> Any:
    """`value` if it is a value of `enum` (a class or a tuple of classes); otherwise a
    VE-ENUM-1 (an uncalled constructor of `enum`) or VE-ENUM-4 error located at the user's
    call of `method`."""
    enums = enum if isinstance(enum, tuple) else (enum,)
    if isinstance(value, enums):
        return value
    if isinstance(value, VariantConstructor) and value.enum in enums:
        raise refuse("VE-ENUM-1", f"`{value!r}` carries data and was used without it",
                     help=f"write `{value.usage()}`", method=method)
    wanted = " or ".join(e.__name__ for e in enums)
    raise refuse("VE-ENUM-4", f"expected {a_an(wanted)}, got {_describe(value)}", method=method)


def enum_field(enum: type) -> Callable[[Any], Any]:
    """A field converter accepting exactly the values of `enum`."""

    def convert(value: Any) -> Any:
        if isinstance(value, enum):
            return value
        if isinstance(value, VariantConstructor) and value.enum is enum:
            raise ValueError(f"{value!r} is a constructor; write {value.usage()}")
        raise ValueError(f"got {_describe(value)}")

    convert.__name__ = f"{enum.__name__}_field"
    return convert
