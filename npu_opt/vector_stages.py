"""The Vector Engine's stage objects: `vector_init()` ... `vector_final()`.

The intra-slice chain runs its stages in one order (`ir.vector.stages`): a stream may skip
stages but never go back, and the cluster stages (Fxp, Clip) take several ops in a row.
Each (stage, scalar) pair is one class offering exactly the methods legal next: a method
exists only when its stage may follow (`can_transition`), the stream runs at the way the
stage needs (the float ops 4-way, between `vector_narrow_trim` and `vector_widen_pad`;
the rest, `vector_final` included, 8-way) and the stream holds the scalar the op needs
(`vector_fxp` on i32 only, `vector_fxp_to_fp` on i32, the float path and
`vector_fp_to_fxp` on f32, `vector_clip` on both). Calling another is TYPE-1. Every op of one pass claims its
ALU (VE-ALU-1); enum arguments are checked as enum values (VE-ENUM-*). `declare_class` says what
each class offers; `npu_opt.gen_stage_classes` writes the classes out (`npu_opt/vector_stage_classes.py`).
"""

from __future__ import annotations

import numbers
from typing import Any

import attrs

from ir.vector import ops as vops
from ir.location import Location
from ir.vector import enums as E
from ir.vector.enums import Way
from ir.vector.stages import STASHABLE, VeStage, can_transition, stage_way
from ir.vector.units import dsl_method
from ir.vector.branch_ops import tag_codes
from npu_opt.stagebase import Poisoned, StreamStage, kind_error, next_stage, refuse_dead, stage_method
from npu_opt.output_stages import VectorFinalStream
from npu_opt.tensor_data import VrfTensorData
from npu_opt.vector_branch import Branched, branched_step, tag_fault
from npu_opt.vector_chain_methods import ANY_STAGE_METHODS, CHAIN_METHODS, _mapping
from npu_opt.vector_pair import vector_intra_slice_unzip
from npu_opt.vector_pass import VectorStream, _enum, _step
from npu_opt.vector_reduce import inter_slice_reduce, intra_slice_reduce
from npu_opt.vector_stash import Stash, stash_step, vector_stash
from npu_opt.vector_unit_methods import UNIT_BODIES
from npu_opt.vrf import rf_step
from ir.words import a_an

__all__ = ["VectorInitStream", "declare_class", "declare_inter_first_class", "declare_after_class"]

S = VeStage


def _number(stage: StreamStage, loc: Location, name: str, value: Any) -> Poisoned | None:
    """TYPE-6 unless `value` is an int or a float (the rules check range and scalar)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return None
    return refuse_dead(stage, loc, name, kind_error(
        f"the operand of `{name}` must be a constant int or float, not {type(value).__name__}",
        help="pass a Python number or a VRF tensor made by `.to_vrf(...)`"))


# --- the methods ------------------------------------------------------------------------


@stage_method("vector_intra_slice_tag")
def _tag(self: VectorStream, loc: Location, mode: Any) -> Any:
    """Enter the intra-slice chain; every element gets the tag `mode` computes."""
    mode = _enum(self, loc, "vector_intra_slice_tag", E.TagMode, mode)
    if isinstance(mode, Poisoned):
        return mode
    fault = tag_fault(self, mode)
    if fault is not None:
        return refuse_dead(self, loc, "vector_intra_slice_tag", fault)
    tagged = _step(self, loc, vops.VectorTag, S.TAG, mode=mode)
    if not isinstance(tagged, Poisoned):
        tagged.ve = attrs.evolve(tagged.ve, tag=(tagged.value, tag_codes(mode)))
    return tagged


def _binary(stage: VectorStream, loc: Location, op_cls: type, dst: VeStage, enums: Any, op: Any,
            operand: Any) -> Any:
    """A binary op with a constant or VRF operand: the enum value, the operand's kind, its ALU."""
    op = _enum(stage, loc, op_cls.STAGE, enums, op)
    if isinstance(op, Poisoned):
        return op
    if isinstance(operand, Branched):
        return branched_step(stage, loc, op_cls.STAGE, op, operand, _step, dst)
    if operand is Stash:
        return stash_step(stage, loc, op_cls.STAGE, op, _step, dst)
    if isinstance(operand, (VrfTensorData, Poisoned)):
        return rf_step(stage, loc, op_cls, dst, op, operand)
    return _number(stage, loc, op_cls.STAGE, operand) or _step(stage, loc, op_cls, dst, op.alu, op=op, const=operand)


