"""Tensor and stream types of the traced IR (docs/machine/index.md): a dtype plus level mappings.

`Hbm[D; Chip; Element]`, `Dm[D; Chip, Cluster, Slice; Element]`,
`Trf[D; Chip, Cluster, Slice; Lane, Element]`, `Stream[D; ...; Time, Packet]` (with the
Tensor Unit context that runs it) and `CStream[Acc, D; ...; Lane, Time, Packet]` for the
three intermediate contraction stages.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Union

import attrs

from ir.dtypes import DType
from ir.errors import TypeCheckError
from ir.mapping.nodes import Mapping

__all__ = ["LaneMode", "HbmType", "DmType", "TrfType", "StreamType", "CStreamType", "VrfType", "SpmType", "Type", "MAIN", "SUB",
           "type_text", "same_layout"]

MAIN = "main"
SUB = "sub"


class LaneMode(enum.Enum):
    """How the Lane Folder drains the accumulator into the output stream."""

    INTERLEAVED = "interleaved"
    SEQUENTIAL = "sequential"

    def __str__(self) -> str:
        return self.value

    def __call__(self, *args: object, **kwargs: object) -> None:
        """`LaneMode.INTERLEAVED()`: a variant without data is a value (porting rule 4)."""
        raise TypeCheckError(f"`LaneMode.{self.name}` is a value, so it cannot be called: "
                             f"write `LaneMode.{self.name}` without parentheses", code="TYPE-6")


_SPACE = ("chip", "cluster", "slice")


class _Levels:
    """What every type derives from `GROUPS`, its fields in the `;`-separated parts of its
    text (`dm<bf16; C, 1, S; E>`): the level mappings (the fields of every part but the
    first, outer to inner) and the text itself."""

    __slots__ = ()
    kind: ClassVar[str] = ""
    GROUPS: ClassVar[tuple[tuple[str, ...], ...]] = ()

    def levels(self) -> tuple[Mapping, ...]:
        return tuple(getattr(self, name) for group in self.GROUPS[1:] for name in group)

    def spatial(self) -> tuple[Mapping, Mapping, Mapping]:
        """Chip, Cluster and Slice (of the types that place data in slices)."""
        return (self.chip, self.cluster, self.slice)  # type: ignore[attr-defined]

    def __str__(self) -> str:
        parts = (", ".join(str(getattr(self, name)) for name in group) for group in self.GROUPS)
        return f"{self.kind}<{'; '.join(parts)}>"


@attrs.frozen
class HbmType(_Levels):
    """An HBM tensor: `Hbm[D; Chip; Element]`."""

    dtype: DType
    chip: Mapping
    element: Mapping

    kind = "hbm"
    GROUPS = (("dtype",), ("chip",), ("element",))


@attrs.frozen
class DmType(_Levels):
    """A DM tensor (or a view of one): `Dm[D; Chip, Cluster, Slice; Element]`."""

    dtype: DType
    chip: Mapping
    cluster: Mapping
    slice: Mapping
    element: Mapping

    kind = "dm"
    GROUPS = (("dtype",), _SPACE, ("element",))


@attrs.frozen
class TrfType(_Levels):
    """A TRF tensor: `Trf[D; Chip, Cluster, Slice; Lane, Element]`."""

    dtype: DType
    chip: Mapping
    cluster: Mapping
    slice: Mapping
    lane: Mapping
    element: Mapping

    kind = "trf"
    GROUPS = (("dtype",), _SPACE, ("lane", "element"))


@attrs.frozen
class StreamType(_Levels):
    """A Tensor Unit stream: `Stream[D; Chip, Cluster, Slice; Time, Packet]` in a context."""

    dtype: DType
    chip: Mapping
    cluster: Mapping
    slice: Mapping
    time: Mapping
    packet: Mapping
    context: str = MAIN

    kind = "stream"
    GROUPS = (("context", "dtype"), _SPACE, ("time",), ("packet",))


@attrs.frozen
class CStreamType(_Levels):
    """An intermediate contraction stream: `CStream[Acc, D; ...; Lane, Time, Packet]`.

    `pre_time` is the time before `contract_time` (kept for LANE-6), None before it."""

    acc: DType
    dtype: DType
    chip: Mapping
    cluster: Mapping
    slice: Mapping
    lane: Mapping
    time: Mapping
    packet: Mapping
    pre_time: Mapping | None = None
    context: str = MAIN

    kind = "cstream"
    GROUPS = (("acc", "dtype"), _SPACE, ("lane",), ("time",), ("packet",))

    def __str__(self) -> str:
        pre = f"; pre {self.pre_time}" if self.pre_time is not None else ""
        return f"{_Levels.__str__(self)[:-1]}{pre}>"


@attrs.frozen
class VrfType(_Levels):
    """A Vector Register File tensor: `Vrf[D; Chip, Cluster, Slice; Element]` (i32 or f32)."""

    dtype: DType
    chip: Mapping
    cluster: Mapping
    slice: Mapping
    element: Mapping

    kind = "vrf"
    GROUPS = (("dtype",), _SPACE, ("element",))


@attrs.frozen
class SpmType(_Levels):
    """A scratchpad tensor: `Spm[D; Chip, Cluster, Pe; Element]`, `Element` held by each of the
    fused processing elements `Pe` names (docs/machine/spm.md)."""

    dtype: DType
    chip: Mapping
    cluster: Mapping
    pe: Mapping
    element: Mapping

    kind = "spm"
    GROUPS = (("dtype",), ("chip", "cluster", "pe"), ("element",))


Type = Union[HbmType, DmType, TrfType, StreamType, CStreamType, VrfType, SpmType]


def type_text(t: Type | None) -> str:
    """Printed form of a type (or `none`)."""
    return "none" if t is None else str(t)


def same_layout(a: Type, b: Type) -> bool:
    """Whether `a` and `b` are one type by meaning: the same kind and dtype, and levels of the
    same cells at the same places (`1 # 16` and `(1, 1 # 16)` are one layout)."""
    return a == b or (type(a) is type(b) and a.dtype == b.dtype and len(a.levels()) == len(b.levels())
                      and all(x.equivalent(y) for x, y in zip(a.levels(), b.levels())))
