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

__all__ = ["StageSpec", "STAGES", "declare_stage", "stage_specs", "spec_named"]


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

    @property
    def stage(self) -> str:
        """Its name: the DSL method, the traced op's word, the record's mnemonic."""
        return self.op.STAGE

    def choices(self, op: Any) -> dict[str, Any]:
        """The user's choices an op (traced, or its record) holds: the traced op's `attr` fields."""
        return {f.name: getattr(op, f.name) for f in attrs.fields(self.op) if f.metadata.get("role") == "attr"}


def _load() -> None:
    """Every module that declares a built-in stage (none yet: a new stage adds its import here)."""


STAGES = Table("stage", _load)  # traced op class -> its StageSpec


def declare_stage(spec: StageSpec) -> StageSpec:
    """Enter `spec` (in the open registry if there is one)."""
    STAGES[spec.op] = spec  # type: ignore[assignment]
    return spec


def stage_specs() -> list[StageSpec]:
    """Every declared stage (the open registries' too)."""
    return STAGES.values()  # type: ignore[return-value]


def spec_named(stage: str) -> StageSpec | None:
    """The declared stage called `stage`, or None."""
    return next((s for s in stage_specs() if s.stage == stage), None)
