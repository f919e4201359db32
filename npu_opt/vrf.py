"""The Vector Register File in the DSL: `.to_vrf(element)` and VRF operands.

`to_vrf(element)` (or `to_vrf()`: the element [time, packet]; or `to_vrf(ctx.sub, element)`,
the reference's main-context form with the sub context as operand) ends a chain after `collect` or `vector_final` and returns a
`VrfTensor` (rules VRF-1, VRF-4, VRF-5 are the traced op's). Passing that tensor as the
operand of `vector_fxp`, `vector_clip`, `vector_fp_binary` or `vector_fp_div` reads it once per stream
element (VRF-2); the ops of one pass may read different VRF tensors.
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.location import Location
from ir.mapping.nodes import Mapping, pair_all
from ir.types import SUB
from ir.vrf_ops import ToVrf
from npu_opt.addresses import VRF, at_stage
from npu_opt.dma import TensorDma
from npu_opt.stagebase import Poisoned, StreamStage, emit_op, kind_error, refuse_dead, stage_method
from npu_opt.tensor_data import VrfTensorData
from npu_opt.vector_pass import _step

__all__ = ["to_vrf", "to_vrf_at", "rf_step"]


@stage_method("to_vrf")
def to_vrf(self: StreamStage, loc: Location, sub: Any = None, element: Any = None) -> Any:
    """Store the stream in every slice's VRF laid out as `element` (a layout of [time, packet];
    omitted, it is [time, packet] itself, as `commit()` infers its element).

    The reference's main-context form takes the sub context the write runs through as an
    operand (`.to_vrf(&mut ctx.sub)`), so `.to_vrf(ctx.sub, m("..."))` is accepted too; the
    operand only names the unit and leaves the stored tensor and the program unchanged."""
    if element is None and not _is_engine(sub):  # `.to_vrf(m("..."))`: no operand
        sub, element = None, sub
    bad = None if sub is None else _sub_operand_fault(sub)
    if bad is not None:
        return refuse_dead(self, loc, "to_vrf", bad)
    if element is None:
        element = pair_all([self.type.time, self.type.packet]).normalize()
    if not isinstance(element, Mapping):
        return refuse_dead(self, loc, "to_vrf", kind_error(
            f"`element` of `to_vrf` must be a mapping built by m(), not {type(element).__name__}",
            'e.g. `.to_vrf(m("N"))`'))
    op = emit_op(self, loc, ToVrf, element=element)
    self.chain.done = True
    return VrfTensorData.handle(op.result)


to_vrf_at = at_stage(to_vrf, "to_vrf_at", VRF)  # `to_vrf` at a VRF byte address (npu_opt.addresses)


def _sub_operand_fault(sub: Any) -> Violation | None:
    """The operand of `.to_vrf(ctx.sub, ...)` names the sub context: CTX-1 for another engine
    (`ctx.main`, `ctx.tdma`, `ctx.pdma`), TYPE-6 for a value that is no engine at all."""
    if _is_tu_context(sub) and sub.name == SUB:
        return None
    if _is_engine(sub):
        return Violation("CTX-1", f"`to_vrf` writes the VRF through the sub context, but its operand is {sub!r}",
                         label="the operand of `to_vrf` names the sub context the write runs through",
                         help='pass ctx.sub: `.to_vrf(ctx.sub, m("..."))`, or leave the operand out: '
                              '`.to_vrf(m("..."))`')
    return kind_error(f"the first argument of `to_vrf` must be ctx.sub or the element mapping, not "
                      f"{type(sub).__name__}", 'e.g. `.to_vrf(ctx.sub, m("N"))` or `.to_vrf(m("N"))`')


def _is_tu_context(value: Any) -> bool:
    """`ctx.main` or `ctx.sub`: npu_opt.context imports this module (through its streams), hence
    a test of the class's name and module rather than isinstance."""
    return type(value).__name__ == "TuContext" and type(value).__module__ == "npu_opt.context"


def _is_engine(value: Any) -> bool:
    """A unit of the Context: `ctx.main`/`ctx.sub` or a DMA engine."""
    return _is_tu_context(value) or isinstance(value, TensorDma)


def rf_step(stage: Any, loc: Location, op_cls: type, dst: Any, op: Any, operand: Any, mode: Any = None) -> Any:
    """The op reading the VRF tensor `operand` (as argument 1 of `mode`, a `_with_mode` form's
    BinaryArgMode); an operand from a refused call ends the chain silently."""
    if isinstance(operand, Poisoned) or isinstance(operand.value, Poisoned):
        return refuse_dead(stage, loc, op_cls.STAGE, Violation("", "argument comes from a refused call"))
    if getattr(stage.ve, "reduced", False):  # the record's VRF walk follows the stream the pass reads
        return refuse_dead(stage, loc, op_cls.STAGE, Violation(
            "VE-REDUCE-6", f"`{op_cls.STAGE}` reads the VRF after the intra-slice reduce of its pass",
            label="a VRF operand is read on the stream the pass starts with",
            help="read the VRF before `vector_intra_slice_reduce`, or in a pass of its own after a commit"))
    fields = {} if mode is None else {"mode": mode}
    return _step(stage, loc, op_cls, dst, op.alu, op=op, const=0, rf=(operand.value,), **fields)
