"""The intra-slice reduce step of a Vector Engine record (`INTRA_REDUCE_I32` / `_F32`): the
stream it reads and the one it leaves, derived from the record's steps and types, and the
check of its shape and its `vcg=` (VEOP-7 on a `vector` / `vector_branch` record, VPAIR-4
on a `vector_pair` one, whose reduce runs on the merged stream).

The reduce reads the stream the steps before it leave, its packet trimmed to four cells; it
leaves the record's output time, or, when a `WIDEN_CONCAT` follows it, that time with the
half the concat folded into the packet given back (`[T], [P] -> [T, P / 4 % 2], [P % 4]`).
Its packet is `1 # 4` for arg 1 (the tree reduce), else the packet it read.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.errors import MappingError
from ir.mapping.api import m
from ir.mapping.nodes import Mapping, Pad, Resize
from ir.vector import ways
from ir.vector.units import SPECS, spec_of
from ir.vector.intra_reduce import removed_axis, shape_fault
from tu_ops.valid_count import reduce_vcg, reduce_vcg_problem
from tu_ops.vector_steps import stream_before

__all__ = ["REDUCE_UNITS", "ReduceShapes", "is_reduce", "reduce_shapes", "record_shapes", "reduce_problem",
           "with_vcgs"]

REDUCE_UNITS = frozenset(s.name for s in SPECS.values() if s.arg == "reduce")  # ir.vector.units


def is_reduce(step: Any) -> bool:
    return step.unit.name in REDUCE_UNITS


@attrs.frozen
class ReduceShapes:
    """(time, packet) a reduce step reads (4-way) and (out_time, out_packet) it leaves."""

    time: Mapping
    packet: Mapping
    out_time: Mapping
    out_packet: Mapping


def reduce_shapes(time: Any, packet: Any, steps: Any, index: int, out_time: Any, out_packet: Any) -> ReduceShapes:
    """The shapes of reduce step `index` of `steps`, which run on a stream entering as
    (time, packet) and leave the record's (out_time, out_packet). MappingError: no shape."""
    time, packet = stream_before(time, packet, tuple(steps), index)
    packet = _first_four(packet)
    if any(spec_of(s.unit).shape == "concat" for s in steps[index + 1:]):
        out_time = ways.split_shape(out_time, out_packet)[0]
    return ReduceShapes(time, packet, out_time, m("1 # 4") if steps[index].arg == 1 else packet)


def _first_four(packet: Mapping) -> Mapping:
    """The 4-way packet a reduce reads: the first four cells of `packet`. A packet padded
    from exactly four cells (`R # 16 % 4 # 8`) is its operand as written, not normalized:
    `R # 16 % 4` read beside the time's `R # 16 / 4` is the padded axis's inner digit, while
    its normal form `R = 4` read there would decode R past |R| (the pair has no factor form)."""
    while isinstance(packet, Pad) and packet.operand.size >= 4:
        packet = packet.operand
    return packet if packet.size == 4 else Resize(packet, 4).normalize()


def record_shapes(op: Any, index: int) -> ReduceShapes:
    """The shapes of reduce step `index` of a record: a record with a `reduce_input()` (the
    pair record: its merged stream) names the stream its steps enter and those steps."""
    t, out = op.input_type, op.output_type
    time, packet, steps = op.reduce_input() if hasattr(op, "reduce_input") else (t.time, t.packet, op.steps)
    return reduce_shapes(time, packet, steps, index, out.time, out.packet)


def reduce_problem(op: Any) -> str | None:
    """What is wrong with the reduce step of a record (None when it has none, or it is right):
    one reduce, removing exactly one axis, with the `vcg=` its stream needs."""
    _, _, steps = op.reduce_input() if hasattr(op, "reduce_input") else (None, None, op.steps)
    found = [i for i, s in enumerate(steps) if is_reduce(s)]
    if not found:
        return None
    try:
        sh = record_shapes(op, found[0])
    except MappingError as e:
        return f"the stream before the reduce has no shape: {e}"
    axis = removed_axis(sh.time, sh.packet, sh.out_time, sh.out_packet)
    if len(found) > 1 or axis is None:
        return "a pass reduces one axis, once"
    fault = shape_fault(axis, sh.time, sh.packet, sh.out_time, sh.out_packet)
    if fault is not None:
        return f"the reduce of {axis}: {fault.message}"
    return reduce_vcg_problem(steps[found[0]], op.input_type.slice, sh.time, sh.packet, axis)


def with_vcgs(op: Any) -> tuple[Any, ...]:
    """The steps of a record (`vector`, `vector_pair`, `vector_branch` and their `_rf` forms),
    each reduce step with the `vcg=` its stream needs (`reduce_vcg` of the shapes `record_shapes`
    derives, which VEOP-7 / VPAIR-4 check), every other step with none: the declaration the
    lowering fills the records with and the VISA verifier compares a parsed record with.
    ValueError: a reduce whose stream cannot be counted; MappingError: one with no shape."""
    steps = []
    for i, step in enumerate(op.steps):
        vcg = None
        if is_reduce(step):
            sh = record_shapes(op, i)
            axis = removed_axis(sh.time, sh.packet, sh.out_time, sh.out_packet)
            vcg = reduce_vcg(op.input_type.slice, sh.time, sh.packet, axis)
        steps.append(step if step.vcg == vcg else attrs.evolve(step, vcg=vcg))
    return tuple(steps)
