"""Type-directed decoding of VISA field values and IR types into the `tu_ops` records.

The parser's transformer turns each value into a positioned `Val`; `decode(val, hint)`
builds the Python value a record field declares (its annotation is the schema: ints, refs,
dtypes, enums, mappings, tuples of those, and the records' `struct` / `tuple` / `entry`
styles). `check_fields` enforces the field names, order and count of a record or struct;
`build_type` makes an IR type from `kind[dtypes, "mappings"]`. Every problem raises
`VisaTextError` at the offending value.
"""

from __future__ import annotations

import enum
import functools
import types
import typing
from typing import Any, Callable

import attrs

from ir.dtypes import DType
from ir.errors import MappingError
from ir.mapping.nodes import Mapping
from ir.mapping.parser import parse_mapping
from ir.types import CStreamType, DmType, HbmType, SpmType, StreamType, TrfType, VrfType
from tu_ops.base import Ref
from visa.artifact import VisaTextError
from ir.runtime_types import SCALAR_DTYPES, ScalarType
from ir.words import a_an

__all__ = ["Val", "RawType", "check_fields", "build_type", "printed_fields", "optional_fields"]


@attrs.frozen
class Val:
    """A parsed value: `kind` is the grammar alias (int, entry, ref, string, dtype, enum,
    enum_arg, list, tuple, struct), `data` its payload, at `line`:`col`."""

    kind: str
    data: Any
    line: int
    col: int


@attrs.frozen
class RawType:
    """`kind[dtype, ..., "mapping", ...]` as written, with positions: `dtypes` and `maps` are
    lists of `(text, line, col)`."""

    kind: str
    dtypes: tuple[tuple[str, int, int], ...]
    maps: tuple[tuple[str, int, int], ...]
    line: int
    col: int


