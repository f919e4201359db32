"""Tensor and stream types of the traced IR (docs/machine/index.md): a dtype plus level mappings.

`Hbm[D; Chip; Element]`, `Dm[D; Chip, Cluster, Slice; Element]`,
`Trf[D; Chip, Cluster, Slice; Lane, Element]`, `Stream[D; ...; Time, Packet]` (with the
Tensor Unit context that runs it) and `CStream[Acc, D; ...; Lane, Time, Packet]` for the
three intermediate contraction stages.
"""

from __future__ import annotations

import enum
from typing import Union

import attrs

from ir.dtypes import DType
from ir.errors import TypeCheckError
from ir.mapping.nodes import Mapping

__all__ = ["LaneMode", "HbmType", "DmType", "TrfType", "StreamType", "CStreamType", "VrfType", "SpmType", "Type", "MAIN", "SUB",
           "type_text"]

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


def _m(mapping: Mapping) -> str:
    return str(mapping)


@attrs.frozen
class HbmType:
    """An HBM tensor: `Hbm[D; Chip; Element]`."""

    dtype: DType
    chip: Mapping
    element: Mapping

    kind = "hbm"

    def levels(self) -> tuple[Mapping, ...]:
        return (self.chip, self.element)

    def __str__(self) -> str:
        return f"hbm<{self.dtype}; {_m(self.chip)}; {_m(self.element)}>"


@attrs.frozen
class DmType:
    """A DM tensor (or a view of one): `Dm[D; Chip, Cluster, Slice; Element]`."""

    dtype: DType
    chip: Mapping
    cluster: Mapping
    slice: Mapping
    element: Mapping

    kind = "dm"

    def levels(self) -> tuple[Mapping, ...]:
        return (self.chip, self.cluster, self.slice, self.element)

    def spatial(self) -> tuple[Mapping, Mapping, Mapping]:
        return (self.chip, self.cluster, self.slice)

    def __str__(self) -> str:
        return (f"dm<{self.dtype}; {_m(self.chip)}, {_m(self.cluster)}, {_m(self.slice)}; "
                f"{_m(self.element)}>")


@attrs.frozen
class TrfType:
    """A TRF tensor: `Trf[D; Chip, Cluster, Slice; Lane, Element]`."""

    dtype: DType
    chip: Mapping
    cluster: Mapping
    slice: Mapping
    lane: Mapping
    element: Mapping

    kind = "trf"

    def levels(self) -> tuple[Mapping, ...]:
        return (self.chip, self.cluster, self.slice, self.lane, self.element)

    def spatial(self) -> tuple[Mapping, Mapping, Mapping]:
        return (self.chip, self.cluster, self.slice)

    def __str__(self) -> str:
        return (f"trf<{self.dtype}; {_m(self.chip)}, {_m(self.cluster)}, {_m(self.slice)}; "
                f"{_m(self.lane)}, {_m(self.element)}>")


@attrs.frozen
class StreamType:
    """A Tensor Unit stream: `Stream[D; Chip, Cluster, Slice; Time, Packet]` in a context."""

    dtype: DType
    chip: Mapping
    cluster: Mapping
    slice: Mapping
    time: Mapping
    packet: Mapping
    context: str = MAIN

    kind = "stream"

    def levels(self) -> tuple[Mapping, ...]:
        return (self.chip, self.cluster, self.slice, self.time, self.packet)

    def spatial(self) -> tuple[Mapping, Mapping, Mapping]:
        return (self.chip, self.cluster, self.slice)

    def __str__(self) -> str:
        return (f"stream<{self.context}, {self.dtype}; {_m(self.chip)}, {_m(self.cluster)}, "
                f"{_m(self.slice)}; {_m(self.time)}; {_m(self.packet)}>")


@attrs.frozen
class CStreamType:
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

    def levels(self) -> tuple[Mapping, ...]:
        return (self.chip, self.cluster, self.slice, self.lane, self.time, self.packet)

    def spatial(self) -> tuple[Mapping, Mapping, Mapping]:
        return (self.chip, self.cluster, self.slice)

    def __str__(self) -> str:
        pre = f"; pre {_m(self.pre_time)}" if self.pre_time is not None else ""
        return (f"cstream<{self.acc}, {self.dtype}; {_m(self.chip)}, {_m(self.cluster)}, "
                f"{_m(self.slice)}; {_m(self.lane)}; {_m(self.time)}; {_m(self.packet)}{pre}>")


@attrs.frozen
class VrfType:
    """A Vector Register File tensor: `Vrf[D; Chip, Cluster, Slice; Element]` (i32 or f32)."""

    dtype: DType
    chip: Mapping
    cluster: Mapping
    slice: Mapping
    element: Mapping

    kind = "vrf"

    def levels(self) -> tuple[Mapping, ...]:
        return (self.chip, self.cluster, self.slice, self.element)

    def spatial(self) -> tuple[Mapping, Mapping, Mapping]:
        return (self.chip, self.cluster, self.slice)

    def __str__(self) -> str:
        return (f"vrf<{self.dtype}; {_m(self.chip)}, {_m(self.cluster)}, {_m(self.slice)}; "
                f"{_m(self.element)}>")


@attrs.frozen
class SpmType:
    """A scratchpad tensor: `Spm[D; Chip, Cluster, Pe; Element]`, `Element` held by each of the
    fused processing elements `Pe` names (docs/machine/spm.md)."""

    dtype: DType
    chip: Mapping
    cluster: Mapping
    pe: Mapping
    element: Mapping

    kind = "spm"

    def levels(self) -> tuple[Mapping, ...]:
        return (self.chip, self.cluster, self.pe, self.element)

    def __str__(self) -> str:
        return (f"spm<{self.dtype}; {_m(self.chip)}, {_m(self.cluster)}, {_m(self.pe)}; "
                f"{_m(self.element)}>")


Type = Union[HbmType, DmType, TrfType, StreamType, CStreamType, VrfType, SpmType]


def type_text(t: Type | None) -> str:
    """Printed form of a type (or `none`)."""
    return "none" if t is None else str(t)
