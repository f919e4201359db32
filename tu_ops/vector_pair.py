"""The lowered pair-mode pass: one `vector_pair` record per `vector_init ... vector_final`
that starts with `vector_intra_slice_unzip`.

Text: `%7 = vector_pair in=%6 axis="I" split_time="A, E / 8" steps=[{unit=FXP, op=MUL_INT,
side=G0, arg0=10, arg1=0}, {unit=CLIP_I32, op=ADD_FXP, side=ZIP, arg0=1, arg1=0}] : <in> -> <out>`.
The input stream's time holds `axis` (size 2); group g is the stream at `axis` = g, of time
`split_time`. A step's `side` is `BOTH`, `G0` or `G1` for a paired step (arg0 is group 0's
constant or conversion width, arg1 group 1's), `ZIP` for the merge (arg0 the index of its
`BinaryArgMode`, MODE00 ... MODE11) and `MERGED` for a step on the merged stream (arg0;
arg1 the second constant of a merged `FP_TERNARY`). A paired `FP_TERNARY` (FMA_F, `x * a + c`)
has each group's `a` in arg0 / arg1 and its `c` in `add0` / `add1` (printed only when set).
A paired or merged step of a `*_with_mode` op adds `mode=MODE10` (one mode for both groups,
read inside each; printed only when set).
A merged `INTRA_REDUCE_I32` / `_F32` step (arg 1 when the packet becomes `1 # 4`) reduces the
merged stream, which has a group's shape; a padded reduce axis adds `vcg={...}`, as on a
`vector` step (printed only when set). The DSL no longer writes that step (PAIR-REDUCE-1,
as the reference since v0.7); it stays here so an artifact written before reads, verifies
and runs.
Rules VPAIR-1 (the unzip and the steps type the stream), VPAIR-2 (stage order, one zip,
one op per ALU), VPAIR-3 (each step's args), VPAIR-4 (the reduce removes one axis of the
merged stream, with the valid counts it needs: `tu_ops.vector_reduce`).

A pair-mode pass that reads the VRF is `vector_pair_rf`, the `vector_pair` record with the
`rf` / `rf_read` fields of a `vector_rf` record.

Text: `%9 = vector_pair_rf in=%8 rf=[%5] axis="I" split_time="A, E / 8" steps=[{unit=FXP,
op=SUB_FXP, side=BOTH, arg0=0, arg1=5, rf=1}, ...] rf_read=[{time=[...], packet=[...]}] : ...`.
A paired step's `rf` names the groups that read a VRF tensor instead of a constant (bit g:
group g); such a group's arg is the index of the tensor, which it reads through the pass's
one register-file port at the word `rf_read` names for each cell of the group's stream (both
groups walk the same words: the grouping axis is not in the group's time). Rules VPAIR-1 ...
VPAIR-3 as for `vector_pair`; VPAIR-3 also checks the reads (a walk per tensor covering the
group's stream, staying inside a loaded tensor of the stream's scalar).
"""

from __future__ import annotations

import enum
import math
from typing import Any, ClassVar

import attrs

from ir.mapping.nodes import Mapping, Symbol
from ir.vector.units import UNITS, PairUnit, spec_of
from ir.vector.pair import unzip_problem
from ir.vector.ways import FLIT, split_shape
from tu_ops.base import Derivation, Ref, VerifyContext, attr, operand, rule
from tu_ops.rf_reshape import rf_root
from tu_ops.valid_count import PackConfig
from tu_ops.vector import (_SCALAR, VectorPass, VeMode, VeOpName, VeStep, VeUnit, _arg_problem, _op_value,
                           _order_problem)
from tu_ops.vector_reduce import reduce_problem
from tu_ops.vrf import RfRead, vrf_capacity, first_reads, rf_types, vrf_words, walk
from ir.words import a_an

__all__ = ["PairUnit", "PairSide", "PairStep", "VectorPairOp", "VectorPairRfOp", "group_stream"]


class PairSide(enum.Enum):
    """Which stream a step runs on."""

    BOTH = "both"
    G0 = "g0"
    G1 = "g1"
    ZIP = "zip"
    MERGED = "merged"


