"""Pair mode in the DSL: `vector_intra_slice_unzip` after `vector_init()`, the paired ops,
the `*_zip` merges.

After `vector_intra_slice_unzip(m("I"), split_time)` the stream is two groups in
lock step. A paired binary op (`vector_logic`, `vector_fxp`, `vector_clip`, `vector_fp_binary`,
each with a `_with_mode` form whose one mode is read inside each group) takes one operand per
group (`vector_fxp(op, 10, None)` runs on group 0 only; `None` or `()` skips a group); a
group's operand may be a VRF tensor (not on the Logic cluster, and only in the default mode:
VRF-7),
both groups reading the same one through the pass's one register-file port (PAIR-VRF-1),
`vector_fp_unary(op, g0, g1)` takes a flag per group, `vector_fp_ternary(op, (a0, c0), (a1, c1))`
an FMA_F pair per group (`npu_opt.vector_pair_ternary`), and the common stages
(`vector_fxp_to_fp`, `vector_fp_to_fxp`, `vector_narrow_split`, `vector_widen_concat`,
`vector_narrow_trim`, `vector_widen_pad`, `vector_reinterpret`) act on both. A zip (`vector_logic_zip`, `vector_fxp_zip`, `vector_clip_zip`,
`vector_fp_zip`, each with a `_with_mode` form) merges the groups into one stream of the
ordinary chain. The stage order, the way (float ops 4-way) and the ALU budget are shared by
both groups: an ALU one group uses is used for both (VE-ALU-1).
"""

from __future__ import annotations

from typing import Any

from ir.vector import pair_logic_ops as plogic
from ir.vector import pair_ops as pops
from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.location import Location
from ir.mapping.nodes import IDENTITY, Mapping, Pad, Symbol, pair_all
from ir.mapping.nodes import Pair as MPair
from ir.vector import enums as E
from ir.vector.enums import Way
from ir.vector.stages import VeStage, can_transition, stage_way
from ir.vector.units import dsl_method
from npu_opt import vector_pair_ternary as pair_ternary
from npu_opt.stagebase import Poisoned, StreamStage, emit_op, kind_error, refuse_dead, stage_method, withdrawn
from npu_opt.vector_chain_methods import op_and_mode
from npu_opt.vector_pass import (PAIR_STAGE_CLASSES, VECTOR_STAGE_CLASSES, PairPass, VePass, _claim, _enum,
                                 _operands, _pair_step, vrf_unread)
from npu_opt.vector_reduce import pair_reduce_violation

__all__ = ["vector_intra_slice_unzip"]

S = VeStage


def _reduce_in_pair_mode(stage: StreamStage) -> Violation:
    """The reducer takes no group condition (PAIR-REDUCE-1)."""
    return pair_reduce_violation(zipped=False)


class PairStream(StreamStage):
    """Base of the pair stage objects. None offers `vector_intra_slice_reduce`: it stays to
    say why not (PAIR-REDUCE-1)."""

    vector_intra_slice_reduce = withdrawn("vector_intra_slice_reduce", _reduce_in_pair_mode)

    def __init__(self, value: Any, chain: Any, ve: PairPass | None = None) -> None:
        super().__init__(value, chain)
        self.ve = ve or PairPass()


def _vrf_problem(name: str, mode: Any, a: Any, b: Any) -> Violation | None:
    """A VRF group operand needs a cluster with a register-file input and the default mode."""
    if not any(getattr(c, "tensor", None) is not None for c in (a, b)):
        return None
    if name.startswith("vector_logic") or (mode is not None and mode.name != "MODE01"):
        return vrf_unread(name)
    return None


def _rf_values(a: Any, b: Any) -> tuple[Any, ...]:
    """The distinct VRF tensors the group operands read, in group order."""
    out: list[Any] = []
    for c in (a, b):
        t = getattr(c, "tensor", None)
        if t is not None and all(t.id != v.id for v in out):
            out.append(t)
    return tuple(out)


def _binary(stage: Any, loc: Location, op_cls: type, dst: VeStage, enums: Any, op: Any, c0: Any, c1: Any,
            mode: Any = None) -> Any:
    name = op_cls.STAGE + ("_with_mode" if mode is not None else "")
    got = op_and_mode(stage, loc, name, enums, op, mode)
    if isinstance(got, Poisoned):
        return got
    op, mode = got
    got = _operands(stage, loc, name, c0, c1)
    if isinstance(got, Poisoned):
        return got
    bad = _vrf_problem(name, mode, *got)
    if bad is not None:
        return refuse_dead(stage, loc, name, bad)
    return _pair_step(stage, loc, op_cls, dst, op.alu, op=op, c0=got[0], c1=got[1], mode=mode, rf=_rf_values(*got))


