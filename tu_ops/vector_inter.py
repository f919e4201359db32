"""The lowered inter-slice reducer: one `inter_slice_reduce` record per traced reduce.

Text: `%4 = inter_slice_reduce in=%3 op=ADD_SAT out_slice="A / 8, 1 # 4" : <stream> ->
<stream>`. The input stream lives on the program's current slice, the output on
`out_slice`: every record after it in its program runs on `out_slice` (the parser, the
interpreter and the verifier read it so). In the IntraFirst order it follows the pass's
`vector` record, in the InterFirst order the feed delivers to it and a `vector` record may
follow. The verifier re-checks the op against the scalar (INTEROP-1) and the shapes with
the traced rules' checker (INTEROP-2, `ir.vector.inter_reduce`).
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import attrs

from ir.dtypes import DType
from ir.mapping.nodes import Mapping
from ir.vector.inter_reduce import inter_fault
from tu_ops.base import Derivation, Ref, TuOp, VerifyContext, attr, operand, rule
from tu_ops.engines import VECTOR, Engine, no_counters, stream_cycles
from tu_ops.enums import FeedElementType

__all__ = ["InterReduceName", "InterSliceReduceOp", "INTER_OPS"]


class InterReduceName(enum.Enum):
    """The reducer's op: a variant name of `InterSliceReduceOpI32` / `InterSliceReduceOpF32`."""

    ADD = "ADD"
    ADD_SAT = "ADD_SAT"
    MAX = "MAX"
    MIN = "MIN"
    MUL = "MUL"

    def __str__(self) -> str:
        return self.name


# scalar -> the op names it takes
INTER_OPS = {DType.I32: frozenset({"ADD", "ADD_SAT", "MAX", "MIN"}), DType.F32: frozenset({"ADD", "MAX", "MIN", "MUL"})}


@attrs.frozen(kw_only=True)
class InterSliceReduceOp(TuOp):
    """The inter-slice reducer: fold the stream across the slices of each cluster."""

    MNEMONIC: ClassVar[str] = "inter_slice_reduce"
    PIPELINE_RANK: ClassVar[int] = 73
    TRACED_STAGE: ClassVar[str | None] = "vector_inter_slice_reduce"
    FEED_DEST: ClassVar[str | None] = "INTER_SLICE_REDUCE"
    FEED_ELEMENTS: ClassVar[frozenset[Any]] = frozenset({FeedElementType.I32, FeedElementType.F32})
    ENGINE: ClassVar[Engine] = VECTOR
    SLICE_AFTER: ClassVar[str | None] = "out_slice"  # its output, and every record after it, lives on out_slice
    busy_cycles = stream_cycles
    cost_counters = no_counters

    input: Ref = operand(name="in")
    op: InterReduceName = attr()
    out_slice: Mapping = attr()

    def derived(self, at: Derivation) -> InterSliceReduceOp:
        """Every field is the reduce's choice (INTEROP-1 and -2 check them against its types)."""
        return self

    @property
    def scalar(self) -> str:
        return "f32" if self.input_type.dtype == DType.F32 else "i32"

    @rule("INTEROP-1")
    def _op(self, target: Any, ctx: VerifyContext | None) -> str | None:
        t, out = self.input_type, self.output_type
        names = INTER_OPS.get(t.dtype)
        if names is None or t.packet.size != 8:
            return f"the reducer takes 8 x i32 or 8 x f32 per step, not {t.packet.size} x {t.dtype}"
        if self.op.name not in names:
            return f"{self.op.name} is not an inter-slice reduce op on {t.dtype}"
        if out.dtype != t.dtype or not out.packet.equivalent(t.packet):
            return "the reducer keeps the stream's dtype and packet"
        return None

    @rule("INTEROP-2")
    def _shapes(self, target: Any, ctx: VerifyContext | None) -> str | None:
        t, out = self.input_type, self.output_type
        if not out.slice.equivalent(self.out_slice):
            return f"the output stream lives on {out.slice}, not on out_slice {self.out_slice}"
        others = frozenset(t.chip.axes() | t.cluster.axes() | t.packet.axes())
        fault = inter_fault(t.slice, t.time, self.out_slice, out.time, others)
        return None if fault is None else f"{fault.code}: {fault.message}"
