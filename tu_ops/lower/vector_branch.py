"""A tagged pass lowered: `vector_init`, `vector_intra_slice_tag(mode)`, ..., `vector_final`
become one `vector_branch` record (`tu_ops.lower.vector` hands the pass here, see
`tu_ops.lower.vector_kind`). `traced_branch` is the inverse, for the VISA re-derivation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from ir import ops as ir
from ir.vector import ops as vops
from ir.vector import branch_ops as bops
from ir.vector import stash_ops as sops
from ir.vector import enums as E
from ir.vector.branch import BranchedOperand
from ir.vector.branching import cmp_of, guard_of, rf_port
from ir.vector.operands import Constant, Stash, TernaryOperand
from ir.vector.branch_ops import tag_codes
from tu_ops.base import Ref
from tu_ops.lower.tables import Site, lowers
from tu_ops.lower.reduce_vcg import with_vcg
from ir.vector.units import decode_step, mode_value, op_value, spec_of
from ir.vector.reduce_ops import traced_reduce
from tu_ops.vrf import walk
from tu_ops.vector import VeMode, VeOpName, VeStep, VeUnit
from tu_ops.vector_branch_rf import VectorBranchRfOp
from tu_ops.vector_reduce import record_shapes
from tu_ops.vector_branch import BranchStep, CmpName, Slot, TagCmp, VectorBranchOp

__all__ = ["lower_branch", "traced_branch"]


def _step(op: Any) -> BranchStep | None:
    if isinstance(op, (vops.VectorFinal, sops.VectorStash)):
        return None
    if isinstance(op, sops.STASH_READS):
        return BranchStep(VeUnit[op.unit()], VeOpName[op.op_name()], 0, (), 1, mode=VeMode[op.mode_name()],
                          arg1=op.arg1())
    if isinstance(op, bops.BRANCH_OP_CLASSES):
        slots = tuple(Slot(*s[:4], value1=(*s[4:], 0)[0]) for s in op.slots())  # FMA_F's slots carry their c
        if op.port() is not None:  # the rf slot (port=2: the stash); a tensor's index is set below
            slots += (Slot(*op.port(), 0, port=2 if op.port_reads_stash() else 1, value1=op.port_arg1()),)
        return BranchStep(VeUnit[op.unit()], VeOpName[op.op_name()], 0, slots, mode=VeMode[op.mode_name()])
    unit, name, arg, *rest = op.step()
    mode, arg1 = rest or ("DEFAULT", 0)
    return with_vcg(BranchStep(VeUnit[unit], VeOpName[name], arg, (), mode=VeMode[mode], arg1=arg1), op)


def lower_branch(op: vops.VectorInit, site: Site, body: tuple[Any, ...]) -> VectorBranchOp:
    """The `vector_branch` record of the pass entered at `op` (`body[0]` is its tag)."""
    tag = tuple(TagCmp(CmpName[n], b) for n, b in tag_codes(body[0].mode))
    steps, stash_at = [], -1
    for o in body[1:]:
        stash_at = len(steps) if isinstance(o, sops.VectorStash) else stash_at
        steps.append(_step(o))
    steps = [s for s in steps if s is not None]
    fields = dict(result=Ref(site.result), input=Ref(site.src), tag=tag, steps=steps, stash_at=stash_at,
                  input_type=site.type_of(op.input), output_type=site.type_of(body[-1].result), loc=op.loc)
    tensors = _vrf_tensors(body)
    if not tensors:
        return VectorBranchOp(**fields)

    ids = [t.id for t in tensors]
    readers = iter([o for o in body[1:] if _step(o) is not None])
    fields["steps"] = [_read_from(s, ids.index(o.rf[0].id)) if getattr(o, "rf", ()) else s
                       for s, o in zip(steps, readers)]
    return VectorBranchRfOp(**fields, rf=tuple(Ref(site.ref(t)) for t in tensors),
                            rf_read=tuple(walk(t.type.element, fields["input_type"]) for t in tensors))


def _read_from(step: BranchStep, index: int) -> BranchStep:
    """The step reading VRF tensor `index`: an `_RF` step's arg, or its rf slot's value."""
    if any(s.port for s in step.slots):
        return attrs.evolve(step, slots=tuple(attrs.evolve(s, value=index) if s.port else s for s in step.slots))
    return attrs.evolve(step, arg=index)


def _vrf_tensors(body: tuple[Any, ...]) -> list[Any]:
    """The VRF tensors the pass's ops read, in first-read order."""
    tensors: list[Any] = []
    for o in body:
        for v in getattr(o, "rf", ()) or ():
            if all(v.id != t.id for t in tensors):
                tensors.append(v)
    return tensors


