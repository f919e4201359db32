"""Axis declarations: `axes(A=2048, B=512)` and the module-scoped registry (docs/mapping-language.md).

A kernel module declares its axes once; `m()` calls in that module resolve symbols
against the registry stored in the module's globals.
"""

from __future__ import annotations

import re
import sys
from types import FrameType
from typing import Any

import attrs

from ir.errors import MappingError
from ir.location import OWN_PACKAGES
from ir.mapping.nodes import Symbol

__all__ = ["Axis", "axes", "registry_of", "caller_frame", "normalize_axes", "REGISTRY_NAME"]

REGISTRY_NAME = "__npu_opt_axes__"
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
# Rust's keywords (strict and reserved, 2021 edition and later): furiosa-opt's `axes!` cannot
# declare an axis by one of these names, so a kernel using one would not port back.
RUST_KEYWORDS = frozenset("""
    as async await break const continue crate dyn else enum extern false fn for gen if impl in let loop
    match mod move mut pub ref return self Self static struct super trait true type unsafe use where
    while abstract become box do final macro override priv try typeof unsized virtual yield
""".split())


@attrs.frozen
class Axis:
    """A declared axis: a name and a size; `.mapping` is the symbol `X`."""

    name: str
    size: int

    @property
    def mapping(self) -> Symbol:
        """The mapping made of this axis alone."""
        return Symbol(self.name, self.size)

    @property
    def SIZE(self) -> int:  # noqa: N802 - the reference spells it `Out::SIZE`
        """Alias of `size`, so `{Out.SIZE}` works in escapes."""
        return self.size


MAX_AXIS_SIZE = 2 ** 48


def check_axis(name: object, size: object, *, text: str | None = None, column: int | None = None) -> None:
    """Raise invalid_axis_decl unless `name` is an axis name and `size` a positive int."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise MappingError("invalid_axis_decl",
                           f"axis name {name!r} must match [A-Za-z][A-Za-z0-9_]* (ASCII, a letter first)",
                           text=text, column=column)
    if name in RUST_KEYWORDS:
        raise MappingError("invalid_axis_decl",
                           f"axis name {name!r} is a Rust keyword, which furiosa-opt cannot declare as an axis",
                           text=text, column=column)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise MappingError("invalid_axis_decl", f"axis {name} has size {size!r}; sizes must be integers >= 1",
                           text=text, column=column)
    if size >= MAX_AXIS_SIZE:  # the bound of every number in a mapping (docs/mapping-language.md, Limits)
        raise MappingError("limit", f"axis {name} has size {size}; sizes are below 2**48", text=text, column=column)


def normalize_axes(spec: Any) -> dict[str, int]:
    """Turn an `axes=` argument (dict, iterable of Axis, or None) into a checked dict."""
    if spec is None:
        return {}
    if isinstance(spec, dict):
        items = list(spec.items())
    else:
        try:
            items = [(a.name, a.size) for a in spec]
        except (TypeError, AttributeError):
            raise MappingError("invalid_axis_decl",
                               f"axes= must be a dict of name -> size or Axis objects, not {type(spec).__name__}") from None
    for name, size in items:
        check_axis(name, size)
    return dict(items)


def caller_frame() -> FrameType:
    """The innermost frame outside npu-opt's own packages (the user's code)."""
    frame = sys._getframe(1)
    while frame.f_back is not None:
        module = frame.f_globals.get("__name__", "")
        if module.split(".")[0] not in OWN_PACKAGES:
            return frame
        frame = frame.f_back
    return frame


def registry_of(module_globals: dict[str, Any]) -> dict[str, int]:
    """The axis registry of a module (created empty on first use)."""
    reg = module_globals.get(REGISTRY_NAME)
    if not isinstance(reg, dict):
        reg = {}
        module_globals[REGISTRY_NAME] = reg
    return reg


def axes(text: str | None = None, /, **sizes: int) -> tuple[Axis, ...]:
    """Declare axes in the calling module: `axes(A=2048, B=512)` or `axes("A = 2048, B = 512")`.

    Re-declaring a name with the same size is harmless; a different size, a bad name, a
    size below 1 or a name declared twice in one declaration raise MappingError
    (`invalid_axis_decl`). Returns the Axis objects, in declaration order."""
    decls: list[tuple[str, int, int | None]] = []
    if text is not None:
        if not isinstance(text, str):
            raise MappingError("invalid_axis_decl", f"axes() takes a declaration string, not {type(text).__name__}")
        from ir.mapping.parser import parse_axes_decl

        decls.extend(parse_axes_decl(text))
    decls.extend((name, size, None) for name, size in sizes.items())
    seen: dict[str, int] = {}
    for name, size, column in decls:
        check_axis(name, size, text=text if column else None, column=column)
        if name in seen:
            raise MappingError("invalid_axis_decl", f"axis {name} is declared twice in one declaration",
                               text=text if column else None, column=column)
        seen[name] = size
    reg = registry_of(caller_frame().f_globals)
    for name, size in seen.items():
        if reg.get(name, size) != size:
            raise MappingError("invalid_axis_decl",
                               f"axis {name} is already declared with size {reg[name]}, not {size}")
    reg.update(seen)
    return tuple(Axis(name, size) for name, size in seen.items())