def _binary_methods(name: str, op_cls: type, dst: VeStage, enums: Any, doc: str) -> tuple[Any, Any]:
    """`name(op, group0, group1)` and `name_with_mode(op, mode, group0, group1)` on a pair."""

    def plain(self: PairStream, loc: Location, op: Any, group0: Any, group1: Any) -> Any:
        return _binary(self, loc, op_cls, dst, enums, op, group0, group1)

    def with_mode(self: PairStream, loc: Location, op: Any, mode: Any, group0: Any, group1: Any) -> Any:
        return _binary(self, loc, op_cls, dst, enums, op, group0, group1, mode)

    plain.__doc__ = f"{doc} on each group: `op(group, operand)`; None skips a group."
    with_mode.__doc__ = (f"{doc} on each group with a BinaryArgMode read inside each group (0 the group's stream, "
                         "1 its operand; MODE10 is `op(operand, group)`).")
    plain.__name__, with_mode.__name__ = name, f"{name}_with_mode"
    return stage_method(name)(plain), stage_method(f"{name}_with_mode")(with_mode)


_LOGICS = (E.LogicBinaryOpI32, E.LogicBinaryOpF32)
_CLIPS = (E.ClipBinaryOpI32, E.ClipBinaryOpF32)
_logic, _logic_with_mode = _binary_methods("vector_logic", plogic.PairLogic, S.LOGIC, _LOGICS,
                                           "Logic cluster (bit patterns)")
_fxp, _fxp_with_mode = _binary_methods("vector_fxp", pops.PairFxp, S.FXP, E.FxpBinaryOp, "Fxp cluster")
_clip, _clip_with_mode = _binary_methods("vector_clip", pops.PairClip, S.CLIP, _CLIPS, "Clip cluster")
_fp_binary, _fp_binary_with_mode = _binary_methods("vector_fp_binary", pops.PairFpBinary, S.FP, E.FpBinaryOp,
                                                   "Float cluster (4-way f32)")


@stage_method("vector_fp_unary")
def _fp_unary(self: PairStream, loc: Location, op: Any, group0: Any, group1: Any) -> Any:
    """Float cluster: `op` on group 0 when `group0`, on group 1 when `group1`."""
    op = _enum(self, loc, "vector_fp_unary", E.FpUnaryOp, op)
    if isinstance(op, Poisoned):
        return op
    if not (isinstance(group0, bool) and isinstance(group1, bool)) or not (group0 or group1):
        return refuse_dead(self, loc, "vector_fp_unary", kind_error(
            "`vector_fp_unary` on a pair takes two flags (True / False), at least one True",
            help="e.g. `.vector_fp_unary(FpUnaryOp.EXP, True, False)` for group 0 only"))
    return _pair_step(self, loc, pops.PairFpUnary, S.FP, op.alu, op=op, g0=group0, g1=group1)


@stage_method("vector_fxp_to_fp")
def _fxp_to_fp(self: PairStream, loc: Location, int_width: Any) -> Any:
    """Both groups: i32 fixed point with `int_width` integer bits -> f32."""
    return _pair_step(self, loc, pops.PairFxpToFp, S.FXP_TO_FP, int_width=int_width)


@stage_method("vector_fp_to_fxp")
def _fp_to_fxp(self: PairStream, loc: Location, int_width: Any) -> Any:
    """Both groups: f32 -> i32 fixed point with `int_width` integer bits."""
    return _pair_step(self, loc, pops.PairFpToFxp, S.FP_TO_FXP, int_width=int_width)


def _way(stage: Any, loc: Location, op_cls: type, dst: VeStage, time: Any, packet: Any) -> Any:
    if not (isinstance(time, Mapping) and isinstance(packet, Mapping)):
        return refuse_dead(stage, loc, op_cls.STAGE, kind_error(
            f"`time` and `packet` of `{op_cls.STAGE}` are mappings built by m()"))
    return _pair_step(stage, loc, op_cls, dst, time=time, packet=packet)


@stage_method("vector_narrow_split")
def _narrow_split(self: PairStream, loc: Location, time: Any, packet: Any) -> Any:
    """Both groups, 8-way -> 4-way: `[T], [P] -> [T, P / 4 % 2], [P % 4]`."""
    return _way(self, loc, pops.PairNarrowSplit, S.NARROW, time, packet)


