"""The lowered back half of a TU program (docs/reference/diagnostics.md): `CastOp` and the `CommitOp` sink.

CASTOP-1 ... CASTOP-2 and CMT-1 ... CMT-5, in that order. A CommitOp's destination
allocation is `[dest, dest + bytes(element) rounded up to 8)` in every slice's DM.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs

from ir.mapping.live import is_window
from ir.mapping.nodes import Mapping, Resize
from ir.mapping.ops import coalesce
from ir.rules.commit_plan import commit_write_plan
from tu_ops.base import Derivation, Entry, Ref, TuOp, VerifyContext, attr, derived_of_types, entries_ok, operand, rule
from tu_ops.dma_view import with_levels
from tu_ops.engines import CAST, COMMIT, Engine, Rate, ceil_div, no_counters, stream_cycles
from tu_ops.enums import STORED_ELEMENTS, CommitConversion, FeedElementType, TuContext
from tu_ops.feed import as_entries
from tu_ops.printing import mapping_text
from tu_ops.valid_count import PackConfig, pack_config, pack_problem
from ir.words import a_an

__all__ = ["CastOp", "WritePlan", "CommitOp"]


@attrs.frozen(kw_only=True)
class CastOp(TuOp):
    """Cast Engine: narrow one 32-bit flit to `out_type`, keeping `valid_elems` live cells.

    Text: `%9 = cast_op in=%8 in_type=F32 out_type=BF16 valid_elems=8 : <stream> -> <stream>`."""

    MNEMONIC: ClassVar[str] = "cast_op"
    PIPELINE_RANK: ClassVar[int] = 80
    TRACED_STAGE: ClassVar[str | None] = "cast"
    FEED_DEST: ClassVar[str | None] = "CAST"
    FEED_ELEMENTS: ClassVar[frozenset[Any]] = frozenset({FeedElementType.I32, FeedElementType.F32})
    ENGINE: ClassVar[Engine] = CAST
    busy_cycles = stream_cycles
    cost_counters = no_counters

    input: Ref = operand(name="in")
    in_type: FeedElementType = attr()
    out_type: FeedElementType = attr()
    valid_elems: int = attr()

    @classmethod
    def of_types(cls, result: Ref, src: Ref, t: Any, out: Any, loc: Any) -> CastOp:
        """Narrow one 32-bit flit of `t` to `out`'s dtype, `valid_elems = size(P)`."""
        return cls(result=result, input=src, in_type=FeedElementType.of(t.dtype), out_type=FeedElementType.of(out.dtype),
                   valid_elems=t.packet.size, input_type=t, output_type=out, loc=loc)

    derived = derived_of_types

    @rule("CASTOP-1")
    def _castop_1(self, target: Any, ctx: VerifyContext | None) -> str | None:
        entry = target.cast_entry(self.in_type.dtype, self.out_type.dtype)
        if entry is None:
            return f"{self.in_type} -> {self.out_type} is not a Cast Engine pair"
        if not entry.native:
            return f"{self.in_type} -> {self.out_type} is not native on {target.name}"
        if (self.input_type.dtype, self.output_type.dtype) != (self.in_type.dtype, self.out_type.dtype):
            return "in_type / out_type differ from the stream types"
        return None

    @rule("CASTOP-2")
    def _castop_2(self, target: Any, ctx: VerifyContext | None) -> str | None:
        flit_bits = 8 * target.constants.FLIT_BYTES
        for side, t in (("input", self.input_type), ("output", self.output_type)):
            if t.packet.size * self.bits(target, t.dtype) != flit_bits:
                return f"the {side} packet {t.packet.size} x {t.dtype} is not one flit"
        limit = flit_bits // max(self.bits(target, self.out_type.dtype), 1)
        if not 1 <= self.valid_elems <= limit:
            return f"valid_elems {self.valid_elems} not in [1, {limit}]"
        if self.valid_elems != self.input_type.packet.size:
            return f"valid_elems {self.valid_elems} != size of the input packet {self.input_type.packet.size}"
        return None


@attrs.frozen(kw_only=True)
class WritePlan:
    """The Commit Engine's coalesced loop nest, strides in destination elements."""

    TEXT_STYLE: ClassVar[str] = "struct"
    time: tuple[Entry, ...] = attrs.field(converter=as_entries)
    packet: tuple[Entry, ...] = attrs.field(converter=as_entries)

    def entries(self) -> tuple[Entry, ...]:
        return self.time + self.packet


