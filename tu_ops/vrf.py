"""The Vector Register File records: `vrf_load` and the `vector_rf` pass that reads it.

`%5 = vrf_load in=%4 words=64 base=0 write={time=[8:8], packet=[8:1]} : stream[i32, "E / 8",
"E % 8"] -> vrf[i32, "E"]` stores its input stream in `words` 4-byte words from word `base`
of every slice's VRF (`base` is filled by the allocation pass): word `i` holds cell `i` of
the tensor's element, and `write` gives the word each live stream cell goes to. `vector_rf` is a
`vector` record whose `_RF` steps read one VRF value per stream cell through the pass's
register-file port: `rf=[%5] rf_read=[{time=[8:0, 8:8], packet=[8:1]}]` gives, for each
VRF tensor the pass reads, the word (from the tensor's first) each stream cell reads, as
loop entries `size:stride` over the stream's time and packet; an `_RF` step's arg is the
index of the tensor it reads. Rules VRFLD-1, VRFLD-2 (the load), VEOP-5, VEOP-6 (the read).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs

from ir.errors import MappingError
from ir.mapping.ops import Entry
from ir.vector.units import is_rf
from ir.vector.ways import FLIT
from ir.mapping.sequence import sequence
from tu_ops.rf_reshape import rf_root
from tu_ops.base import Derivation, Ref, TuOp, VerifyContext, as_entries, attr, derived_of_types, operand, rule
from tu_ops.engines import VRF_LOAD, Engine, no_counters, stream_cycles
from tu_ops.enums import FeedElementType
from tu_ops.vector import VectorEngineOp, stream_before
from tu_ops.vrf_memory import VRF_SCALARS as _SCALARS, vrf_capacity, vrf_new_problem, vrf_words
import numpy as np

__all__ = ["VrfLoad", "RfRead", "VectorRfOp", "vrf_capacity", "rf_offsets", "vrf_words", "vrf_new_problem", "walk",
           "rf_types", "first_reads"]



@attrs.frozen
class RfRead:
    """Where each stream cell reads the VRF: loop entries over time, then packet."""

    TEXT_STYLE: ClassVar[str] = "struct"
    time: tuple[Entry, ...] = attrs.field(converter=as_entries)
    packet: tuple[Entry, ...] = attrs.field(converter=as_entries)


def walk(element: Any, stream: Any) -> RfRead:
    """The word of `element` each cell of the stream type's [time, packet] reads or writes."""
    found = sequence(element, [stream.time, stream.packet])
    if not found:
        raise ValueError(f"no VRF walk from [{stream.time}, {stream.packet}] to {element}: {found.reason}")
    time, packet = found.levels
    return RfRead(time=time, packet=packet)


def rf_types(rec: Any, types: dict[int, Any]) -> tuple[Any, ...]:
    """The types of the VRF tensors a pass record's `rf` names (ValueError: one is not a VRF tensor)."""
    out = tuple(types.get(ref.id) for ref in rec.rf)
    for ref, t in zip(rec.rf, out):
        if getattr(t, "kind", None) != "vrf":
            raise ValueError(f"rf {ref} is not a VRF tensor")
    return out


def first_reads(reads: Any, tensors: int) -> list[int]:
    """The first step reading each of a record's `tensors` VRF tensors, from (step, tensor)
    of every read in step order. The lowering names the tensors in the order the steps first
    read them; ValueError for a record naming them otherwise, or naming one no step reads."""
    first: dict[int, int] = {}
    for i, k in reads:
        first.setdefault(k, i)
    if list(first) != list(range(tensors)):
        raise ValueError(f"the steps first read VRF tensors {list(first)}, the record names {tensors} in that order")
    return list(first.values())


@attrs.frozen(kw_only=True)
class VrfLoad(TuOp):
    """Store the stream's flits in the VRF of every slice of the program's space."""

    MNEMONIC: ClassVar[str] = "vrf_load"
    PIPELINE_RANK: ClassVar[int] = 22
    TRACED_STAGE: ClassVar[str | None] = "to_vrf"
    FEED_DEST: ClassVar[str | None] = "VRF_LOAD"
    FEED_ELEMENTS: ClassVar[frozenset[Any]] = frozenset({FeedElementType.I32, FeedElementType.F32})
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("vrf",)
    ENGINE: ClassVar[Engine] = VRF_LOAD
    busy_cycles = stream_cycles
    cost_counters = no_counters

    input: Ref = operand(name="in")
    words: int = attr()
    base: int = attr(0)
    write: RfRead = attr()

    @classmethod
    def of_types(cls, result: Ref, src: Ref, stream: Any, out: Any, loc: Any) -> VrfLoad:
        """The load of `stream` into the VRF tensor `out`: its words in element order, written
        by the sequencer walk of `walk`; `base` is the VRF allocation's."""
        return cls(result=result, input=src, words=out.element.size, base=0, write=walk(out.element, stream),
                   input_type=stream, output_type=out, loc=loc)

    derived = derived_of_types

    @rule("VRFLD-1")
    def _scalar(self, target: Any, ctx: VerifyContext | None) -> str | None:
        t, out = self.input_type, self.output_type
        if t.dtype not in _SCALARS or t.packet.size != 8:
            return f"the VRF takes 8 x i32 or 8 x f32 flits, not {t.packet.size} x {t.dtype}"
        if out.dtype != t.dtype:
            return f"the VRF tensor holds {out.dtype}, the stream {t.dtype}"
        return None

    @rule("VRFLD-2")
    def _size(self, target: Any, ctx: VerifyContext | None) -> str | None:
        flits = self.input_type.time.size
        if self.words != self.output_type.element.size:
            return f"the VRF tensor's element has {self.output_type.element.size} cells, the load stores {self.words}"
        w = self.write
        if math.prod(e.size for e in w.time) != flits or math.prod(e.size for e in w.packet) != 8:
            return f"the write walks {math.prod(e.size for e in w.time)} x {math.prod(e.size for e in w.packet)} cells"
        if sum((e.size - 1) * e.stride for e in (*w.time, *w.packet)) >= self.words:
            return f"the write walk leaves the tensor's {self.words} words"
        if self.base < 0 or self.base + self.words > vrf_capacity(target):
            return f"words {self.base}..{self.base + self.words - 1} leave the slice's {vrf_capacity(target)}-word VRF"
        return None