@stage_method("vector_widen_concat")
def _widen_concat(self: PairStream, loc: Location, time: Any, packet: Any) -> Any:
    """Both groups, 4-way -> 8-way: two consecutive packets become one flit."""
    return _way(self, loc, pops.PairWidenConcat, S.WIDEN, time, packet)


def _packet_way(stage: Any, loc: Location, op_cls: type, dst: VeStage, packet: Any) -> Any:
    if not isinstance(packet, Mapping):
        return refuse_dead(stage, loc, op_cls.STAGE, kind_error(f"`packet` of `{op_cls.STAGE}` is a mapping built by m()"))
    return _pair_step(stage, loc, op_cls, dst, packet=packet)


@stage_method("vector_narrow_trim")
def _narrow_trim(self: PairStream, loc: Location, packet: Any) -> Any:
    """Both groups, 8-way -> 4-way: keep the front four cells of each flit (the back four hold
    padding); the time is kept."""
    return _packet_way(self, loc, pops.PairNarrowTrim, S.NARROW, packet)


@stage_method("vector_widen_pad")
def _widen_pad(self: PairStream, loc: Location, packet: Any) -> Any:
    """Both groups, 4-way -> 8-way: each packet padded back to one flit (`packet` is the padded mapping)."""
    return _packet_way(self, loc, pops.PairWidenPad, S.WIDEN, packet)


def _zip(stage: Any, loc: Location, op_cls: type, dst: VeStage, enums: Any, op: Any, mode: Any) -> Any:
    got = op_and_mode(stage, loc, op_cls.STAGE, enums, op, mode)
    if isinstance(got, Poisoned):
        return got
    op, mode = got
    if _claim(stage, loc, op_cls.STAGE, op.alu):
        return Poisoned(op_cls.STAGE)
    emitted = emit_op(stage, loc, op_cls, op=op, mode=mode)
    scalar = "f32" if emitted.result.type.dtype.name == "F32" else "i32"
    ve = VePass(stage=dst, alus=stage.ve.alus, zipped=True)
    return VECTOR_STAGE_CLASSES[(dst, scalar)](emitted.result, stage.chain, ve)


def _zip_method(name: str, op_cls: type, dst: VeStage, enums: Any, doc: str) -> tuple[Any, Any]:
    def plain(self: PairStream, loc: Location, op: Any) -> Any:
        return _zip(self, loc, op_cls, dst, enums, op, None)

    def with_mode(self: PairStream, loc: Location, op: Any, mode: Any) -> Any:
        return _zip(self, loc, op_cls, dst, enums, op, mode)

    plain.__doc__ = f"{doc}: `op(group0, group1)`; the merged stream goes on in the ordinary chain."
    with_mode.__doc__ = f"{doc} with a BinaryArgMode: MODE01 is op(group0, group1), MODE10 op(group1, group0)."
    plain.__name__, with_mode.__name__ = name, f"{name}_with_mode"
    return stage_method(name)(plain), stage_method(f"{name}_with_mode")(with_mode)


_logic_zip, _logic_zip_with_mode = _zip_method("vector_logic_zip", plogic.ZipLogic, S.LOGIC, _LOGICS,
                                               "Merge the groups on the Logic cluster")
_fxp_zip, _fxp_zip_with_mode = _zip_method("vector_fxp_zip", pops.ZipFxp, S.FXP, E.FxpBinaryOp,
                                           "Merge the groups on the Fxp cluster")
_clip_zip, _clip_zip_with_mode = _zip_method("vector_clip_zip", pops.ZipClip, S.CLIP, _CLIPS,
                                             "Merge the groups on the Clip cluster")
_fp_zip, _fp_zip_with_mode = _zip_method("vector_fp_zip", pops.ZipFp, S.FP, E.FpBinaryOp,
                                         "Merge the groups on the float cluster")

# method -> its body (the name its `stage_method` gives it); the stage it enters, the scalars it
# takes and the way the stream must run at are its units' (`ir.vector.units.dsl_method`)
_BODIES: dict[str, Any] = {fn.stage_name: fn for fn in (
    _logic, _logic_with_mode, _logic_zip, _logic_zip_with_mode,
    _fxp, _fxp_with_mode, _fxp_zip, _fxp_zip_with_mode,
    _fxp_to_fp, _narrow_split, _narrow_trim, _fp_unary, _fp_binary, _fp_binary_with_mode,
    pair_ternary.fp_ternary, pair_ternary.fp_ternary_mode,
    _fp_zip, _fp_zip_with_mode,
    _widen_concat, _widen_pad, _fp_to_fxp,
    _clip, _clip_with_mode, _clip_zip, _clip_zip_with_mode,
)}
_METHODS: dict[str, tuple[VeStage, frozenset[str], Way, Any]] = {
    name: (*dsl_method(name), fn) for name, fn in _BODIES.items()}