@stage_method("vector_fxp")
def _fxp(self: VectorStream, loc: Location, op: Any, operand: Any) -> Any:
    """Fxp cluster: `op(stream, operand)` on i32, the operand a constant."""
    return _binary(self, loc, vops.VectorFxp, S.FXP, E.FxpBinaryOp, op, operand)


@stage_method("vector_clip")
def _clip(self: VectorStream, loc: Location, op: Any, operand: Any) -> Any:
    """Clip cluster: `op(stream, operand)`; ReLU is `ClipBinaryOpI32.MAX` (or F32) with 0."""
    return _binary(self, loc, vops.VectorClip, S.CLIP, (E.ClipBinaryOpI32, E.ClipBinaryOpF32), op, operand)


@stage_method("vector_fxp_to_fp")
def _fxp_to_fp(self: VectorStream, loc: Location, int_width: Any) -> Any:
    """i32 fixed point with `int_width` integer bits -> f32."""
    return _step(self, loc, vops.VectorFxpToFp, S.FXP_TO_FP, int_width=int_width)


@stage_method("vector_fp_to_fxp")
def _fp_to_fxp(self: VectorStream, loc: Location, int_width: Any) -> Any:
    """f32 -> i32 fixed point with `int_width` integer bits."""
    return _step(self, loc, vops.VectorFpToFxp, S.FP_TO_FXP, int_width=int_width)


@stage_method("vector_narrow_trim")
def _narrow_trim(self: VectorStream, loc: Location, packet: Any) -> Any:
    """8-way -> 4-way: keep the front four cells of each flit (the back four hold padding)."""
    return _mapping(self, loc, "vector_narrow_trim", packet) or _step(
        self, loc, vops.VectorNarrowTrim, S.NARROW, packet=packet)


@stage_method("vector_fp_unary")
def _fp_unary(self: VectorStream, loc: Location, op: Any) -> Any:
    """Float cluster: `op(stream)` on the 4-way f32 stream."""
    op = _enum(self, loc, "vector_fp_unary", E.FpUnaryOp, op)
    if isinstance(op, Poisoned):
        return op
    return _step(self, loc, vops.VectorFpUnary, S.FP, op.alu, op=op)


@stage_method("vector_fp_binary")
def _fp_binary(self: VectorStream, loc: Location, op: Any, operand: Any) -> Any:
    """Float cluster: `op(stream, operand)` on the 4-way f32 stream, the operand a constant."""
    return _binary(self, loc, vops.VectorFpBinary, S.FP, E.FpBinaryOp, op, operand)


@stage_method("vector_widen_pad")
def _widen_pad(self: VectorStream, loc: Location, packet: Any) -> Any:
    """4-way -> 8-way: pad each packet back to one flit (`packet` is the padded mapping)."""
    return _mapping(self, loc, "vector_widen_pad", packet) or _step(
        self, loc, vops.VectorWidenPad, S.WIDEN, packet=packet)


@stage_method("vector_final")
def _final(self: VectorStream, loc: Location) -> Any:
    """Leave the engine; `cast` or `commit_trim` follow."""
    return next_stage(self, loc, vops.VectorFinal, VectorFinalStream)


_BOTH, W8 = frozenset({"i32", "f32"}), Way.WAY8
# method -> its body (the name its `stage_method` gives it); the stage it enters, the scalars it
# takes and the way the stream must run at are its units' (`ir.vector.units.dsl_method`)
_BODIES: dict[str, Any] = {fn.stage_name: fn for fn in (
    _fxp, _fxp_to_fp, _narrow_trim, _fp_unary, _fp_binary, _widen_pad, _fp_to_fxp, intra_slice_reduce, _clip,
)}
_BODIES.update(UNIT_BODIES)  # the units whose traced op is made from their declaration
_METHODS: dict[str, tuple[VeStage, frozenset[str], Way, Any]] = {
    name: (*dsl_method(name), fn) for name, fn in _BODIES.items()}