def rf_offsets(read: RfRead) -> Any:
    """(T, P) word offsets of every stream cell, from the entries (numpy int64)."""
    def level(entries: tuple[Entry, ...]) -> Any:
        out = np.zeros(1, np.int64)
        for e in entries:
            out = (out[:, None] + np.arange(e.size, dtype=np.int64)[None, :] * e.stride).reshape(-1)
        return out

    return level(read.time)[:, None] + level(read.packet)[None, :]


@attrs.frozen(kw_only=True)
class VectorRfOp(VectorEngineOp):
    """A Vector Engine pass whose `_RF` steps read the VRF tensors `rf` (step arg: which)."""

    MNEMONIC: ClassVar[str] = "vector_rf"
    PIPELINE_RANK: ClassVar[int] = 71

    rf: tuple[Ref, ...] = operand(name="rf")
    rf_read: tuple[RfRead, ...] = attrs.field(converter=tuple, metadata={"role": "attr", "name": None})

    def with_derived(self, rf_types: tuple[Any, ...] = ()) -> VectorRfOp:
        """Also each tensor's `rf_read`: the walk of its element over the stream the first step
        reading it reads (the record's input, or after a split, that stream padded to a flit)."""
        rec = super().with_derived()
        t = self.input_type
        first = first_reads([(i, s.arg) for i, s in enumerate(rec.steps) if is_rf(s.unit)], len(self.rf))
        walks = []
        for vrf_t, at in zip(rf_types, first, strict=True):
            time, packet = stream_before(t.time, t.packet, rec.steps, at)
            stream = t if time.equivalent(t.time) else attrs.evolve(t, time=time, packet=packet.pad(FLIT).normalize())
            walks.append(walk(vrf_t.element, stream))
        return attrs.evolve(rec, rf_read=tuple(walks))

    def derived(self, at: Derivation) -> VectorRfOp:
        return self.with_derived(rf_types(self, at.types))

    @rule("VEOP-5")
    def _read_shape(self, target: Any, ctx: VerifyContext | None) -> str | None:
        t = self.input_type
        if not self.rf or len(self.rf) != len(self.rf_read):
            return f"{len(self.rf)} VRF tensors but {len(self.rf_read)} rf_read walks"
        for k, r in enumerate(self.rf_read):
            steps = [i for i, s in enumerate(self.steps) if is_rf(s.unit) and s.arg == k]
            try:  # the stream at the step reading it: a split before it doubles the time
                time = stream_before(t.time, t.packet, self.steps, steps[0])[0] if steps else t.time
            except MappingError as e:
                return f"the stream before step {steps[0]} has no shape: {e}"
            if math.prod(e.size for e in r.time) != time.size or math.prod(e.size for e in r.packet) != 8:
                return (f"rf_read walks {math.prod(e.size for e in r.time)} x "
                        f"{math.prod(e.size for e in r.packet)} cells, the stream has {time.size} x 8")
            if any(e.stride < 0 for e in (*r.time, *r.packet)):
                return "an rf_read stride is negative"
        reads = [s.arg for s in self.steps if is_rf(s.unit)]
        if not reads:
            return "no step reads the register file"
        if any(a >= len(self.rf) for a in reads):
            return f"a step reads VRF tensor {max(reads)}, the record names {len(self.rf)}"
        return None

    @rule("VEOP-6")
    def _read_source(self, target: Any, ctx: VerifyContext | None) -> str | None:
        for ref, r in zip(self.rf, self.rf_read):
            top = sum((e.size - 1) * e.stride for e in (*r.time, *r.packet))
            if top >= vrf_capacity(target):
                return f"rf_read reaches word {top}, past the slice's {vrf_capacity(target)}-word VRF"
            load = rf_root(ref, ctx.op) if ctx is not None else None  # through its relabels
            words = vrf_words(load)
            if ctx is not None and words is None:
                return f"rf {ref} is not the result of a vrf_load or a VRF tensor_new"
            if load is None:
                continue
            if load.output_type.dtype != self.input_type.dtype:
                return f"the VRF tensor {ref} holds {load.output_type.dtype}, the stream {self.input_type.dtype}"
            if top >= words:
                return f"rf_read reaches word {top}, the VRF tensor {ref} holds {words}"
        return None
