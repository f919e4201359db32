"""The record of a declared stage (ir.stage_spec.StageSpec), made from the declaration.

Its fields are `in` and the user's choices (the traced op's `attr` fields, printed and parsed
as VISA text by their types); its output type and its rules are the traced op's: the
lowering fills it with `of_types`, `derived` recomputes it from its own input type and
choices, and the verifier runs the traced op's rules on it (a parsed record whose choices a
rule refuses is refused with that rule's code). It runs on the engine the declaration names,
one packet per cycle, and a feed may deliver to it when the declaration gives element types
(its `FEED_DEST` is its stage in capitals).
"""

from __future__ import annotations

import contextlib
import typing
from typing import Any, ClassVar

import attrs

from ir.declare import Table
from ir.ops import Value
from ir.stage_spec import STAGES, StageSpec, spec_named, stage_specs
from tu_ops.base import TU_OPS, Derivation, OpVerifyError, Ref, TuOp, VerifyContext, attr, operand
from tu_ops.engines import ENGINES, no_counters, stream_cycles
from tu_ops.enums import FeedElementType

__all__ = ["StageRecord", "record_of", "record_class", "stage_records"]


@attrs.frozen(kw_only=True)
class StageRecord(TuOp):
    """Base of the records made from stage declarations: `%n = <stage> in=%m <choices> : <in> -> <out>`."""

    SPEC: ClassVar[Any] = None  # the StageSpec it was made from
    busy_cycles = stream_cycles  # one input packet per cycle
    cost_counters = no_counters

    input: Ref = operand(name="in")

    @classmethod
    def of_types(cls, result: Ref, src: Ref, t: Any, choices: dict[str, Any], loc: Any) -> StageRecord:
        """The record of `choices` on a stream of type `t` (its output type: the traced op's)."""
        out = _traced(cls.SPEC, t, choices).infer_type()
        return cls(result=result, input=src, input_type=t, output_type=out, loc=loc, **choices)

    def derived(self, at: Derivation) -> StageRecord:
        return self.of_types(self.result, self.input, self.input_type, self.SPEC.choices(self), self.loc)

    def first_failure(self, target: Any, ctx: VerifyContext | None = None) -> OpVerifyError | None:
        """Its own rules, then the traced op's on its input type and choices."""
        error = super().first_failure(target, ctx)
        if error is not None:
            return error
        violation = _traced(self.SPEC, self.input_type, self.SPEC.choices(self)).check()
        if violation is None:
            return None
        return OpVerifyError(f"{self.MNEMONIC}: {violation.message}", code=violation.code, op=self, loc=self.loc,
                             notes=(f"in op `{self.text()}`",))


def _traced(spec: StageSpec, input_type: Any, choices: dict[str, Any]) -> Any:
    """The traced op of `choices` on a stream of `input_type` (for its type and its rules)."""
    return spec.op(input=Value(-1, input_type), **choices)


_MADE = Table("stage record")  # StageSpec -> its record class (made once; a registry's in the registry)


def record_of(spec: StageSpec) -> type[StageRecord]:
    """The record class of `spec`, made on first use."""
    made = _MADE.get(spec)
    if made is None:
        owner = STAGES.owner(spec.op)  # a registry's stage makes its record there
        with owner.declaring() if owner is not None else contextlib.nullcontext():
            made = _MADE[spec] = _make(spec)
    return made


def _make(spec: StageSpec) -> type[StageRecord]:
    hints = typing.get_type_hints(spec.op)
    body: dict[str, Any] = {
        "__module__": __name__, "__doc__": spec.doc or f"The `{spec.stage}` stage (a declared stage).",
        "__annotations__": {}, "SPEC": spec, "MNEMONIC": spec.stage,
        "PIPELINE_RANK": spec.rank, "TRACED_STAGE": spec.stage, "ENGINE": next(e for e in ENGINES if e.name == spec.engine),
        "FEED_DEST": spec.stage.upper() if spec.feed_elements else None,
        "FEED_ELEMENTS": frozenset(FeedElementType(d) for d in spec.feed_elements)}
    for f in attrs.fields(spec.op):
        if f.metadata.get("role") == "attr":
            body["__annotations__"][f.name] = hints[f.name]
            body[f.name] = attr(f.default, name=f.metadata.get("name"), optional=f.metadata.get("optional", False))
    name = "".join(w.title() for w in spec.stage.split("_")) + "Record"
    return attrs.frozen(kw_only=True)(type(name, (StageRecord,), body))


def record_class(mnemonic: str) -> type | None:
    """The record class of `mnemonic`: a declared one, or a declared stage's."""
    found = TU_OPS.get(mnemonic)
    if found is None and (spec := spec_named(mnemonic)) is not None:
        found = record_of(spec)
    return found


def stage_records() -> list[type[StageRecord]]:
    """The record of every declared stage."""
    return [record_of(spec) for spec in stage_specs()]
