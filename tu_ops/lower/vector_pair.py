"""A pair-mode pass lowered: `vector_init`, `vector_intra_slice_unzip`, ..., `vector_final`
become one `vector_pair` record, made at `vector_init` (`tu_ops.lower.vector` hands the pass
here when it starts with the unzip). `traced_pair` is the inverse, for the VISA re-derivation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from ir import ops as ir
from ir.dtypes import DType
from ir.errors import InternalError, MappingError
from ir.vector import enums as E
from ir.vector import ops as vops
from ir.vector import pair_logic_ops as plogic
from ir.vector import pair_ops as pops
from ir.vector import pair_ternary_ops as ptern
from ir.vector.pair import MODES
from ir.vector.reduce_ops import traced_reduce
from ir.vector.units import decode_step, mode_value, op_value, spec_of
from ir.vector.ways import FLIT, concat_shape, split_shape
from tu_ops.base import Ref
from tu_ops.lower.tables import Site, lowers
from tu_ops.lower.reduce_vcg import with_vcg
from tu_ops.lower.vector_branch import _vrf_tensors
from tu_ops.vector import VeMode, VeOpName, VeStep, VeUnit
from tu_ops.vector_pair import PairSide, PairStep, PairUnit, VectorPairOp
from tu_ops.vector_pair_rf import VectorPairRfOp
from tu_ops.vector_reduce import record_shapes
from tu_ops.vrf import walk

__all__ = ["lower_pair", "traced_pair"]


def _step(op: Any) -> PairStep | None:
    if isinstance(op, pops.VectorUnzip) or isinstance(op, vops.VectorFinal):
        return None
    if hasattr(op, "pair_step"):
        unit, name, side, a0, a1 = op.pair_step()
        mode = op.step_mode() if hasattr(op, "step_mode") else "DEFAULT"
    else:
        unit, name, a0, *rest = op.step()
        side, mode, a1 = "MERGED", *(rest or ("DEFAULT", 0))
    if unit not in PairUnit.__members__:
        raise InternalError(f"a pair pass has no {unit} step (`{op.STAGE}`)")
    add0, add1 = op.addends() if hasattr(op, "addends") else (0, 0)  # a paired FMA_F's c per group
    step = PairStep(PairUnit[unit], VeOpName[name], PairSide[side], a0, a1, VeMode[mode], add0=add0, add1=add1)
    return with_vcg(step, op)


def lower_pair(op: vops.VectorInit, site: Site, body: tuple[Any, ...]) -> VectorPairOp:
    """The `vector_pair` record of the pass entered at `op` (`body[0]` is its unzip); a
    `vector_pair_rf` when a group reads a VRF tensor."""
    unzip = body[0]
    tensors = _vrf_tensors(body)
    ids = [t.id for t in tensors]
    steps = tuple(_reading(s, o, ids) for o in body if (s := _step(o)) is not None)
    fields = dict(result=Ref(site.result), input=Ref(site.src), axis=unzip.axis, split_time=unzip.split_time,
                  steps=steps, input_type=site.type_of(op.input), output_type=site.type_of(body[-1].result), loc=op.loc)
    if not tensors:
        return VectorPairOp(**fields)
    streams = [_read_stream(unzip.result.type, body[:next(i for i, o in enumerate(body)
                                                          if any(v.id == t.id for v in getattr(o, "rf", ())))])
               for t in tensors]
    return VectorPairRfOp(**fields, rf=tuple(Ref(site.ref(t)) for t in tensors),
                          rf_read=tuple(walk(t.type.element, s) for t, s in zip(tensors, streams)))


def _reading(step: PairStep, op: Any, ids: list[int]) -> PairStep:
    """The step with its VRF groups marked (`rf` bits) and their args the tensor's index."""
    groups = op.rf_groups() if hasattr(op, "rf_groups") else 0
    if not groups:
        return step
    k = ids.index(op.rf[0].id)
    return attrs.evolve(step, rf=groups, arg0=k if groups & 1 else step.arg0, arg1=k if groups & 2 else step.arg1)


def _read_stream(group: Any, before: tuple[Any, ...]) -> Any:
    """The cells a VRF read walks: the group's stream after the narrow splits `before` the
    reading op, its packet padded to a flit. Derived from the unzip's types alone (the record
    keeps no mapping of a paired way change), so the re-derivation finds the same walk."""
    time, packet = group.time, group.packet
    for _ in range(sum(isinstance(o, pops.PairNarrowSplit) for o in before)):
        time, packet = split_shape(time, packet)
    return attrs.evolve(group, time=time, packet=packet if packet.size == FLIT else packet.pad(FLIT).normalize())


for _cls in (*pops.PAIR_OP_CLASSES, *plogic.PAIR_LOGIC_CLASSES, *ptern.PAIR_TERNARY_CLASSES):
    lowers(_cls)(lambda op, site: None)


