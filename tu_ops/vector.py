"""The lowered Vector Engine pass: one `vector` record per `vector_init ... vector_final`.

Text: `%7 = vector in=%6 steps=[{unit=TAG, op=ZERO, arg=0}, {unit=FXP, op=MUL_INT, arg=3},
{unit=CLIP_I32, op=MAX, arg=0}] : <stream> -> <stream>`. A step's `arg` is its constant
operand (an i32, or the bit pattern of an f32 constant) or a conversion's int_width. The
interpreter runs the steps in order (`ir.vector.numerics.steps`). Rules VEOP-1 (the steps
type the stream), VEOP-2 (stage order and one op per ALU), VEOP-3 (each step's arg).

A step may also carry `mode` (an argument mode other than the default MODE01 / MODE012)
and `arg1` (the second constant of `FP_TERNARY`); both are printed only when set, so a
step without them reads `{unit=FXP, op=MUL_INT, arg=3}`.
VEOP-4 (`_RF` steps only in a `vector_rf` record, `tu_ops.vrf`), VEOP-7 (an intra-slice reduce
step, `INTRA_REDUCE_I32` / `_F32` with arg 1 when the packet becomes `1 # 4`: the input and
output types differ by exactly the reduced axis, `ir.vector.intra_reduce`; the reduce of a
padded axis carries `vcg={filters=[...], clipper={...}}`, the Valid Count Generator's
configuration for its stream, printed only when set: docs/machine/valid-count.md).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ir.dtypes import DType
from ir.errors import MappingError
from ir.vector import enums as E
from ir.vector.units import UNITS, VeMode, VeOpName, VeUnit, is_rf, op_value, spec_of
from tu_ops.base import Derivation, Ref, TuOp, VerifyContext, attr, operand, rule
from tu_ops.engines import VECTOR, Engine, no_counters, stream_cycles
from tu_ops.enums import FeedElementType
from tu_ops.vector_reduce import reduce_problem, with_vcgs
from tu_ops.vector_steps import VeStep, reshape, stream_before
from ir.words import a_an

__all__ = ["VeUnit", "VeOpName", "VeMode", "VeStep", "VectorPass", "VectorEngineOp", "stream_before"]


_SCALAR = {DType.I32: "i32", DType.F32: "f32"}
# `VeUnit`, `VeOpName` and `VeMode` are derived from the unit declarations (`ir.vector.units`);
# every per-unit fact these rules read is the unit's spec (`spec_of`).


def _op_value(step: VeStep) -> Any | None:
    """The op enum value a step names (None for a unit without one, or a name not of it)."""
    return op_value(spec_of(step.unit), step.op.name)


@attrs.frozen(kw_only=True)
class VectorPass(TuOp):
    """What the Vector Engine's pass records (`vector`, `vector_pair`, `vector_branch` and their
    `_rf` forms) share: an 8 x i32 or f32 stream `in`, one packet per cycle on the engine, and
    their `steps`' derived fields."""

    FEED_ELEMENTS: ClassVar[frozenset[Any]] = frozenset({FeedElementType.I32, FeedElementType.F32})
    ENGINE: ClassVar[Engine] = VECTOR
    busy_cycles = stream_cycles
    cost_counters = no_counters

    input: Ref = operand(name="in")

    def with_derived(self, rf_types: tuple[Any, ...] = ()) -> Any:
        """This pass with its derived fields recomputed from its types and its steps (the
        user's choices): each reduce step's `vcg=` (`with_vcgs`); an `_rf` record also
        derives its `rf_read` walks from `rf_types`, the types of the VRF tensors it names.
        The lowering fills the record with it; the VISA verifier compares with `derived`."""
        return attrs.evolve(self, steps=with_vcgs(self))  # type: ignore[attr-defined]

    def derived(self, at: Derivation) -> Any:
        return self.with_derived()


