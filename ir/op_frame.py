"""The declarative frame of every op, traced (`ir.ops`) or lowered (`tu_ops`).

An op is a frozen attrs class whose fields carry one `role` each, with one meaning in
both layers:

- `result`: the value the op defines (`%n`);
- `operand`: a value the op reads (a tuple of them is flattened in order);
- `attr`: a printed, compared parameter of the op (`name=value`; `name` overrides the
  printed name);
- `type`: an IR type the lowered op records for its input or output (printed after `:`);
- `fact`: something recorded about the op (an inferred argument, an allocation) that
  is neither printed nor compared;
- `loc`: the user's source location, not compared.

An op's rules are a tuple of functions declared on the class with `@rule(code)`, in
the order they run; `RULES` is collected from the class body (and its bases) when the
class is made, so adding a rule is writing its function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import attrs

__all__ = ["OpFrame", "operand", "attr", "fact", "result_field", "loc_field", "rule"]


def operand(*, name: str | None = None, optional: bool = False) -> Any:
    """A value the op reads; `name` overrides the printed name (`in`); an `optional` one
    defaults to None, which reads nothing (and is not printed)."""
    if optional:
        return attrs.field(default=None, metadata={"role": "operand", "name": name, "optional": True})
    return attrs.field(metadata={"role": "operand", "name": name})


def attr(default: Any = attrs.NOTHING, *, name: str | None = None, converter: Any = None,
         optional: bool = False) -> Any:
    """A printed, compared parameter of the op; an `optional` one is printed only when it is
    not None (and a reader takes its absence for None)."""
    return attrs.field(default=default, converter=converter,
                       metadata={"role": "attr", "name": name, "optional": optional})


def fact(default: Any = None) -> Any:
    """A recorded fact about the op: not printed, not compared."""
    return attrs.field(default=default, eq=False, metadata={"role": "fact"})


def result_field(**kwargs: Any) -> Any:
    """The value the op defines."""
    return attrs.field(metadata={"role": "result"}, **kwargs)


def loc_field() -> Any:
    """The user's source location: not compared, not in the repr."""
    return attrs.field(default=None, eq=False, repr=False, metadata={"role": "loc"})


def rule(code: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a method as the op's rule `code` (a stable rule ID)."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.rule_code = code  # type: ignore[attr-defined]
        return fn

    return mark


class OpFrame:
    """Field access by role and the rule list; the layers add printing and their rule driver."""

    __slots__ = ()
    RULES: ClassVar[tuple[Callable[..., Any], ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = {name: fn for name, fn in vars(cls).items() if hasattr(fn, "rule_code")}
        # A rule assigned under another name (`_family = clip_family`) is matched by identity: attrs
        # rebuilds a slotted class from this one's namespace, RULES included, and runs this hook again.
        inherited = tuple(fn for fn in cls.RULES if fn.__name__ not in own and fn not in own.values())
        cls.RULES = inherited + tuple(own.values())

    def role_fields(self, role: str) -> Iterator[tuple[str, Any]]:
        """(printed name, value) of every field of `role`, in declaration order."""
        for f in attrs.fields(type(self)):
            if f.metadata.get("role") == role:
                yield (f.metadata.get("name") or f.name), getattr(self, f.name)

    def operands(self) -> list[Any]:
        """Operand values, in field order (tuples flattened)."""
        out: list[Any] = []
        for _, v in self.role_fields("operand"):
            out.extend(v if isinstance(v, tuple) else [] if v is None else [v])
        return out

    def attributes(self) -> list[tuple[str, Any]]:
        """(printed name, value) of every attribute field, in field order."""
        return list(self.role_fields("attr"))