@stage_method("vector_reinterpret")
def _reinterpret(self: PairStream, loc: Location, d2: Any) -> Any:
    """Both groups' bits reread as `d2` (i32 or f32); no ALU, the stage and the way are kept."""
    to = {DType.I32: "i32", DType.F32: "f32"}.get(d2)
    if to is None:
        return refuse_dead(self, loc, "vector_reinterpret", Violation(
            "VE-REINT-1", f"`vector_reinterpret` rereads the bits as i32 or f32, not {d2!r}",
            help="pass `i32` or `f32`: the engine holds 32-bit values only"))
    return _pair_step(self, loc, plogic.PairReinterpret, self.ve.stage, scalar_to=to)


# the stages a pair may be at, each with a class per scalar
PAIR_STAGES = (S.TAG, S.LOGIC, S.FXP, S.FXP_TO_FP, S.NARROW, S.FP, S.WIDEN, S.FP_TO_FXP, S.CLIP)


def declare_class(stage: VeStage, scalar: str) -> tuple[str, str, dict[str, Any]]:
    """The pair at `stage` with `scalar` streams, as (class name, docstring, methods): a method
    of `_METHODS` is offered when it takes the scalar, the pair runs at the way it needs and its
    stage may follow; `vector_reinterpret` everywhere. `npu_opt.gen_stage_classes` writes these
    classes out."""
    def offered(dst: VeStage, way: Way) -> bool:
        return way == stage_way(stage) and can_transition(stage, dst)

    body = {name: fn for name, (dst, scalars, way, fn) in _METHODS.items() if scalar in scalars and offered(dst, way)}
    body["vector_reinterpret"] = _reinterpret  # holds the stage and the way
    doc = f"A pair at the {stage.rust_name} stage, {scalar}: offers {', '.join(sorted(body))}."
    return f"Pair{stage.rust_name}{scalar.upper()}Stream", doc, body


def _tile_time(time: Mapping, axis: Mapping) -> Mapping:
    """The group-tiled time the two-argument unzip infers: `time` with the item holding the
    grouping axis replaced by `1 # 2` (what the three-argument form spells out)."""
    name = axis.name if isinstance(axis, Symbol) else None
    items = time.flatten() if isinstance(time, MPair) else [time]
    hit = [i for i, item in enumerate(items) if name in item.axes()]
    if len(hit) != 1 or items[hit[0]].size != 2:
        return time  # PAIR-UNZIP-1 / -2 / -3 name the problem; the size check holds
    items[hit[0]] = Pad(IDENTITY, 2)
    return pair_all(items)


@stage_method("vector_intra_slice_unzip")
def vector_intra_slice_unzip(self: StreamStage, loc: Location, axis: Any, split_time: Any, *rest: Any) -> Any:
    """Enter the chain in pair mode: group g is the stream at `axis` = g, of time `split_time`.

    `vector_intra_slice_unzip(m("I"), split_time)` (the reference's v0.8 form) infers the group-tiled
    time; the older `vector_intra_slice_unzip(m("I"), tile_time, split_time)` still works."""
    if len(rest) > 1:
        return refuse_dead(self, loc, "vector_intra_slice_unzip", kind_error(
            f"`vector_intra_slice_unzip` takes two mappings (the axis and the split time), not {2 + len(rest)}",
            help='e.g. `.vector_intra_slice_unzip(m("I"), m("A, E / 8"))`'))
    tile_time = split_time
    if rest:
        split_time = rest[0]
    if not all(isinstance(x, Mapping) for x in (axis, tile_time, split_time)):
        return refuse_dead(self, loc, "vector_intra_slice_unzip", kind_error(
            "`vector_intra_slice_unzip` takes mappings built by m(): the axis and the split time",
            help='e.g. `.vector_intra_slice_unzip(m("I"), m("A, E / 8"))`'))
    if not rest:
        tile_time = _tile_time(self.value.type.time, axis)
    op = emit_op(self, loc, pops.VectorUnzip, axis=axis, tile_time=tile_time, split_time=split_time)
    scalar = "f32" if op.result.type.dtype.name == "F32" else "i32"
    return PAIR_STAGE_CLASSES[(S.TAG, scalar)](op.result, self.chain, PairPass())
