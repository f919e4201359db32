"""`TransposeOp`: the lowered Transpose Engine, carrying the engine's five parameters and
its input packing.

Text: `%3 = transpose in=%2 in_rows=8 in_cols=8 out_rows=8 packets_per_col=1
valid_size_per_packet=8 : <stream> -> <stream>`. A transpose whose 8- or 16-bit packets
carry 16 valid elements (doubled input packing) adds `fetch_in_width_shift=1` after
`valid_size_per_packet`; the field is absent for the base packing. The verifier re-checks
the parameters against the input stream with the traced rules' own checker
(`ir.transpose.params.check_transpose_params`): TRANSPOSE-18, then 6 ... 11.

Its busy cycles on the engine are its input packets, one per cycle whatever the packing:
a doubled packet brings 16 elements in that cycle, so a tile read with doubled packing
takes half the cycles of the same tile read 8 elements per packet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from ir.transpose.params import TransposeParams, check_transpose_params
from ir.diagnostic import Violation
from ir.transpose.rules import check_transpose
from tu_ops.base import Ref, TuOp, VerifyContext, attr, derived_of_types, operand, rule
from tu_ops.engines import TRANSPOSE, Engine, no_counters, stream_cycles
from tu_ops.enums import STORED_ELEMENTS

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["TransposeOp"]


def _checker_rule(code: str) -> Any:
    """The rule `code` as the parameter checker reports it (`TransposeOp._problem`): the rules
    TRANSPOSE-6 ... 10 of the record are the checker's alone."""

    @rule(code)
    def check(self: TransposeOp, target: Target, ctx: VerifyContext | None) -> str | None:
        return self._problem(code)

    return check


@attrs.frozen(kw_only=True)
class TransposeOp(TuOp):
    """Transpose Engine: `[in_rows x in_cols]` tiles of `packets_per_col` packets per row."""

    MNEMONIC: ClassVar[str] = "transpose"
    PIPELINE_RANK: ClassVar[int] = 90
    TRACED_STAGE: ClassVar[str | None] = "transpose"
    FEED_DEST: ClassVar[str | None] = "TRANSPOSE"
    FEED_ELEMENTS: ClassVar[frozenset[Any]] = STORED_ELEMENTS
    ENGINE: ClassVar[Engine] = TRANSPOSE
    # one input packet per cycle: `packets_per_col` packets per input row, `in_rows` rows per
    # tile; the packing sets how many elements each of those packets brings
    busy_cycles = stream_cycles
    cost_counters = no_counters

    input: Ref = operand(name="in")
    in_rows: int = attr()
    in_cols: int = attr()
    out_rows: int = attr()
    packets_per_col: int = attr()
    valid_size_per_packet: int = attr()
    fetch_in_width_shift: int | None = attr(None, optional=True)  # 1: doubled input packing

    @classmethod
    def of_types(cls, result: Ref, src: Ref, t: Any, out: Any, loc: Any) -> TransposeOp:
        """The transpose of stream `t` into `out`, with the parameters the rules find
        (`ir.transpose.rules.check_transpose`; `fetch_in_width_shift=1`: doubled input packing)."""
        p = check_transpose(t.time, t.packet, out.time, out.packet, t.dtype)
        if isinstance(p, Violation):
            raise ValueError(p.message)
        return cls(result=result, input=src, in_rows=p.in_rows, in_cols=p.in_cols, out_rows=p.out_rows,
                   packets_per_col=p.packets_per_col, valid_size_per_packet=p.valid_size_per_packet,
                   fetch_in_width_shift=p.fetch_in_width_shift or None, input_type=t, output_type=out, loc=loc)

    derived = derived_of_types

    @property
    def params(self) -> TransposeParams:
        return TransposeParams(self.in_rows, self.in_cols, self.out_rows, self.packets_per_col,
                               self.valid_size_per_packet, self.fetch_in_width_shift or 0)

    def _problem(self, code: str) -> str | None:
        """The message of rule `code` when the parameters break it (the checker reports the
        first broken rule, so each rule sees the ones before it pass)."""
        t = self.input_type
        found = check_transpose_params(self.params, t.time, t.packet, t.dtype)
        if found is None:
            return None
        if found.code == "TRANSPOSE-1":  # no engine shape for the dtype: no valid width either
            found = attrs.evolve(found, code="TRANSPOSE-6")
        return found.message if found.code == code else None

    @rule("TRANSPOSE-18")
    def _transpose_18(self, target: Target, ctx: VerifyContext | None) -> str | None:
        if self.fetch_in_width_shift == 0:
            return "fetch_in_width_shift=0 is written by its absence (base input packing)"
        return self._problem("TRANSPOSE-18")

    _transpose_6 = _checker_rule("TRANSPOSE-6")
    _transpose_7 = _checker_rule("TRANSPOSE-7")
    _transpose_8 = _checker_rule("TRANSPOSE-8")
    _transpose_9 = _checker_rule("TRANSPOSE-9")
    _transpose_10 = _checker_rule("TRANSPOSE-10")

    @rule("TRANSPOSE-11")
    def _transpose_11(self, target: Target, ctx: VerifyContext | None) -> str | None:
        problem = self._problem("TRANSPOSE-11")
        if problem:
            return problem
        t, out = self.input_type, self.output_type
        outer = t.time.size // (self.in_rows * self.packets_per_col)
        if out.time.size != outer * self.out_rows:
            return (f"the output Time has {out.time.size} steps; {outer} tiles of out_rows {self.out_rows} "
                    f"make {outer * self.out_rows}")
        return None
