"""Comparison tags and branched operands in the DSL.

`vector_intra_slice_tag(TagMode.COMPARISON([Cmp.LESS(0), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE]))`
gives each element an execution id: bit i is set where comparison i holds on the stream as
it enters the chain. A binary op (`vector_logic`, `vector_fxp`, `vector_clip`, `vector_fp_binary`,
`vector_fp_div`, and their `_with_mode` forms, whose mode every slot reads) may then take
`Branched.imm(guard, value)` (chained
`.imm(guard, value)`, at most three, and last maybe `.rf(guard, vrf_tensor)` or `.rf(guard,
Stash)`, the register-file slot; `Branched.rf(guard, vrf)` alone opens with it) instead of a
constant: an element takes the value of the first slot whose `TagGuard` admits its id (the rf
slot: its element of the VRF tensor, or of the stash), and an element no slot admits keeps
its value. A stash slot is the pass's one stash read (VE-STASH-1/2/4) and its guard must
constrain more than the group bit (VE-SLOT-6).
`TagGuard.all()`, `TagGuard.group(GroupId.ONE)`, `TagGuard.matches([BitReq.ONE, BitReq.IGNORE,
...])` (bit 0 first) and `TagGuard.not_matches([...])` build guards. `Branched` itself lives in
npu_opt/branched.py (a star import defines it without this module).
"""

from __future__ import annotations

from typing import Any

from ir.vector import branch_ops as bops
from ir.diagnostic import Violation
from ir.location import Location
from ir.vector import enums as E
from ir.vector.operands import Stash
from npu_opt.branched import Branched, TagGuard
from npu_opt.stagebase import Poisoned, refuse_dead
from npu_opt.vector_pass import vrf_unread
from npu_opt.vector_stash import held_stash, spend
from ir.words import a_an

__all__ = ["Branched", "TagGuard", "branched_step", "tag_fault"]


def tag_fault(stage: Any, mode: Any) -> Violation | None:
    """VE-TAG-1 (a mode that is not compiled) and VE-TAG-2 (a boundary of the other scalar)."""
    if mode.is_(E.TagMode.AXIS_TOGGLE):
        return Violation("VE-TAG-1", f"tag mode {mode!r} is not compiled",
                         help="use `vector_intra_slice_unzip` to split a stream into two groups")
    if mode.is_(E.TagMode.COMPARISON):
        scalar = "f32" if stage.type.dtype.name == "F32" else "i32"
        for i, cmp in enumerate(mode.cmps):
            if cmp.scalar not in (None, scalar):
                return Violation("VE-TAG-2", f"comparison {i} ({cmp!r}) has {a_an(cmp.scalar)} boundary, the stream "
                                 f"holds {scalar}", help=f"write the boundary as {a_an(scalar)} "
                                 f"({'a float, e.g. 0.0' if scalar == 'f32' else 'an int, e.g. 0'})")
    return None


_CLASSES = {cls.STAGE: cls for cls in bops.BRANCH_OP_CLASSES}


def branched_step(stage: Any, loc: Location, name: str, op: Any, operand: Branched, step: Any, dst: Any,
                  mode: Any = None) -> Any:
    """Emit the branched form of `name` (or `name_with_mode`, whose `mode` every slot reads;
    `step(stage, loc, cls, dst, alu, **fields)` is the chain's own emitter)."""
    if operand.vrf is not None and (name.startswith(("vector_logic", "vector_fp_ternary")) or
                                    name.endswith("_with_mode")):
        return refuse_dead(stage, loc, name, vrf_unread(name))
    if not operand.layout.slots():
        return refuse_dead(stage, loc, name, Violation(
            "VE-SLOT-1", f"the branched operand of `{name}` fills no slot",
            help="add a slot (`Branched.imm(guard, value)`), or leave the op out"))
    cls = _CLASSES[name.removesuffix("_with_mode")]
    tag = getattr(stage.ve, "tag", None)
    if tag is None:
        return refuse_dead(stage, loc, name, Violation(
            "VE-TAG-3", f"`{name}` with a branched operand on a stream without tags",
            help="branched operands read the tags of `vector_intra_slice_tag`; a pair op takes constants"))
    tagged, cmps = tag
    rf: tuple = ()
    if operand.vrf is not None:
        if isinstance(operand.vrf.value, Poisoned):
            return refuse_dead(stage, loc, name, Violation("", "argument comes from a refused call"))
        rf = (operand.vrf.value,)
    port = operand.layout.port
    fields = dict(op=op, operand=operand.layout, tagged=tagged, cmps=cmps, mode=mode)
    if port is None or getattr(port[1], "rhs", port[1]) is not Stash:
        return step(stage, loc, cls, dst, op.alu, rf=rf, **fields)
    held = held_stash(stage, loc, name)  # the rf slot reads the stash: once, after the write
    if isinstance(held, Poisoned):
        return held
    return spend(step(stage, loc, cls, dst, op.alu, stashed=(held,), **fields))
