"""A stage of the machine that is not a Vector Engine unit, declared once (as `UnitSpec`
declares a unit, ir/vector/units.py): every layer reads the declaration.

A `StageSpec` names the traced op (an `ir.ops.Op` subclass: its `STAGE`, its `attr` fields,
which are the user's choices, `infer_type()` and `RULES`), where the DSL offers it (`after`:
the traced ops whose stream stages get the method; `then`: the traced op whose stream stage
its result takes), the data movement itself (`run`, on each row's `x[time, packet]`, which
the cpu backend and the VISA interpreter both call), and its record's place in the
pipeline, engine and the element types a feed may bring it. From it are derived: the DSL
method (npu_opt.stagebase), the cpu handler (backends.cpu.handlers), the record class, its
VISA text and its re-derivation (tu_ops.stage_record), the lowering (tu_ops.lower.dispatch),
the feed destination kind (tu_ops.feed_fields) and the interpreter step (visa.interp.steps).

`declare_stage(spec)` enters it in `STAGES`; inside an open `ir.declare.Registry` it goes into
that registry alone (a test's toy stage). A built-in stage's module is imported by `_load`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ir.declare import Table
from ir.dtypes import DType

__all__ = ["StageSpec", "STAGES", "PLACES", "declare_stage", "placement_fault", "stage_specs", "spec_named"]


@attrs.frozen(eq=False)
class StageSpec:
    """One non-vector stage: the traced op and what every layer needs beyond it."""

    op: type  # the traced op class
    after: tuple[type, ...]  # the traced ops after which the DSL offers `op.STAGE`
    then: type  # the traced op whose stream stage the result takes (what may follow it)
    run: Callable[[Any, np.ndarray], np.ndarray]  # (op or record, x[row, time, packet]) -> its result rows
    rank: int  # the record's place in pipeline order (`PIPELINE_RANK`)
    engine: str  # the engine its record occupies in the schedule (a `tu_ops.engines.Engine`'s name)
    feed_elements: frozenset[DType] = frozenset()  # what a feed may bring it right after `collect` (none: no feed)
    doc: str = ""  # the record's docstring
    place: str = "stream"  # where it may sit (`PLACES`); `after` must agree, `declare_stage` checks

    @property
    def stage(self) -> str:
        """Its name: the DSL method, the traced op's word, the record's mnemonic."""
        return self.op.STAGE

    def choices(self, op: Any) -> dict[str, Any]:
        """The user's choices an op (traced, or its record) holds: the traced op's `attr` fields."""
        return {f.name: getattr(op, f.name) for f in attrs.fields(self.op) if f.metadata.get("role") == "attr"}


# Where a declared stage may sit, and the traced ops it may follow there. "stream": on a
# collected stream (after `collect` or any later stage), as a record of its own the feed or
# the record before delivers to. The feed (`begin` ... `collect`, the ops whose `FEED` is
# set) is one FeedBuffer record whose fields the feed lowering reads; a stage inside it would
# need a field of its own there (tu_ops/feed.py), so no declaration places one there.
PLACES: dict[str, Callable[[type], bool]] = {
    "stream": lambda op: not getattr(op, "FEED", False),
}


def placement_fault(spec: StageSpec) -> str | None:
    """Why `spec` cannot sit where it says (its `place`, and each op of its `after`), or None."""
    may_follow = PLACES.get(spec.place)
    if may_follow is None:
        return f"`{spec.stage}`: place {spec.place!r} is not one of {', '.join(map(repr, PLACES))}"
    bad = [op.STAGE for op in (*spec.after, spec.then) if not may_follow(op)]
    if bad:
        return (f"`{spec.stage}` sits on a collected stream (place {spec.place!r}), but it would follow "
                f"`{bad[0]}`, inside a feed (`begin` ... `collect`): a feed stage is a FeedBuffer field, "
                "not a declared stage")
    return None


def _load() -> None:
    """Every module that declares a built-in stage (none yet: a new stage adds its import here)."""


STAGES = Table("stage", _load)  # traced op class -> its StageSpec


def declare_stage(spec: StageSpec) -> StageSpec:
    """Enter `spec` (in the open registry if there is one); TypeError when it cannot sit
    where its `after` puts it (`placement_fault`)."""
    fault = placement_fault(spec)
    if fault is not None:
        raise TypeError(fault)
    STAGES[spec.op] = spec  # type: ignore[assignment]
    return spec


def stage_specs() -> list[StageSpec]:
    """Every declared stage (the open registries' too)."""
    return STAGES.values()  # type: ignore[return-value]


def spec_named(stage: str) -> StageSpec | None:
    """The declared stage called `stage`, or None."""
    return next((s for s in stage_specs() if s.stage == stage), None)