for _cls in (*bops.BRANCH_OP_CLASSES, *sops.STASH_OP_CLASSES):
    lowers(_cls)(lambda op, site: None)


# --- the inverse, for the re-derivation --------------------------------------------------------

def _layout(step: BranchStep, f32: bool) -> BranchedOperand:
    regs, port = [], None
    pair = spec_of(step.unit).arity == 3  # each slot holds FMA_F's (operand, c)

    def bits(v: int) -> Constant:
        return Constant(float(np.array(v, np.uint32).view(np.float32)), "f32")

    for s in step.slots:
        if s.port:  # the VRF tensor it reads is the op's `rf` (visa.unlower_branch_rf sets it)
            source = Stash if s.port == 2 else rf_port()
            port = (guard_of(s.mask, s.want, s.neg), TernaryOperand(source, bits(s.value1)) if pair else source)
            continue
        value = bits(s.value) if f32 else Constant(s.value, "i32")
        regs.append((guard_of(s.mask, s.want, s.neg), TernaryOperand(value, bits(s.value1)) if pair else value))
    return BranchedOperand(tuple(regs), port)


def _op_enum(unit: str, name: str) -> Any:
    value = op_value(spec_of(unit), name)
    if value is None:
        raise KeyError(f"{name} is not an op of {unit}")
    return value


def _plain_step(step: BranchStep, cur: ir.Value, ident: int, rec: VectorBranchOp) -> Any:
    if step.unit.name.startswith("INTRA_REDUCE_"):
        return traced_reduce(step, cur, ident, record_shapes(rec, rec.steps.index(step)).out_time)
    return decode_step(VeStep(step.unit, step.op, step.arg, step.mode, step.arg1), cur, ident, rec.output_type.packet)


def traced_branch(rec: VectorBranchOp, src: ir.Value, fresh: Iterator[int]) -> tuple[Any, ...]:
    """`vector_init`, the tag, one op per step, `vector_final`."""
    scalar = "f32" if src.type.dtype.name == "F32" else "i32"
    cmps = tuple((c.cmp.name, c.bound) for c in rec.tag)
    mode = E.TagMode.COMPARISON([cmp_of(n, b, scalar) for n, b in cmps]) if cmps else E.TagMode.ZERO
    ops: list[Any] = [vops.VectorInit(input=src, result=ir.Value(next(fresh), src.type), loc=rec.loc)]
    ops.append(vops.VectorTag(input=ops[-1].result, mode=mode, result=ir.Value(next(fresh), src.type)))
    tagged, stashed = ops[-1].result, None
    for k, step in enumerate(rec.steps):
        if k == rec.stash_at:
            ops.append(sops.VectorStash(input=ops[-1].result, result=ir.Value(next(fresh), ops[-1].result.type)))
            stashed = ops[-1].result
        cur, ident = ops[-1].result, next(fresh)
        if step.stash:  # the plain op with a 0 operand names the op, mode and FMA_F's c
            plain = _plain_step(attrs.evolve(step, stash=0), cur, ident, rec)
            more = {"const1": plain.const1} if plain.STAGE == "vector_fp_ternary" else {}
            ops.append(sops.STASH_READ_OF[plain.STAGE](
                input=cur, stashed=stashed if stashed is not None else cur, op=plain.op, mode=plain.mode,
                result=ir.Value(ident, cur.type), **more))
        elif step.slots:
            unit = step.unit.name
            reads = (stashed if stashed is not None else cur,) if any(s.port == 2 for s in step.slots) else ()
            branched = spec_of(unit).codec.traced_class("branched")  # the unit's op with guarded slots
            ops.append(branched(input=cur, tagged=tagged, op=_op_enum(unit, step.op.name),
                                operand=_layout(step, cur.type.dtype.name == "F32"), cmps=cmps,
                                stashed=reads, mode=mode_value(step.mode.name), result=ir.Value(ident, cur.type)))
        else:
            ops.append(_plain_step(step, cur, ident, rec))
    if rec.stash_at == len(rec.steps):
        ops.append(sops.VectorStash(input=ops[-1].result, result=ir.Value(next(fresh), ops[-1].result.type)))
    ops.append(vops.VectorFinal(input=ops[-1].result, result=ir.Value(rec.result.id, rec.output_type)))
    return tuple(ops)