class Decoder:
    """Decodes values against an axis table; records every `%n` it meets in `uses`."""

    def __init__(self, axes: dict[str, int], source: str) -> None:
        self.axes = axes
        self.source = source
        self.uses: list[tuple[int, int, int]] = []  # (value id, line, col)

    def error(self, msg: str, line: int, col: int) -> VisaTextError:
        return VisaTextError(msg, line=line, column=col, source=self.source)

    # --- scalars ---------------------------------------------------------------------------

    def mapping(self, text: str, line: int, col: int) -> Mapping:
        """Parse a quoted mapping (`col` is the opening quote's column)."""
        try:
            return parse_mapping(text, self.axes)
        except MappingError as e:
            inner = (e.column or 1) - 1
            raise self.error(f"bad mapping \"{text}\": {e.detail}", line, col + 1 + inner) from None
        except RecursionError:
            raise self.error(f"mapping \"{text}\" is nested too deeply", line, col) from None

    def dtype(self, name: str, line: int, col: int) -> DType:
        try:
            return DType(name)
        except ValueError:
            names = ", ".join(d.value for d in DType)
            raise self.error(f"unknown dtype `{name}`; expected one of {names}", line, col) from None

    def member(self, cls: type[enum.Enum], name: str, line: int, col: int) -> enum.Enum:
        if name in cls.__members__:
            return cls[name]
        names = ", ".join(cls.__members__)
        raise self.error(f"`{name}` is not {a_an(cls.__name__)}; expected one of {names}", line, col)

    # --- values ----------------------------------------------------------------------------

    def decode(self, val: Val, hint: Any, what: str) -> Any:
        """The value of `val` as the annotation `hint` declares (`what` names it in messages)."""
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin in (typing.Union, types.UnionType):
            return self.decode(val, next(a for a in args if a is not type(None)), what)
        if origin is tuple:
            items = self.expect(val, "list", f"`{what}` is a list `[...]`")
            return tuple(self.decode(v, args[0], what) for v in items)
        if hint is int:
            number = int(self.expect(val, "int", f"`{what}` is an integer"))
            if abs(number) >= INT_LIMIT:
                raise self.error(f"`{what}` is {number}; a VISA integer field is below 2**48 in magnitude",
                                 val.line, val.col)
            return number
        if hint is Ref:
            ident = int(self.expect(val, "ref", f"`{what}` is a value `%n`")[1:])
            self.uses.append((ident, val.line, val.col))
            return Ref(ident)
        if hint is DType:
            return self.dtype(self.expect(val, "dtype", f"`{what}` is a dtype such as `i8`"), val.line, val.col)
        if hint is Mapping:
            return self.mapping(self.expect(val, "string", f"`{what}` is a quoted mapping")[1:-1], val.line, val.col)
        if isinstance(hint, type) and (issubclass(hint, enum.Enum) or "__members__" in vars(type(hint))):  # DestKind too
            name = self.expect(val, "enum", f"`{what}` is one of {', '.join(hint.__members__)}")
            return self.member(hint, name, val.line, val.col)
        if attrs.has(hint):
            return self.record(val, hint, what)
        raise self.error(f"`{what}`: no text form for {hint!r}", val.line, val.col)

    def expect(self, val: Val, kind: str, msg: str) -> Any:
        if val.kind != kind:
            raise self.error(f"{msg}, not {_describe(val)}", val.line, val.col)
        return val.data

    def record(self, val: Val, cls: type, what: str) -> Any:
        """A struct `{a=.., b=..}`, tuple `(a, b)`, entry `a:b:c` or `KIND` / `KIND(n)` value."""
        hints = _hints(cls)
        names = [f.name for f in attrs.fields(cls) if f.init]
        style = getattr(cls, "TEXT_STYLE", None)
        if val.kind in ("enum", "enum_arg") and style is None:  # Conversion: `I8_TO_I32`, `ZP_SUB(-3)`
            name, arg = (val.data, None) if val.kind == "enum" else val.data
            kind = self.member(hints[names[0]], name, val.line, val.col)
            return self.construct(cls, val, kind, *(() if arg is None else (arg,)))
        if val.kind == "entry" and len(val.data.split(":")) == len(names):
            parts = [Val("int" if _is_int(p) else "enum", int(p) if _is_int(p) else p, val.line, val.col)
                     for p in val.data.split(":")]
            return self.construct(cls, val, *(self.decode(p, hints[n], f"{what}.{n}") for p, n in zip(parts, names)))
        if val.kind == "entry":
            shape = ":".join(names)
            raise self.error(f"`{what}` holds loop entries `{shape}`, not `{val.data}`", val.line, val.col)
        if style == "tuple" and val.kind == "tuple":
            if len(val.data) != len(names):
                raise self.error(f"`{what}` is a tuple ({', '.join(names)}) of {len(names)} items, "
                                 f"not {len(val.data)}", val.line, val.col)
            return self.construct(cls, val, *(self.decode(v, hints[n], f"{what}.{n}") for v, n in zip(val.data, names)))
        if style == "struct" and val.kind == "struct":
            present = {item[0] for item in val.data}  # a field marked omit_default may be left out
            names = [f.name for f in attrs.fields(cls) if f.init and (f.name in present or not f.metadata.get("omit_default"))]
            given = check_fields(self, val.data, names, f"`{what}`", val.line, val.col)
            return self.construct(cls, val, **{n: self.decode(v, hints[n], f"{what}.{n}") for n, v in given})
        form = {"tuple": "a tuple (...)", "struct": "a struct {...}"}.get(style, "a loop entry or an enum")
        raise self.error(f"`{what}` is {form}, not {_describe(val)}", val.line, val.col)

    def construct(self, cls: Callable[..., Any], val: Val, *args: Any, **kwargs: Any) -> Any:
        try:
            return cls(*args, **kwargs)
        except (TypeError, ValueError, ArithmeticError) as e:
            raise self.error(f"bad {getattr(cls, '__name__', 'value')}: {e}", val.line, val.col) from None


INT_LIMIT = 2 ** 48  # no count, size, stride or address of the target comes near it


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _describe(val: Val) -> str:
    kinds = {"int": "an integer", "entry": "a loop entry", "ref": "a value reference", "string": "a string",
             "dtype": "a lowercase name", "enum": "an enum name", "enum_arg": "an enum with an argument",
             "list": "a list", "tuple": "a tuple", "struct": "a struct"}
    return kinds.get(val.kind, val.kind)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def printed_fields(cls: type) -> list[tuple[str, str, Any]]:
    """(printed name, attribute name, annotation) of a record class's operand and attr fields."""
    hints = _hints(cls)
    return [(f.metadata.get("name") or f.name, f.name, hints[f.name]) for f in attrs.fields(cls)
            if f.metadata.get("role") in ("operand", "attr")]