@attrs.frozen(kw_only=True)
class VectorEngineOp(VectorPass):
    """The Vector Engine configured for one pass over the stream."""

    MNEMONIC: ClassVar[str] = "vector"
    PIPELINE_RANK: ClassVar[int] = 70
    FEED_DEST: ClassVar[str | None] = "VECTOR"

    steps: tuple[VeStep, ...] = attr()

    @rule("VEOP-1")
    def _typing(self, target: Any, ctx: VerifyContext | None) -> str | None:
        t, out = self.input_type, self.output_type
        scalar = _SCALAR.get(t.dtype)
        if scalar is None or t.packet.size != 8:
            return f"the engine takes 8 x i32 or 8 x f32 per step, not {t.packet.size} x {t.dtype}"
        if not self.steps or self.steps[0].unit is not VeUnit.TAG:
            return "a pass starts with its TAG step"
        four_way, shape, before_trim = False, (t.time, t.packet), None
        for i, step in enumerate(self.steps[1:], start=1):
            src, dst = UNITS[step.unit.name]
            spec = spec_of(step.unit)
            if src not in ("any", scalar):
                return f"step {i} ({step.unit.name}) reads {src}, the stream holds {scalar}"
            if spec.way_in is not None and four_way != (spec.way_in == 4):
                return f"step {i} ({step.unit.name}) on {a_an('4' if four_way else '8')}-way stream"
            if dst == "op":  # a reinterpret names its scalar (VEOP-3 checks the name)
                scalar = {"TO_I32": "i32", "TO_F32": "f32"}.get(step.op.name, scalar)
            elif dst != "same":
                scalar = dst
            try:
                shape, before_trim = reshape(step.unit, shape, before_trim)
            except MappingError as e:
                return f"step {i} ({step.unit.name}) cannot reshape the stream: {e}"
            four_way = four_way if spec.way_out is None else spec.way_out == 4
        if four_way:
            return "the pass ends 4-way: a WIDEN_PAD or WIDEN_CONCAT step must follow the float steps"
        reduced = any(spec_of(s.unit).arg == "reduce" for s in self.steps)  # VEOP-7 checks a reduce's shape
        if not reduced and not (shape[0].equivalent(out.time) and shape[1].equivalent(out.packet)):
            return f"the steps leave time {shape[0]}, packet {shape[1]}; the output stream has {out.time}, {out.packet}"
        if _SCALAR.get(out.dtype) != scalar:
            return f"the steps leave {scalar}, the output stream holds {out.dtype}"
        return None

    @rule("VEOP-2")
    def _order(self, target: Any, ctx: VerifyContext | None) -> str | None:
        return _order_problem(self.steps, [_op_value(step) for step in self.steps])

    @rule("VEOP-3")
    def _args(self, target: Any, ctx: VerifyContext | None) -> str | None:
        for i, step in enumerate(self.steps):
            problem = _arg_problem(step)
            if problem:
                return f"step {i} ({step.unit.name}): {problem}"
        return None

    @rule("VEOP-7")
    def _reduce(self, target: Any, ctx: VerifyContext | None) -> str | None:
        return reduce_problem(self)

    @rule("VEOP-4")
    def _rf_port(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.MNEMONIC == "vector" and any(is_rf(s.unit) for s in self.steps):
            return "a register-file step needs a `vector_rf` record, which names the VRF tensor it reads"
        return None


def _order_problem(steps: Any, values: list[Any], repeats: frozenset[int] = frozenset()) -> str | None:
    """VEOP-2 (and VPAIR-2): the steps in stage order (a unit's rank again only when it is
    repeatable, or the step's index is in `repeats`) and one op per ALU, `values` being each
    step's op value (None: it takes no ALU)."""
    placed = [(i, step) for i, step in enumerate(steps)
              if spec_of(step.unit).rank is not None]  # a reinterpret holds its place
    for (_, prev), (i, step) in zip(placed, placed[1:]):
        a, b = spec_of(prev.unit).rank, spec_of(step.unit).rank
        if b < a or (a == b and not spec_of(step.unit).repeatable and i not in repeats):
            return f"step {i} ({step.unit.name}) may not follow {prev.unit.name}"
    alus: set[str] = set()
    for i, value in enumerate(values):
        if value is not None:
            if value.alu.name in alus:
                return f"step {i} uses the {value.alu.rust_name} ALU a second time"
            alus.add(value.alu.name)
    return None


def _mode_problem(step: VeStep) -> str | None:
    """A mode only on a binary or ternary step, of its kind; arg1 only on a ternary unit."""
    mode, spec = step.mode.name, spec_of(step.unit)
    if step.arg1 and spec.arity != 3:
        return f"only FP_TERNARY takes a second constant (arg1), not {step.unit.name}"
    if spec.arity == 3 and not 0 <= step.arg1 < 2**32:
        return f"arg1 {step.arg1} is not an f32 bit pattern"
    if mode == "DEFAULT":
        return None
    allowed = {2: E.BinaryArgMode, 3: E.TernaryArgMode}.get(spec.arity, ())
    return None if mode in {v.name for v in allowed} else f"mode {mode} is not an argument mode of {step.unit.name}"


_FIXED = {"tag": "the tag is ZERO with arg 0", "int_width": "a conversion is NONE with an int_width in 0 ... 31",
          "none": "a way change is NONE with arg 0"}


def _arg_problem(step: VeStep) -> str | None:
    problem = _mode_problem(step)
    if problem:
        return problem
    spec, a = spec_of(step.unit), step.arg
    value = op_value(spec, step.op.name)
    if spec.scalar_out == "op":  # the reinterpret
        ok = step.op.name in spec.ops and a == 0
        return None if ok else f"a reinterpret is {' or '.join(spec.ops)} with arg 0, not {step.op.name} {a}"
    if spec.arg in _FIXED:
        ok = step.op.name in spec.ops and (0 <= a <= 31 if spec.arg == "int_width" else a == 0)
        return None if ok else f"{_FIXED[spec.arg]}, not {step.op.name} {a}"
    if value is None:
        return f"{step.op.name} is not an op of this unit"
    if spec.arg == "unary":
        return None if a == 0 else f"a unary op takes no constant (arg 0), not {a}"
    if spec.arg == "reduce":
        return None if a in (0, 1) else f"a reduce keeps (0) or reduces (1) the packet, not {a}"
    if is_rf(step.unit):
        return None if a >= 0 else f"a register-file step's arg is the index of its VRF tensor, not {a}"
    if spec.arg == "f32":
        return None if 0 <= a < 2**32 else f"arg {a} is not an f32 bit pattern"
    if not -(2**31) <= a < 2**31:
        return f"constant {a} does not fit i32"
    shift = spec.shifts and "SHIFT" in step.op.name
    if shift and step.mode.name in ("DEFAULT", "MODE01", "MODE11") and not 0 <= a <= 31:  # the constant is the amount
        return f"shift amount {a} is outside 0 ... 31"
    return None