_METHODS.update({  # the stages without a unit
    "vector_final": (S.OUTPUT, _BOTH, W8, _final),
    "vector_inter_slice_reduce": (S.INTER_SLICE_REDUCE, _BOTH, W8, inter_slice_reduce),
})
_METHODS.update(CHAIN_METHODS)  # logic, fma, fp_div, the *_with_mode forms, split / concat, filter


class VectorInitStream(VectorStream):
    """After `vector_init()`: the intra-slice chain starts with `vector_intra_slice_tag`."""

    vector_intra_slice_tag = _tag
    vector_intra_slice_unzip = vector_intra_slice_unzip  # pair mode (npu_opt.vector_pair)
    vector_inter_slice_reduce = inter_slice_reduce  # the InterFirst order (npu_opt.vector_reduce)


# the stages a stream of the intra-slice chain may be at, each with a class per scalar
CHAIN_STAGES = (S.TAG, S.FXP, S.FXP_TO_FP, S.NARROW, S.FP, S.WIDEN, S.FP_TO_FXP, S.CLIP, S.LOGIC, S.FP_DIV,
                S.INTRA_SLICE_REDUCE)
SCALARS = ("i32", "f32")


def declare_class(stage: VeStage, scalar: str) -> tuple[str, str, dict[str, Any]]:
    """The stage object at `stage` with a `scalar` stream, as (class name, docstring, methods):
    a method of `_METHODS` is offered when it takes the scalar, the stream runs at the way it
    needs and its stage may follow. `npu_opt.gen_stage_classes` writes these classes out."""
    body = {name: fn for name, (dst, scalars, way, fn) in _METHODS.items()
            if scalar in scalars and way == stage_way(stage) and can_transition(stage, dst)}
    body.update(ANY_STAGE_METHODS)  # vector_reinterpret holds the stage
    if stage in STASHABLE:
        body["vector_stash"] = vector_stash
    return f"Vector{stage.rust_name}{scalar.upper()}Stream", _offers_doc(stage, scalar, body), body


def _offers_doc(stage: VeStage, scalar: str, offers: Any) -> str:
    """The docstring of a chain class, VECTOR or InterFirst: its stage, scalar and methods."""
    return f"At the {stage.rust_name} stage with {a_an(scalar)} stream: offers {', '.join(sorted(offers))}."


class _NotOfferedAgain:
    """What an InterFirst class sets as its `vector_inter_slice_reduce`, which its base class
    offers: reading it on the class or on a stream fails as if the class had never had it, so
    `hasattr(cls, ...)` is false and a call is the TYPE-1 of `StreamStage.__getattr__` (a
    `withdrawn` method would be called, and consume the stream); `OFFERS` leaves it out."""

    stage_name = "vector_inter_slice_reduce"
    withdrawn = True  # npu_opt.stagebase: not in OFFERS

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        raise AttributeError(self.stage_name)


_NO_SECOND_INTER_SLICE_REDUCE = _NotOfferedAgain()


def declare_inter_first_class(stage: VeStage, scalar: str) -> tuple[str, str, dict[str, Any]]:
    """The chain after an InterFirst inter-slice reduce: the same stages, no second inter-slice
    reduce. The class extends its `declare_class` twin (`npu_opt.gen_stage_classes` writes it so);
    its own methods are only the mark that takes back the twin's inter-slice reduce."""
    body = declare_class(stage, scalar)[2]
    own = {"vector_inter_slice_reduce": _NO_SECOND_INTER_SLICE_REDUCE} if "vector_inter_slice_reduce" in body else {}
    doc = _offers_doc(stage, scalar, body.keys() - own.keys())
    return f"VectorInterFirst{stage.rust_name}{scalar.upper()}Stream", doc, own


def declare_after_class(scalar: str, inter_first: bool) -> tuple[str, str, dict[str, Any]]:
    """The stage object after the inter-slice reduce, as (class name, docstring, methods):
    `vector_final`, and in the InterFirst order the intra-slice chain's `vector_intra_slice_tag`.
    `npu_opt.gen_stage_classes` writes these classes out."""
    body: dict[str, Any] = {"vector_final": _final}
    if inter_first:
        body["vector_intra_slice_tag"] = _tag
    order = "InterFirst" if inter_first else "IntraFirst"
    doc = f"After the inter-slice reduce ({order}) with {a_an(scalar)} stream: offers {', '.join(sorted(body))}."
    return f"VectorInterSliceReduce{order}{scalar.upper()}Stream", doc, body
