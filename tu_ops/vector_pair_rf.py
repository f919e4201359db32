"""A pair-mode pass that reads the VRF: `vector_pair_rf`, the `vector_pair` record with the
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

import math
from typing import Any, ClassVar

import attrs

from ir.vector.units import spec_of
from ir.vector.ways import FLIT, split_shape
from tu_ops.rf_reshape import rf_root
from tu_ops.base import Derivation, Ref, VerifyContext, operand, rule
from tu_ops.vector_pair import VectorPairOp
from tu_ops.vrf import VRF_WORDS, RfRead, first_reads, rf_types, vrf_words, walk

__all__ = ["VectorPairRfOp", "group_stream"]


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
            if top >= (vrf_words(load) if load is not None else VRF_WORDS):
                return f"rf_read reaches word {top}, past the VRF tensor {ref}"
        if not any(s.rf for s in self.steps):
            return "no step reads the register file"
        return None


def _read_args(step: Any) -> set[int]:
    return {a for g, a in enumerate((step.arg0, step.arg1)) if step.rf >> g & 1}
