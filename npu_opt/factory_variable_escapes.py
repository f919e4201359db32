"""Mapping escapes a kernel factory's variables cannot reach.

`m("A / {tile}")` looks `tile` up in the keyword arguments of `m`, then in the variables
of the code that calls it: the kernel body's own and its module's. A kernel made inside a
factory (`def make(tile): @device def k(...): ... m("A / {tile}")`) does not see the
factory's `tile` there (a name inside a string is no reference, so Python gives the body
no closure cell for it): it takes the module's `tile` when there is one, silently.
`@device` notes, when it decorates a kernel inside a function, every `{name}` of the
body's strings that names one of that function's variables; the trace refuses the
kernel (USAGE) when the module has another value under that name.
"""

from __future__ import annotations

import re
import types
from typing import Any

__all__ = ["factory_escapes", "shadowed_escapes"]

_ESCAPE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MISSING = object()


def _strings(code: types.CodeType) -> set[str]:
    found = set()
    for const in code.co_consts:
        if isinstance(const, str):
            found.add(const)
        elif isinstance(const, types.CodeType):
            found |= _strings(const)
    return found


def factory_escapes(fn: Any, frame: Any) -> dict[str, Any]:
    """The `{name}` escapes in `fn`'s strings that name a variable of the function running
    in `frame` (the factory decorating `fn`) and that `fn` itself does not bind or close
    over, with the factory's values. Empty at module level."""
    code = getattr(fn, "__code__", None)
    if frame is None or code is None or frame.f_code.co_name == "<module>":
        return {}
    names = {n for text in _strings(code) for n in _ESCAPE.findall(text)}
    own = set(code.co_varnames) | set(code.co_freevars) | set(code.co_cellvars)
    factory = frame.f_locals
    return {n: factory[n] for n in sorted(names - own) if n in factory}


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - the user's __repr__ may raise
        text = None
    text = text if isinstance(text, str) else f"<{type(value).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."


def shadowed_escapes(fn: Any, escapes: dict[str, Any]) -> list[tuple[str, str]]:
    """The USAGE message and fix of each noted escape that the module's variable of the
    same name would silently answer with another value."""
    found = []
    for name, value in escapes.items():
        module_value = fn.__globals__.get(name, _MISSING)
        if module_value is _MISSING:
            continue  # no module variable: `m()` reports the unknown escape itself
        try:
            same = module_value is value or bool(module_value == value)
        except Exception:  # noqa: BLE001 - a value without a usable == is not the same value
            same = False
        if not same:
            found.append((f"`{{{name}}}` in a mapping string of this kernel would take the module's `{name}` "
                          f"({_short(module_value)}), not the `{name}` of the function that made the kernel "
                          f"({_short(value)})",
                          f"pass it to the mapping: m(\"...{{{name}}}...\", {name}={name}), or write an f-string"))
    return found
