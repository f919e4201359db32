"""A Vector Engine record's steps (`VeStep`) and the stream shape each one reads, from the
record's input shape and the way changes of the steps before it (ir.vector.units' SHAPES).
Below the records that hold steps (tu_ops.vector, tu_ops.vrf) and their reduce checks."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ir.vector.units import SHAPES, VeMode, VeOpName, VeUnit, spec_of
from tu_ops.valid_count import PackConfig

__all__ = ["VeStep", "reshape", "stream_before"]


def reshape(unit: VeUnit, shape: tuple, before_trim: Any) -> tuple[tuple, Any]:
    """(time, packet) after a step, and the shape a trim left (a pad after a trim restores it)."""
    kind = spec_of(unit).shape
    if kind == "pad" and before_trim is not None:
        return before_trim, None
    if not kind:
        return shape, before_trim
    return SHAPES[kind](*shape), (shape if kind == "trim" else None)


@attrs.frozen
class VeStep:
    """One configured stage of the pass."""

    TEXT_STYLE: ClassVar[str] = "struct"
    unit: VeUnit
    op: VeOpName
    arg: int
    mode: VeMode = attrs.field(default=VeMode.DEFAULT, metadata={"omit_default": True})
    arg1: int = attrs.field(default=0, metadata={"omit_default": True})
    vcg: PackConfig | None = attrs.field(default=None, metadata={"omit_default": True})  # a padded reduce's counts


def stream_before(time: Any, packet: Any, steps: tuple[VeStep, ...], index: int) -> tuple[Any, Any]:
    """(time, packet) of the stream step `index` reads, from the record's input (time, packet):
    the way changes before it applied (a split doubles the time; a reduce keeps the shape).
    Every step before `index` counts: a `vector` record's leading TAG step changes no shape, and
    a `vector_branch` record has none (its first step may be the split)."""
    shape, before_trim = (time, packet), None
    for step in steps[:index]:
        shape, before_trim = reshape(step.unit, shape, before_trim)
    return shape