def optional_fields(cls: type) -> frozenset[str]:
    """Printed names of a record class's optional fields (absent in the text means None): those
    marked optional, and those with a default of None, printed only when set (`feed_buffer interleave=`)."""
    return frozenset(f.metadata.get("name") or f.name for f in attrs.fields(cls)
                     if f.metadata.get("optional") or f.default is None)


def check_fields(dec: Decoder, given: list[tuple[str, Val, int, int]], names: list[str], what: str,
                 line: int, col: int) -> list[tuple[str, Val]]:
    """Check `name=value` items against the expected names in order: each exactly once, no
    unknown ones. `given` is `(name, value, line, col)`; returns `(name, value)` pairs."""
    seen: dict[str, int] = {}
    for i, (name, _, fl, fc) in enumerate(given):
        if name not in names:
            raise dec.error(f"{what} has no field `{name}`; its fields are {', '.join(names)}", fl, fc)
        if name in seen:
            raise dec.error(f"field `{name}` of {what} is given twice", fl, fc)
        seen[name] = i
    for i, name in enumerate(names):
        if name not in seen:
            at = given[i] if i < len(given) else None
            where = (at[2], at[3]) if at else (line, col)
            raise dec.error(f"{what} lacks field `{name}` (fields, in order: {', '.join(names)})", *where)
        if seen[name] != i:
            _, _, fl, fc = given[i]
            raise dec.error(f"field `{given[i][0]}` of {what} is out of order: expected `{name}` here "
                            f"(fields, in order: {', '.join(names)})", fl, fc)
    return [(name, value) for name, value, _, _ in given]


_TYPES = {cls.kind: cls for cls in (HbmType, DmType, SpmType, StreamType, TrfType, VrfType, CStreamType)}
_STORED = ("hbm", "dm", "spm")  # the kinds whose spatial levels are written; the others live in a program's space


def build_type(dec: Decoder, raw: RawType, space: tuple[Mapping, Mapping, Mapping] | None,
               context: str | None) -> Any:
    """The IR type `raw` spells: its dtype (a cstream's accumulator first), then the level
    mappings of the type (`GROUPS`, outer to inner); inside a program, `space` and `context`
    complete stream, TRF and cstream types (their spatial mappings are omitted there)."""
    if raw.kind == "scalar":  # a runtime scalar (docs/runtime.md)
        return scalar_type(dec, raw)
    cls = _TYPES[raw.kind]
    ndt, levels = (2 if raw.kind == "cstream" else 1), [name for group in cls.GROUPS[1:] for name in group]
    if raw.kind in ("trf", "vrf") and space is None and len(raw.maps) == len(levels):  # a register tensor of `new()`
        space, raw = tuple(dec.mapping(*m) for m in raw.maps[:3]), attrs.evolve(raw, maps=raw.maps[3:])
    if raw.kind not in _STORED and space is None:
        raise dec.error(f"a `{raw.kind}` type is only written inside a program block", raw.line, raw.col)
    written = levels if raw.kind in _STORED else levels[3:]
    if len(raw.dtypes) != ndt or len(raw.maps) != len(written):
        dts = "two dtypes (accumulator, element)" if ndt == 2 else "one dtype"
        names = ", ".join(name.capitalize() for name in written)
        raise dec.error(f"a `{raw.kind}` type takes {dts} and {len(written)} mappings ({names}), "
                        f"not {len(raw.dtypes)} and {len(raw.maps)}", raw.line, raw.col)
    dts = [dec.dtype(*d) for d in raw.dtypes]
    maps = [dec.mapping(*m) for m in raw.maps]
    if raw.kind in _STORED:
        return cls(*dts, *maps)
    if raw.kind in ("stream", "cstream"):  # a stream carries its program's context
        return cls(*dts, *space, *maps, context=context)
    return cls(*dts, *space, *maps)


def scalar_type(dec: Decoder, raw: RawType) -> ScalarType:
    """`scalar[T]`: one runtime scalar type name and no mapping."""
    if len(raw.dtypes) != 1 or raw.maps:
        raise dec.error("a `scalar` type takes one type name and no mapping: scalar[u32]", raw.line, raw.col)
    name, line, col = raw.dtypes[0]
    if name not in SCALAR_DTYPES:
        raise dec.error(f"unknown scalar type `{name}`; expected one of {', '.join(SCALAR_DTYPES)}", line, col)
    return ScalarType(SCALAR_DTYPES[name])