@attrs.frozen
class PairStep:
    """One configured stage of a pair pass."""

    TEXT_STYLE: ClassVar[str] = "struct"
    unit: PairUnit
    op: VeOpName
    side: PairSide
    arg0: int
    arg1: int
    mode: VeMode = attrs.field(default=VeMode.DEFAULT, metadata={"omit_default": True})  # a `*_with_mode` op's
    rf: int = attrs.field(default=0, metadata={"omit_default": True})  # bit g: group g reads VRF tensor arg<g>
    vcg: PackConfig | None = attrs.field(default=None, metadata={"omit_default": True})  # a padded reduce's counts
    add0: int = attrs.field(default=0, metadata={"omit_default": True})  # a paired FMA_F's c of group 0 (f32 bits)
    add1: int = attrs.field(default=0, metadata={"omit_default": True})  # ... and of group 1


_PAIRED = frozenset({PairSide.BOTH, PairSide.G0, PairSide.G1})
# `PairUnit` and every per-unit fact below are the unit declarations' (`ir.vector.units`): a way
# change (a unit with a shape change) takes either scalar and changes the way.


def _units(step: PairStep) -> tuple[str, str]:
    """(input scalar, output scalar) of a step; a way change keeps the scalar."""
    if spec_of(step.unit).shape:
        return "same", "same"
    return UNITS[step.unit.name]


def _ve_step(step: PairStep, arg: int) -> VeStep:
    arg1 = step.arg1 if spec_of(step.unit).arity == 3 else 0
    return VeStep(VeUnit[step.unit.name], step.op, arg, step.mode, arg1, step.vcg)