@attrs.frozen(kw_only=True)
class CommitOp(TuOp):
    """Commit Adapter + Commit Engine: trim to `valid_bytes`, convert, write by `write`.

    Text: `%11 = commit in=%10 valid_bytes=32 conversion=NONE write={time=[128:8],
    packet=[8:1]} write_bytes=32 dest=4096 : <stream entering commit_trim> -> <dm>`. `dest`
    is the new tensor's byte address in every slice's DM (the tensor is the op's result)."""

    MNEMONIC: ClassVar[str] = "commit"
    PIPELINE_RANK: ClassVar[int] = 100
    TRACED_STAGE: ClassVar[str | None] = "commit_trim"
    FEED_DEST: ClassVar[str | None] = "COMMIT"
    FEED_ELEMENTS: ClassVar[frozenset[Any]] = STORED_ELEMENTS
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("dm",)
    ENGINE: ClassVar[Engine] = COMMIT

    input: Ref = operand(name="in")
    valid_bytes: int = attr()
    conversion: CommitConversion = attr(CommitConversion.NONE)
    write: WritePlan = attr()
    write_bytes: int = attr()
    dest: int = attr()
    pack: PackConfig | None = attr(None, optional=True)  # the sub context's valid-count packing (CMT-6)
    # `commit_view` straight into the DM tensor `into`: its window `view` (one mapping per level)
    # starts `offset` bytes into it; the result is `into`'s new contents, of `into`'s type
    into: Ref | None = operand(optional=True)
    view: tuple[Mapping, ...] | None = attr(None, converter=attrs.converters.optional(tuple), optional=True)
    offset: int | None = attr(None, optional=True)
    # a window at a runtime start (`commit_view` into a tile at a loop index): `dest` moves by
    # `start * start_bytes` bytes when the program runs; a start past `start_limit` stops the run
    start: Ref | None = operand(optional=True)
    start_bytes: int | None = attr(None, optional=True)
    start_limit: int | None = attr(None, optional=True)

    @classmethod
    def of_types(cls, result: Ref, src: Ref, t: Any, stream: Any, out: Any, conversion: CommitConversion,
                 packed: bool, context: TuContext, target: Any, loc: Any) -> CommitOp:
        """The commit of `t` into `out`'s element, `stream` being the packet `commit_trim` keeps of
        it, converted. The write plan is `ir.rules.commit_plan.commit_write_plan`'s (COMMIT-2..6);
        `write_bytes` (visa/visa.lark granularity) is `valid_bytes` when one packet is one contiguous
        write, else its contiguous piece, in MAIN, and the access width in SUB. A valid-count
        `packed` commit writes densely: no write plan, the SUB access width. `dest` is the
        allocation's."""
        bits = target.bits_of(stream.dtype) or stream.dtype.bits
        nbits = stream.packet.size * bits
        if nbits % 8:
            raise ValueError("the committed packet is not whole bytes")
        sub = target.constants.SUB_ACCESS_BYTES
        if packed:
            return cls(result=result, input=src, valid_bytes=nbits // 8, conversion=CommitConversion.NONE,
                       write=WritePlan(time=(), packet=()), write_bytes=sub, dest=0, pack=pack_config(stream),
                       input_type=t, output_type=out, loc=loc)
        plan = commit_write_plan(stream, out.element)
        write_bytes = sub if context is TuContext.SUB else nbits // 8 if plan.contiguous else plan.piece_elems * bits // 8
        return cls(result=result, input=src, valid_bytes=nbits // 8, conversion=conversion,
                   write=WritePlan(time=plan.time, packet=plan.packet), write_bytes=write_bytes, dest=0,
                   input_type=t, output_type=out, loc=loc)

    def derived(self, at: Derivation) -> CommitOp:
        """The trim keeps the input packet's first `valid_bytes` worth of cells of the committed
        dtype (TRIM-2); a commit into a tensor commits its window `view`."""
        out = self.output_type if self.view is None else with_levels(self.output_type, self.view)
        bits = at.target.bits_of(out.dtype) or out.dtype.bits
        if (self.valid_bytes * 8) % bits:
            raise ValueError(f"valid_bytes {self.valid_bytes} is not a whole number of {out.dtype} cells")
        n, packet = self.valid_bytes * 8 // bits, self.input_type.packet
        if not 1 <= n <= packet.size:
            raise ValueError(f"valid_bytes {self.valid_bytes} keeps {n} cells of {a_an(packet.size)}-cell packet")
        trimmed = packet if n == packet.size else Resize(packet, n).normalize()
        dtype = self.input_type.dtype if self.conversion is CommitConversion.NONE else out.dtype
        stream = attrs.evolve(self.input_type, packet=trimmed, dtype=dtype)
        low = self.of_types(self.result, self.input, self.input_type, stream, out, self.conversion,
                            self.pack is not None, at.context, at.target, self.loc)
        if self.into is None:
            return low
        return attrs.evolve(low, into=self.into, view=self.view, offset=self.offset, output_type=self.output_type,
                            start=self.start, start_bytes=self.start_bytes, start_limit=self.start_limit)

    def context(self, ctx: VerifyContext | None) -> TuContext:
        program = ctx.program_of(self.result) if ctx is not None else None
        return program.context if program is not None else TuContext(self.input_type.context)

    def elem_bits(self, target: Any) -> int:
        """Bits of one written element (the destination dtype, after the conversion)."""
        return self.bits(target, self.output_type.dtype)

    def alloc_bytes(self, target: Any) -> int:
        """Bytes of the destination allocation from `dest` on: bytes(element) rounded up to 8
        (less the window's `offset` for a commit into an existing tensor)."""
        nbytes = -(-self.output_type.element.size * self.elem_bits(target) // 8)
        return -(-nbytes // 8) * 8 - (self.offset or 0)

    def busy_cycles(self, rate: Rate, target: Any) -> int:
        """One write per time step: of the write plan, or of the input stream when packing
        (a packed commit writes one flit a step)."""
        steps = self.input_type.time.size if self.pack is not None else math.prod(e.size for e in self.write.time)
        return ceil_div(steps, rate("tensor_unit", "commit_writes_per_cycle"))

    def cost_counters(self, target: Any) -> dict[str, int]:
        """DM bytes written: valid bytes per write, or only the counted cells when packing."""
        if self.pack is not None:
            return {"dm_write_bytes": -(-self.output_type.element.size * self.bits(target, self.output_type.dtype) // 8)}
        return {"dm_write_bytes": math.prod(e.size for e in self.write.time) * self.valid_bytes}

    @rule("CMT-1")
    def _cmt_1(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.pack is not None:  # CMT-6 judges a packed commit
            return None
        if self.valid_bytes not in target.constants.COMMIT_WIDTHS:
            return f"valid_bytes {self.valid_bytes} not one of {list(target.constants.COMMIT_WIDTHS)}"
        nbits = math.prod(e.size for e in self.write.packet) * self.elem_bits(target)
        if nbits != 8 * self.valid_bytes:
            return f"the packet write covers {nbits / 8:g} bytes, not valid_bytes {self.valid_bytes}"
        return None

    @rule("CMT-2")
    def _cmt_2(self, target: Any, ctx: VerifyContext | None) -> str | None:
        src, dst = self.input_type.dtype, self.output_type.dtype
        if self.conversion is CommitConversion.NONE:
            return None if src == dst else f"no conversion, but {src} is committed as {dst}"
        if self.context(ctx) is not TuContext.MAIN:
            return "a commit conversion runs only in the MAIN context"
        entry = target.commit_cast_entry(src, dst)
        if entry is None or not entry.native:
            return f"{self.conversion} cannot convert {src} to {dst}"
        base = target.constants.COMMIT_BASE * self.bits(target, src) // max(self.bits(target, dst), 1)
        pre = self.valid_bytes * self.bits(target, src) // max(self.bits(target, dst), 1)
        if pre % base or pre > target.constants.FLIT_BYTES:
            return f"{pre} {src} bytes before the conversion; must be a multiple of {base} up to one flit"
        return None

    @rule("CMT-3")
    def _cmt_3(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.pack is not None:  # CMT-6 judges a packed commit
            return None
        c = target.constants
        problem = entries_ok(self.write.entries(), c.SEQ_MAX_ENTRIES, c.SEQ_MAX_ITER)
        return f"write plan: {problem}" if problem else None

    @rule("CMT-4")
    def _cmt_4(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.pack is not None:  # CMT-6 judges a packed commit
            return None
        c, bits = target.constants, self.elem_bits(target)
        base_bits = 8 * c.COMMIT_BASE
        for e in self.write.time:
            if e.stride * bits % base_bits:
                return f"time entry {e} steps {e.stride * bits / 8:g} bytes, not a multiple of {c.COMMIT_BASE}"
        run = coalesce(self.write.packet)
        piece = run[-1].size if run and run[-1].stride == 1 else 1
        if piece * bits % base_bits:
            return f"a contiguous write piece is {piece * bits / 8:g} bytes, not a multiple of {c.COMMIT_BASE}"
        if self.write_bytes <= 0 or self.write_bytes % c.COMMIT_BASE or self.valid_bytes % self.write_bytes:
            return f"write_bytes {self.write_bytes} does not split valid_bytes {self.valid_bytes} into 8-byte multiples"
        if self.context(ctx) is TuContext.SUB and self.write_bytes != c.SUB_ACCESS_BYTES:
            return f"the sub context writes exactly {c.SUB_ACCESS_BYTES} bytes, not {self.write_bytes}"
        return None

    @rule("CMT-5")
    def _cmt_5(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.pack is not None:  # CMT-6 judges a packed commit
            return None
        c, bits = target.constants, self.elem_bits(target)
        size = self.alloc_bytes(target)
        window = self._window_problem(bits)
        if window:
            return window
        if self.dest < 0 or self.dest % c.COMMIT_BASE or self.dest + size > c.DM_SLICE_BYTES:
            return f"destination [{self.dest}, {self.dest + size}) is not an 8-byte aligned range of the {c.DM_SLICE_BYTES}-byte DM"
        entries = self.write.entries()
        low = sum(min(0, (e.size - 1) * e.stride) for e in entries)
        high = sum(max(0, (e.size - 1) * e.stride) for e in entries)
        end = -(-(high + 1) * bits // 8)
        if low < 0 or end > size:
            return f"the write reaches byte {end} of {a_an(size)}-byte allocation"
        return None

    def _window_problem(self, bits: int) -> str | None:
        """A commit into `into`: `view` is a window of its tensor at `offset` shifted on the
        Element level only (the commit writes the same address in every slice of its space)."""
        if (self.into, self.view, self.offset) == (None, None, None):
            return None
        if self.into is None or self.view is None or self.offset is None:
            return "a commit into a tensor needs all of into, view and offset"

        levels = self.output_type.levels()
        if len(self.view) != len(levels) or any(mapping_text(a) != mapping_text(b)
                                                for a, b in zip(levels[:-1], self.view[:-1])):
            return "the view's Chip, Cluster and Slice mappings differ from the tensor's"
        if self.offset < 0 or self.offset * 8 % bits or \
                not is_window(levels[-1], self.view[-1], self.offset * 8 // bits):
            return f"the view is not a window of the tensor's element at byte offset {self.offset}"
        return None

    @rule("RUNTIME-8")
    def _runtime_start(self, target: Any, ctx: VerifyContext | None) -> str | None:
        """A commit into a window at a runtime start: `start=%k` (a `scalar[usize]` record),
        `start_bytes=` (whole 8-byte units: the engine's writes stay aligned) and `start_limit=`
        together, into a tensor, and the window at the last start inside the tensor."""
        parts = (self.start, self.start_bytes, self.start_limit)
        if all(p is None for p in parts):
            return None
        if any(p is None for p in parts) or self.into is None:
            return "a commit at a runtime start needs into=, start=, start_bytes= and start_limit= together"
        base = target.constants.COMMIT_BASE
        if self.start_bytes < 0 or self.start_limit < 0 or self.start_bytes % base:
            return f"start_bytes {self.start_bytes} is not a multiple of {base} bytes, or a field is negative"
        high = sum(max(0, (e.size - 1) * e.stride) for e in self.write.entries())
        end = -(-(high + 1) * self.elem_bits(target) // 8) + self.start_bytes * self.start_limit
        if end > self.alloc_bytes(target):
            return f"the window at start={self.start_limit} reaches byte {end} of the {self.alloc_bytes(target)} " \
                   "bytes from its offset on"
        scalar = ctx.op(self.start) if ctx is not None else None
        if ctx is not None and (scalar is None or getattr(scalar.output_type, "kind", None) != "scalar"
                                or scalar.output_type.dtype.name != "usize"):
            return f"start {self.start} is not a scalar[usize] record"
        return None

    @rule("CMT-6")
    def _cmt_6(self, target: Any, ctx: VerifyContext | None) -> str | None:
        return None if self.pack is None else pack_problem(self, target, self.context(ctx))
