"""A tagged pass that reads the VRF: `vector_branch_rf`, the `vector_branch` record with the
`rf` / `rf_read` fields of a `vector_rf` record.

Text: `%9 = vector_branch_rf in=%8 rf=[%5] tag=[...] stash_at=-1 steps=[..., {unit=FP_BINARY_RF,
op=SUB_F, arg=0, slots=[], stash=0}, ...] rf_read=[{time=[...], packet=[...]}] : <s> -> <s>`.
An `_RF` step's arg, and the `value` of a step's last slot with
`port=1` (`Branched.rf`), is the index of the VRF tensor it reads, through the pass's one
register-file port, at the word `rf_read` names for each stream cell. Rules VBR-1 ... VBR-4
as for `vector_branch`; VBR-1 checks the pass as the `vector_rf` record it would be without
its tag and slots, so it covers the VRF reads too (VEOP-5 / VEOP-6: the walks cover the
stream, each names a loaded tensor of the stream's scalar and stays inside it).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ir.vector.units import is_rf, spec_of
from tu_ops.base import Derivation, Ref, operand
from tu_ops.vector import VeOpName, VeStep, VeUnit
from tu_ops.vector_branch import VectorBranchOp
from tu_ops.vrf import RfRead, VectorRfOp, first_reads, rf_types, walk

__all__ = ["VectorBranchRfOp"]


@attrs.frozen(kw_only=True)
class VectorBranchRfOp(VectorBranchOp):
    """A tagged Vector Engine pass whose `_RF` steps read the VRF tensors `rf` (step arg: which)."""

    MNEMONIC: ClassVar[str] = "vector_branch_rf"
    PIPELINE_RANK: ClassVar[int] = 77

    rf: tuple[Ref, ...] = operand(name="rf")
    rf_read: tuple[RfRead, ...] = attrs.field(converter=tuple, metadata={"role": "attr", "name": None})

    def with_derived(self, rf_types: tuple[Any, ...] = ()) -> VectorBranchRfOp:
        """Also each tensor's `rf_read`: the walk of its element over the record's input stream
        (a tagged pass reads the VRF before any way change)."""
        rec = super().with_derived()
        first_reads([(i, k) for i, s in enumerate(rec.steps) if (k := _tensor_read(s)) is not None], len(self.rf))
        return attrs.evolve(rec, rf_read=tuple(walk(t.element, self.input_type) for t in rf_types))

    def derived(self, at: Derivation) -> VectorBranchRfOp:
        return self.with_derived(rf_types(self, at.types))

    def plain(self) -> VectorRfOp:
        """The same pass without its tag and slots, as a `vector_rf` record."""
        steps = [VeStep(VeUnit.TAG, VeOpName.ZERO, 0)]
        for s in self.steps:  # a step whose rf slot reads the VRF stands as its `_RF` form
            port = next((slot for slot in s.slots if slot.port), None)
            rf = spec_of(s.unit).rf_name
            if port is not None and rf is not None:
                steps.append(VeStep(VeUnit[rf], s.op, port.value))
            else:
                steps.append(VeStep(s.unit, s.op, s.arg, s.mode, s.arg1))
        return VectorRfOp(result=self.result, input=self.input, steps=tuple(steps), rf=self.rf, rf_read=self.rf_read,
                          input_type=self.input_type, output_type=self.output_type)


def _tensor_read(step: Any) -> int | None:
    """The VRF tensor a step reads: an `_RF` step's arg, or its rf slot's (`port=1`) value."""
    port = next((slot for slot in step.slots if slot.port == 1), None)
    if port is not None:
        return port.value
    return step.arg if is_rf(step.unit) else None