# --- the inverse, for the re-derivation --------------------------------------------------------

def _enum(unit: str, name: str) -> Any:
    return op_value(spec_of(unit), name)


def _const(unit: str, arg: int, used: bool) -> Any:
    if not used:
        return None
    return float(np.array(arg, np.uint32).view(np.float32)) if spec_of(unit).scalar_in == "f32" else arg


def _paired(step: PairStep, src: ir.Value, ident: int, time: Any, packet: Any) -> Any:
    """The pair-pass op a paired step stands for: its unit's `paired` class (ir.vector.units),
    with the fields of the unit's kind (a way change, a conversion, the reinterpret, an
    element-wise op of one, two or three inputs)."""
    unit, name, side, spec = step.unit.name, step.op.name, step.side.name, spec_of(step.unit)
    g0, g1 = side in ("BOTH", "G0"), side in ("BOTH", "G1")
    cls, same = spec.codec.traced_class("paired"), ir.Value(ident, src.type)
    if spec.shape:
        t = attrs.evolve(src.type, time=time, packet=packet)
        return cls(input=src, time=time, packet=packet, result=ir.Value(ident, t))
    if spec.arg == "int_width":
        d = DType.F32 if spec.scalar_out == "f32" else DType.I32
        return cls(input=src, int_width=step.arg0, result=ir.Value(ident, attrs.evolve(src.type, dtype=d)))
    if spec.scalar_out == "op":  # the reinterpret names its scalar
        to = name[len("TO_"):].lower()
        out = attrs.evolve(src.type, dtype=DType.I32 if to == "i32" else DType.F32)
        return cls(input=src, scalar_to=to, result=ir.Value(ident, out))
    if spec.arity == 3:  # each group's (a, c)
        pairs = [(_const(unit, a, True), _const(unit, c, True)) if used else None
                 for a, c, used in ((step.arg0, step.add0, g0), (step.arg1, step.add1, g1))]
        return cls(input=src, op=_enum(unit, name), c0=pairs[0], c1=pairs[1], mode=mode_value(step.mode.name),
                   result=same)
    if spec.arity == 1:
        return cls(input=src, op=_enum(unit, name), g0=g0, g1=g1, result=same)
    return cls(input=src, op=_enum(unit, name), c0=_const(unit, step.arg0, g0), c1=_const(unit, step.arg1, g1),
               mode=mode_value(step.mode.name), result=same)


def _way_shape(step: PairStep, t: Any) -> tuple[Any, Any]:
    """(time, packet) after a paired step: a way change splits or joins the flit (so a merged
    reduce after it reads the stream it ran on); a shape it cannot take keeps the input's."""
    way = {"NARROW_SPLIT": split_shape, "WIDEN_CONCAT": concat_shape}.get(step.unit.name)
    try:
        return way(t.time, t.packet) if way is not None else (t.time, t.packet)
    except MappingError:
        return t.time, t.packet


def traced_pair(rec: VectorPairOp, src: ir.Value, fresh: Iterator[int]) -> tuple[Any, ...]:
    """`vector_init`, the unzip, one op per step, `vector_final`. The record keeps no mapping
    of a paired way change, and the lowering reads none: those ops take the shape the way
    change gives (`_way_shape`)."""
    ops: list[Any] = [vops.VectorInit(input=src, result=ir.Value(next(fresh), src.type), loc=rec.loc)]
    u = pops.VectorUnzip(input=ops[-1].result, axis=rec.axis, tile_time=src.type.time, split_time=rec.split_time,
                         result=ir.Value(next(fresh), attrs.evolve(src.type, time=rec.split_time)))
    ops.append(u)
    for step in rec.steps:
        cur, ident = ops[-1].result, next(fresh)
        if step.side is PairSide.ZIP:
            mode = getattr(E.BinaryArgMode, MODES[step.arg0])
            zipped = spec_of(step.unit).codec.traced_class("zipped")
            ops.append(zipped(input=cur, op=_enum(step.unit.name, step.op.name),
                              mode=None if mode == E.BinaryArgMode.MODE01 else mode, result=ir.Value(ident, cur.type)))
        elif step.unit.name.startswith("INTRA_REDUCE_"):
            out_time = record_shapes(rec, rec.steps.index(step)).out_time
            ops.append(traced_reduce(VeStep(VeUnit[step.unit.name], step.op, step.arg0), cur, ident, out_time))
        elif step.side is PairSide.MERGED:
            ops.append(decode_step(VeStep(VeUnit[step.unit.name], step.op, step.arg0, step.mode, step.arg1), cur,
                                    ident, rec.output_type.packet))
        else:
            ops.append(_paired(step, cur, ident, *_way_shape(step, cur.type)))
    ops.append(vops.VectorFinal(input=ops[-1].result, result=ir.Value(rec.result.id, rec.output_type)))
    return tuple(ops)
