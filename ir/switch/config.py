"""`SwitchConfig`: the Switch Engine topology a kernel picks, one Python value per variant.

The seven variants are the reference's, named by the enum rule of the kernel surface:
the unit variant is an attribute (`SwitchConfig.FORWARDING`), each struct variant is
called with its fields by keyword (`SwitchConfig.BROADCAST1(slice1=4, slice0=64)`).
Anything else is refused with code SWITCH-1: a struct variant used without being called,
a positional argument, a missing or unknown field, a field that is not an integer.
Field values are not judged here (a zero or a 3 is legal Python and a diagnostic of the
switch rules, which see the stream it meets); only the shape of the value is.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ir.errors import TypeCheckError

__all__ = [
    "SwitchConfig", "SwitchVariant", "Forwarding", "Broadcast01", "Broadcast1", "Transpose",
    "InterTranspose", "CustomBroadcast", "TransposedBroadcast1", "as_switch_config", "CONFIG_CODE",
    "MAX_SLICES",
]

CONFIG_CODE = "SWITCH-1"
MAX_SLICES = 256  # the slices of one chip's ring, which an INTER_TRANSPOSE spans


def _refuse(message: str) -> TypeCheckError:
    return TypeCheckError(message, code=CONFIG_CODE)


class SwitchVariant:
    """One `SwitchConfig` value: a variant name and its integer fields (in reference order).

    Immutable, hashable, compared by variant and fields."""

    NAME: ClassVar[str] = ""
    FIELDS: ClassVar[tuple[str, ...]] = ()
    __slots__ = ("_values",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        usage = self.usage()
        if args:
            raise _refuse(f"`{usage}` takes its fields by keyword, not {len(args)} positional "
                          f"argument(s)")
        unknown = sorted(set(kwargs) - set(self.FIELDS))
        if unknown:
            raise _refuse(f"`SwitchConfig.{self.NAME}` has no field {', '.join(unknown)}; "
                          f"it is `{usage}`")
        missing = [f for f in self.FIELDS if f not in kwargs]
        if missing:
            raise _refuse(f"`SwitchConfig.{self.NAME}` is missing field {', '.join(missing)}; "
                          f"it is `{usage}`")
        for name in self.FIELDS:
            value = kwargs[name]
            if isinstance(value, bool) or not isinstance(value, int):
                raise _refuse(f"`SwitchConfig.{self.NAME}` field `{name}` must be an integer, "
                              f"not {type(value).__name__} {value!r}")
        object.__setattr__(self, "_values", tuple(int(kwargs[f]) for f in self.FIELDS))

    @classmethod
    def usage(cls) -> str:
        """How the variant is written: `SwitchConfig.BROADCAST1(slice1=.., slice0=..)`."""
        if not cls.FIELDS:
            return f"SwitchConfig.{cls.NAME}"
        return f"SwitchConfig.{cls.NAME}(" + ", ".join(f"{f}=.." for f in cls.FIELDS) + ")"

    def __getattr__(self, name: str) -> int:
        fields = type(self).FIELDS
        if name in fields:
            return self._values[fields.index(name)]
        raise AttributeError(f"SwitchConfig.{type(self).NAME} has no field {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("SwitchConfig values are immutable")

    def fields(self) -> dict[str, int]:
        """The fields by name, in reference order."""
        return dict(zip(self.FIELDS, self._values))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._values == self._values  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.NAME, self._values))

    def __repr__(self) -> str:
        if not self.FIELDS:
            return f"SwitchConfig.{self.NAME}"
        inner = ", ".join(f"{k}={v}" for k, v in self.fields().items())
        return f"SwitchConfig.{self.NAME}({inner})"

    __str__ = __repr__


class Forwarding(SwitchVariant):
    """Every slice keeps its own data (ring size 1); Slice and Time unchanged."""

    NAME = "FORWARDING"


class Broadcast01(SwitchVariant):
    """slice1 and slice0 move to Time; two broadcast tiles take their Slice places."""

    NAME = "BROADCAST01"
    FIELDS = ("slice1", "slice0", "time0")


class Broadcast1(SwitchVariant):
    """slice1 moves to the innermost Time; a broadcast tile takes its Slice place."""

    NAME = "BROADCAST1"
    FIELDS = ("slice1", "slice0")


class Transpose(SwitchVariant):
    """slice1 and slice0 swap inside Slice; Time unchanged."""

    NAME = "TRANSPOSE"
    FIELDS = ("slice1", "slice0")


class InterTranspose(SwitchVariant):
    """slice1 and the Time digit time1 (of the same size) swap across Slice and Time."""

    NAME = "INTER_TRANSPOSE"
    FIELDS = ("slice1", "slice0", "time0")


class CustomBroadcast(SwitchVariant):
    """Any permutation/broadcast the mappings state, routed in sub-rings of `ring_size`."""

    NAME = "CUSTOM_BROADCAST"
    FIELDS = ("ring_size",)


class TransposedBroadcast1(SwitchVariant):
    """slice0 moves to the innermost Time, slice1 to the innermost Slice, a tile between."""

    NAME = "TRANSPOSED_BROADCAST1"
    FIELDS = ("slice1", "slice0")


_VARIANTS: tuple[type[SwitchVariant], ...] = (
    Forwarding, Broadcast01, Broadcast1, Transpose, InterTranspose, CustomBroadcast, TransposedBroadcast1,
)


class _SwitchConfigMeta(type):
    def __setattr__(cls, name: str, value: Any) -> None:
        raise AttributeError("SwitchConfig is read only")

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_") or not name.isupper():  # not a variant spelling: hasattr() etc. see no attribute
            raise AttributeError(name)
        known = ", ".join(v.NAME for v in _VARIANTS)
        raise _refuse(f"SwitchConfig has no variant {name}; the variants are {known}")


class SwitchConfig(metaclass=_SwitchConfigMeta):
    """The Switch Engine configurations (a namespace; never instantiated)."""

    FORWARDING: ClassVar[Forwarding] = Forwarding()
    BROADCAST01: ClassVar[type[Broadcast01]] = Broadcast01
    BROADCAST1: ClassVar[type[Broadcast1]] = Broadcast1
    TRANSPOSE: ClassVar[type[Transpose]] = Transpose
    INTER_TRANSPOSE: ClassVar[type[InterTranspose]] = InterTranspose
    CUSTOM_BROADCAST: ClassVar[type[CustomBroadcast]] = CustomBroadcast
    TRANSPOSED_BROADCAST1: ClassVar[type[TransposedBroadcast1]] = TransposedBroadcast1

    def __new__(cls, *args: Any, **kwargs: Any) -> SwitchConfig:
        raise _refuse("SwitchConfig is not called itself; pick a variant, e.g. "
                      "`SwitchConfig.BROADCAST1(slice1=4, slice0=64)`")


def as_switch_config(value: object) -> SwitchVariant:
    """`value` as a switch configuration, or a SWITCH-1 error saying how to write one."""
    if isinstance(value, SwitchVariant):
        return value
    if isinstance(value, type) and issubclass(value, SwitchVariant) and value.FIELDS:
        raise _refuse(f"`SwitchConfig.{value.NAME}` carries data and must be called: `{value.usage()}`")
    raise _refuse(f"the switch configuration must be a SwitchConfig variant, not "
                  f"{type(value).__name__} {value!r}; e.g. `SwitchConfig.FORWARDING`")