@attrs.frozen(kw_only=True)
class VectorPairOp(VectorPass):
    """The Vector Engine configured for one pair-mode pass over the stream (a merged reduce
    step's `vcg=` is derived on the merged stream, `reduce_input`)."""

    MNEMONIC: ClassVar[str] = "vector_pair"
    PIPELINE_RANK: ClassVar[int] = 75
    FEED_DEST: ClassVar[str | None] = "VECTOR_PAIR"

    axis: Mapping = attr()
    split_time: Mapping = attr()
    steps: tuple[PairStep, ...] = attr(converter=tuple)

    @rule("VPAIR-1")
    def _typing(self, target: Any, ctx: VerifyContext | None) -> str | None:
        t, out = self.input_type, self.output_type
        scalar = _SCALAR.get(t.dtype)
        if scalar is None or t.packet.size != 8:
            return f"the engine takes 8 x i32 or 8 x f32 per step, not {t.packet.size} x {t.dtype}"
        if not isinstance(self.axis, Symbol) or self.axis.size != 2:
            return f"the grouping axis {self.axis} is not one axis of size 2"
        problem = unzip_problem(t.time, self.split_time, self.axis.name)
        if problem:
            return problem
        steps, reduced = self.split_time.size, False  # a group's steps: one per position of split_time
        for s in self.steps:  # a split doubles them, a concat halves them (the unit's declared shape change)
            spec = spec_of(s.unit)
            steps = {"split": steps * 2, "concat": steps // 2}.get(spec.shape, steps)
            reduced = reduced or spec.arg == "reduce"
        if not reduced and out.time.size != steps:
            return f"split_time {self.split_time} gives {steps} steps, the output stream has {out.time.size}"
        width = 8
        for i, step in enumerate(self.steps):
            src, dst = _units(step)
            if dst == "op":  # a reinterpret names its scalar (VPAIR-3 checks the name)
                scalar = {"TO_I32": "i32", "TO_F32": "f32"}.get(step.op.name, scalar)
                continue
            if src not in ("same", scalar):
                return f"step {i} ({step.unit.name}) reads {src}, the stream holds {scalar}"
            spec = spec_of(step.unit)
            if spec.shape:
                if width != spec.way_in or scalar not in ("i32", "f32"):
                    return f"step {i} ({step.unit.name}) on {a_an(width)}-way {scalar} stream"
                width = spec.way_out
            elif (width == 4) != (spec.way_in == 4):
                return f"step {i} ({step.unit.name}) on {a_an(width)}-way stream"
            scalar = scalar if dst == "same" else dst
        if width != 8:
            return "the pass ends 4-way: a widen step must follow the float steps"
        if _SCALAR.get(out.dtype) != scalar or out.packet.size != 8:
            return f"the steps leave 8 x {scalar}, the output stream is {out.packet.size} x {out.dtype}"
        return None

    @rule("VPAIR-2")
    def _order(self, target: Any, ctx: VerifyContext | None) -> str | None:
        sides = [s.side for s in self.steps]
        if sides.count(PairSide.ZIP) != 1:
            return f"a pair pass merges its groups exactly once, not {sides.count(PairSide.ZIP)} times"
        z = sides.index(PairSide.ZIP)
        if any(s not in _PAIRED for s in sides[:z]) or any(s is not PairSide.MERGED for s in sides[z + 1:]):
            return "paired steps come before the ZIP step, merged steps after it"
        if "zip" not in spec_of(self.steps[z].unit).kinds:
            return f"step {z}: {self.steps[z].unit.name} cannot merge the groups"
        values = [_op_value(_ve_step(s, 0)) if not spec_of(s.unit).shape else None for s in self.steps]
        return _order_problem(self.steps, values, frozenset({z}))  # the zip may repeat its unit's rank

    @rule("VPAIR-3")
    def _args(self, target: Any, ctx: VerifyContext | None) -> str | None:
        for i, step in enumerate(self.steps):
            problem = _step_problem(step) or _rf_problem(step, len(getattr(self, "rf", ())))
            if step.vcg is not None and spec_of(step.unit).arg != "reduce":
                problem = "only a reduce step carries a vcg= configuration"
            if problem:
                return f"step {i} ({step.unit.name} {step.side.name}): {problem}"
        return None

    def reduce_input(self) -> tuple[Any, Any, tuple[VeStep, ...]]:
        """(time, packet, steps) of the stream the steps enter, as one group sees it: a reduce
        runs on the merged stream, which has a group's shape (`tu_ops.vector_reduce`)."""
        return self.split_time, self.input_type.packet, tuple(_ve_step(s, s.arg0) for s in self.steps)

    @rule("VPAIR-4")
    def _reduce(self, target: Any, ctx: VerifyContext | None) -> str | None:
        return reduce_problem(self)


def _rf_problem(step: PairStep, tensors: int) -> str | None:
    """A step reading the VRF: a paired step of a unit with a register-file input, in a record
    that names the tensor (`vector_pair_rf`)."""
    if step.rf == 0:
        return None
    if step.side not in _PAIRED or "rf" not in spec_of(step.unit).kinds or not 0 < step.rf < 4:
        return f"rf={step.rf}: only a paired FXP, CLIP or FP_BINARY step reads the VRF, rf naming groups 1 ... 3"
    if step.mode is not VeMode.DEFAULT:
        return "a step reading the VRF runs op(group, operand): no mode"
    for g, (arg, runs) in enumerate(((step.arg0, "G1"), (step.arg1, "G0"))):
        if step.rf >> g & 1 and (step.side.name == runs or not 0 <= arg < tensors):
            return f"group {g} reads VRF tensor {arg}, the record names {tensors}"
    return None


def _step_problem(step: PairStep) -> str | None:
    spec = spec_of(step.unit)
    if spec.shape:
        ok = (step.op.name, step.arg0, step.arg1) == ("NONE", 0, 0)
        return None if ok else "a way change is NONE with args 0"
    if step.side is PairSide.ZIP:
        if _op_value(_ve_step(step, 0)) is None:
            return f"{step.op.name} is not an op of this unit"
        if step.mode is not VeMode.DEFAULT:
            return "a zip names its mode by arg0, not by a mode field"
        return None if 0 <= step.arg0 <= 3 and step.arg1 == 0 else "a zip's arg0 is a mode index 0 ... 3, arg1 0"
    if "paired" not in spec.kinds and step.side is not PairSide.MERGED:
        return f"{step.unit.name} runs only on the merged stream"
    if step.side is PairSide.MERGED and spec_of(step.unit).arity == 3:
        return _arg_problem(_ve_step(step, step.arg0)) or _adds_problem(step, ())
    runs = {"BOTH": (0, 1), "G0": (0,), "G1": (1,), "MERGED": (0,)}[step.side.name]  # the args it reads
    if step.side in (PairSide.G0, PairSide.MERGED) and step.arg1 != 0:
        return "arg1 of a step on one stream is 0"
    if step.side is PairSide.G1 and step.arg0 != 0:
        return "arg0 of a group-1 step is 0"
    problem = _adds_problem(step, runs if spec_of(step.unit).arity == 3 else ())
    for g in runs:
        if problem is None and not step.rf >> g & 1:
            arg, add = (step.arg0, step.add0) if g == 0 else (step.arg1, step.add1)
            ve = _ve_step(step, arg)
            problem = _arg_problem(attrs.evolve(ve, arg1=add) if spec_of(step.unit).arity == 3 else ve)
    return problem


def _adds_problem(step: PairStep, groups: Any) -> str | None:
    """A step's add0 / add1 (a paired FMA_F's c of each group) are 0 for a group it skips and on
    every other step."""
    for g, add in ((0, step.add0), (1, step.add1)):
        if add and g not in groups:
            return f"add{g} is a paired FMA_F's c of group {g}; this step has none (0), not {add}"
    return None


def group_stream(record: Any, index: int) -> Any:
    """The (time, packet) cells a VRF read at step `index` walks: the group's stream, doubled in
    time (and padded to a flit) after a `NARROW_SPLIT` before it."""
    split = sum(1 for s in record.steps[:index] if spec_of(s.unit).shape == "split")
    return (record.split_time.size * 2 ** split, FLIT)


@attrs.frozen(kw_only=True)
class VectorPairRfOp(VectorPairOp):
    """A pair-mode pass whose paired steps may read the VRF tensors `rf` (a group's arg: which)."""

    MNEMONIC: ClassVar[str] = "vector_pair_rf"
    PIPELINE_RANK: ClassVar[int] = 78

    rf: tuple[Ref, ...] = operand(name="rf")
    rf_read: tuple[RfRead, ...] = attrs.field(converter=tuple, metadata={"role": "attr", "name": None})

    def with_derived(self, rf_types: tuple[Any, ...] = ()) -> VectorPairRfOp:
        """Also each tensor's `rf_read`: the walk of its element over the group's stream (the input
        at `split_time`) after the paired `NARROW_SPLIT`s before the first step reading it, its
        packet padded to a flit (the record keeps no mapping of a paired way change)."""
        rec = super().with_derived()
        reads = [(i, k) for i, s in enumerate(rec.steps) if s.rf for k in sorted(_read_args(s))]
        walks = []
        for vrf_t, at in zip(rf_types, first_reads(reads, len(self.rf)), strict=True):
            time, packet = self.split_time, self.input_type.packet
            for s in rec.steps[:at]:
                if s.unit.name == "NARROW_SPLIT" and s.side.name in ("BOTH", "G0", "G1"):
                    time, packet = split_shape(time, packet)
            stream = attrs.evolve(self.input_type, time=time, packet=packet if packet.size == FLIT
                                  else packet.pad(FLIT).normalize())
            walks.append(walk(vrf_t.element, stream))
        return attrs.evolve(rec, rf_read=tuple(walks))

    def derived(self, at: Derivation) -> VectorPairRfOp:
        return self.with_derived(rf_types(self, at.types))

    @rule("VPAIR-3")
    def _reads(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if not self.rf or len(self.rf) != len(self.rf_read):
            return f"{len(self.rf)} VRF tensors but {len(self.rf_read)} rf_read walks"
        for k, (ref, r) in enumerate(zip(self.rf, self.rf_read)):
            at = [i for i, s in enumerate(self.steps) if s.rf and k in _read_args(s)]
            cells = group_stream(self, at[0]) if at else (self.split_time.size, FLIT)
            if (math.prod(e.size for e in r.time), math.prod(e.size for e in r.packet)) != cells:
                return f"rf_read {k} walks {math.prod(e.size for e in r.time)} x " \
                       f"{math.prod(e.size for e in r.packet)} cells, the group's stream has {cells[0]} x {cells[1]}"
            if any(e.stride < 0 for e in (*r.time, *r.packet)):
                return "an rf_read stride is negative"
            top = sum((e.size - 1) * e.stride for e in (*r.time, *r.packet))
            load = rf_root(ref, ctx.op) if ctx is not None else None  # through its relabels
            if ctx is not None and vrf_words(load) is None:
                return f"rf {ref} is not the result of a vrf_load or a VRF tensor_new"
            if load is not None and load.output_type.dtype != self.input_type.dtype:
                return f"the VRF tensor {ref} holds {load.output_type.dtype}, the stream {self.input_type.dtype}"
            if top >= (vrf_words(load) if load is not None else vrf_capacity(target)):
                return f"rf_read reaches word {top}, past the VRF tensor {ref}"
        if not any(s.rf for s in self.steps):
            return "no step reads the register file"
        return None


def _read_args(step: Any) -> set[int]:
    return {a for g, a in enumerate((step.arg0, step.arg1)) if step.rf >> g & 1}
