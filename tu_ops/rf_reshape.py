"""The `rf_reshape` record: a VRF or TRF tensor relabelled (`ir.rf_reshape`).

`%6 = rf_reshape in=%4 : vrf[i32, "1", "1 # 2", "1 # 256", "E"] -> vrf[i32, "1", "1 # 2",
"1 # 256", "P, Q"]` names the words of the register-file tensor `in` by the output type:
nothing moves and nothing runs (no cycles, no cost). A reader of the result (a `vector_rf`
pass, a contraction's weights) is checked against the output type, and reads the words of
the tensor the relabel chain starts at (`rf_root`): its `vrf_load`, `trf_load` or
`tensor_new`, which stays live, at its place, through the last read of any relabel of it.
Rule RFRESHAPE-2: the output type is a relabel of the input type (`ir.rf_relabel`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ir.rf_relabel import relabel_problem
from tu_ops.base import Ref, TuOp, VerifyContext, derived_of_types, operand, rule
from tu_ops.engines import DMA, Engine, no_counters, no_cycles

__all__ = ["RfReshapeOp", "rf_root", "rf_aliases"]


@attrs.frozen(kw_only=True)
class RfReshapeOp(TuOp):
    """The register-file tensor `input` under the output type."""

    MNEMONIC: ClassVar[str] = "rf_reshape"
    PIPELINE_RANK: ClassVar[int] = 121
    TRACED_STAGE: ClassVar[str | None] = "rf_reshape"
    IN_PROGRAM: ClassVar[bool] = False
    IN_KINDS: ClassVar[tuple[str, ...]] = ("vrf", "trf")
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("vrf", "trf")
    ENGINE: ClassVar[Engine] = DMA
    busy_cycles = no_cycles
    cost_counters = no_counters

    input: Ref = operand(name="in")

    @classmethod
    def of_types(cls, result: Ref, src: Ref, old: Any, new: Any, loc: Any) -> RfReshapeOp:
        """The relabel of the tensor `src` of type `old` to `new`: the types are its only fields."""
        return cls(result=result, input=src, input_type=old, output_type=new, loc=loc)

    derived = derived_of_types

    @rule("RFRESHAPE-2")
    def _relabel(self, target: Any, ctx: VerifyContext | None) -> str | None:
        v = relabel_problem(self.input_type, self.output_type)
        return None if v is None else f"{v.message} ({v.code})"


def rf_root(ref: Any, op_of: Any) -> Any:
    """The record that made the register-file tensor `ref` names, through its relabels
    (`op_of(ref)`: the record defining a value, or None)."""
    op = op_of(ref)
    while op is not None and getattr(op, "MNEMONIC", None) == "rf_reshape":
        op = op_of(op.input)
    return op


def rf_aliases(ops: Any) -> dict[int, int]:
    """Every relabel's result id -> the id of the tensor its chain starts at (`ops` in body
    order): a read of the relabel is a read of that tensor (its liveness, its place)."""
    root: dict[int, int] = {}
    for op in ops:
        if getattr(op, "MNEMONIC", None) == "rf_reshape":
            root[op.result.id] = root.get(op.input.id, op.input.id)
    return root
