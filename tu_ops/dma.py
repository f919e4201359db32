"""`DmaOp`: a lowered Tensor DMA (docs/reference/diagnostics.md, visa/visa.lark "DMA commands").

A command walks paired byte loops on both sides; the innermost loop is the packet
(`packet_bytes:1:1`). DM addresses are `slice * DM_SLICE_BYTES + offset`. The verifier
implements DMAOP-1 ... DMAOP-5 in that order; `src_alloc` / `dst_alloc` are the [L] facts.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs

from ir.dtypes import DType
from tu_ops.base import Alloc, Ref, TuOp, VerifyContext, attr, fact, operand, rule
from tu_ops.dma_cost import dma_cost
from tu_ops.engines import DMA, Engine, Rate
from tu_ops.enums import Aggregate, DmaKind

__all__ = ["Part", "DmaEntry", "DmaCommand", "DmaOp", "aggregate_of", "moved"]


@attrs.frozen
class DmaEntry:
    """A paired loop: `size` steps, `src_stride` and `dst_stride` bytes apart (`16:4096:8388608`)."""

    TEXT_STYLE: ClassVar[str] = "entry"
    size: int
    src_stride: int
    dst_stride: int


@attrs.frozen
class Part:
    """The partition a DMA command serves: `(chip, cluster, dmn)`."""

    TEXT_STYLE: ClassVar[str] = "tuple"
    chip: int
    cluster: int
    dmn: int


def _part(value: Any) -> Part:
    return value if isinstance(value, Part) else Part(*value)


def _dma_entries(items: Any) -> tuple[DmaEntry, ...]:
    return tuple(e if isinstance(e, DmaEntry) else DmaEntry(*e) for e in items)


@attrs.frozen(kw_only=True)
class DmaCommand:
    """One DMA command: partition `(chip, cluster, dmn)`, first-cell addresses, packet, loops."""

    TEXT_STYLE: ClassVar[str] = "struct"
    part: Part = attrs.field(converter=_part)
    src_base: int
    dst_base: int
    packet_bytes: int
    entries: tuple[DmaEntry, ...] = attrs.field(converter=_dma_entries)


def aggregate_of(commands: tuple[DmaCommand, ...]) -> Aggregate:
    """HOMOGENEOUS when every command has the same `entries` and `packet_bytes`."""
    shapes = {(c.entries, c.packet_bytes) for c in commands}
    return Aggregate.HOMOGENEOUS if len(shapes) <= 1 else Aggregate.HETEROGENEOUS


def moved(commands: Any, src: int = 0, dst: int = 0) -> tuple[DmaCommand, ...]:
    """DMA commands with their source and destination bases moved by `src` and `dst` bytes."""
    return tuple(attrs.evolve(c, src_base=c.src_base + src, dst_base=c.dst_base + dst) for c in commands)


@attrs.frozen(kw_only=True)
class DmaOp(TuOp):
    """Copy a tensor between HBM and DM by `commands`; the destination tensor is the result.

    Text: `%2 = dma src=%0 kind=HBM_TO_DM element_type=i8 aggregate=HOMOGENEOUS
    commands=[{part=(0, 0, 0), src_base=0, dst_base=0, packet_bytes=4096,
    entries=[16:4096:8388608, 16:0:524288, 4096:1:1]}] : <hbm> -> <dm>` (one line).
    `aggregate` is derived from the commands when not given."""

    MNEMONIC: ClassVar[str] = "dma"
    PIPELINE_RANK: ClassVar[int] = 110
    IN_PROGRAM: ClassVar[bool] = False
    IN_KINDS: ClassVar[tuple[str, ...]] = ("hbm", "dm")
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("hbm", "dm")
    ENGINE: ClassVar[Engine] = DMA
    NEW_DM_TENSOR: ClassVar[bool] = True

    src: Ref = operand()
    kind: DmaKind = attr()
    element_type: DType = attr()
    aggregate: Aggregate | None = attr(None)
    commands: tuple[DmaCommand, ...] = attr(converter=tuple)
    src_alloc: Alloc | None = fact()
    dst_alloc: Alloc | None = fact()

    def traced_stage(self) -> str | None:
        """Its `TRACED_STAGE` if the class names one, else `to_dm` or `to_hbm` by the destination."""
        return self.TRACED_STAGE or ("to_dm" if self.output_type.kind == "dm" else "to_hbm")

    def __attrs_post_init__(self) -> None:
        if self.aggregate is None:
            object.__setattr__(self, "aggregate", aggregate_of(self.commands))

    def reads(self) -> tuple[Ref, ...]:
        """The tensors this DMA reads (a gather also reads its index)."""
        return (self.src,)

    def busy_cycles(self, rate: Rate, target: Any) -> int:
        return dma_cost(self, rate).cycles

    def cost_counters(self, target: Any) -> dict[str, int]:
        return {"dma_commands": len(self.commands),
                "dma_bytes": sum(math.prod(e.size for e in cmd.entries) for cmd in self.commands)}

    @rule("DMAOP-1")
    def _dmaop_1(self, target: Any, ctx: VerifyContext | None) -> str | None:
        src, dst = self.input_type, self.output_type
        if not target.materializable(self.element_type):
            return f"{self.element_type} cannot be stored on target {target.name}"
        if src.dtype != self.element_type or dst.dtype != self.element_type:
            return f"element_type {self.element_type} but the tensors hold {src.dtype} -> {dst.dtype}"
        if (src.kind, dst.kind) != self.kind.value:
            return f"{self.kind} moves {self.kind.value[0]} -> {self.kind.value[1]}, not {src.kind} -> {dst.kind}"
        return None

    @rule("DMAOP-2")
    def _dmaop_2(self, target: Any, ctx: VerifyContext | None) -> str | None:
        c = target.constants
        if not self.commands:
            return "no command"
        for i, cmd in enumerate(self.commands):
            if len(cmd.entries) > c.SEQ_MAX_ENTRIES:
                return f"command {i}: {len(cmd.entries)} paired entries, at most {c.SEQ_MAX_ENTRIES}"
            for e in cmd.entries:
                if not 1 <= e.size <= c.SEQ_MAX_ITER:
                    return f"command {i}: entry size {e.size} not in [1, {c.SEQ_MAX_ITER}]"
        if self.aggregate is not aggregate_of(self.commands):
            return f"aggregate {self.aggregate}, but the commands are {aggregate_of(self.commands)}"
        return None

    @rule("DMAOP-3")
    def _dmaop_3(self, target: Any, ctx: VerifyContext | None) -> str | None:
        limit = target.constants.DMA_MAX_PACKET
        for i, cmd in enumerate(self.commands):
            if not 1 <= cmd.packet_bytes <= limit:
                return f"command {i}: packet of {cmd.packet_bytes} bytes, at most {limit}"
            packet = DmaEntry(cmd.packet_bytes, 1, 1)
            if (not cmd.entries or cmd.entries[-1] != packet) and cmd.packet_bytes != 1:
                return f"command {i}: the innermost entry is not the packet {cmd.packet_bytes}:1:1"
        return None

    @rule("DMAOP-4")
    def _dmaop_4(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if not self.kind.into_dm:
            return None
        align = target.constants.DMA_DM_ALIGN
        for i, cmd in enumerate(self.commands):
            if cmd.packet_bytes % align or cmd.dst_base % align:
                return f"command {i}: writes into DM in {cmd.packet_bytes}-byte packets at {cmd.dst_base}, not {align}-byte aligned"
            for e in _outer_entries(cmd):
                if e.dst_stride % align:
                    return f"command {i}: destination stride {e.dst_stride} is not a multiple of {align}"
        return None

    @rule("DMAOP-5")
    def _dmaop_5(self, target: Any, ctx: VerifyContext | None) -> str | None:
        return self.sides_problem(target, self.src_alloc, self.dst_alloc)

    def sides_problem(self, target: Any, src_alloc: Alloc | None, dst_alloc: Alloc | None,
                      what: str = "") -> str | None:
        """DMAOP-5 against the given allocations of the two sides (`what` names them)."""
        sides = ((self.input_type, src_alloc, "src"), (self.output_type, dst_alloc, "dst"))
        for i, cmd in enumerate(self.commands):
            for t, alloc, side in sides:
                if alloc is None:
                    continue
                base = cmd.src_base if side == "src" else cmd.dst_base
                loops = [(e.size, e.src_stride if side == "src" else e.dst_stride) for e in cmd.entries]
                problem = _side_problem(t, alloc, base, loops, cmd.part, target)
                if problem:
                    return f"command {i} {side}{what}: {problem}"
        return None


def _outer_entries(cmd: DmaCommand) -> tuple[DmaEntry, ...]:
    """The entries outside the packet (all but the innermost `packet_bytes:1:1`)."""
    if cmd.entries and cmd.entries[-1] == DmaEntry(cmd.packet_bytes, 1, 1):
        return cmd.entries[:-1]
    return cmd.entries


def _side_problem(t: Any, alloc: Alloc, base: int, loops: list[tuple[int, int]], part: Part,
                  target: Any) -> str | None:
    """DMAOP-5 for one side: every byte walked lies in the allocation (and, in DM, in a slice
    and cluster of the tensor). DM strides that are multiples of DM_SLICE_BYTES walk slices."""
    if t.kind == "hbm":
        low = base + sum(min(0, (n - 1) * s) for n, s in loops)
        high = base + sum(max(0, (n - 1) * s) for n, s in loops)
        if low < alloc.base or high >= alloc.end:
            return f"bytes {low}..{high} leave the allocation [{alloc.base}, {alloc.end})"
        return None
    dm = target.constants.DM_SLICE_BYTES
    if not 0 <= part.cluster < t.cluster.size:
        return f"cluster {part.cluster} outside the tensor's {t.cluster.size} clusters"
    slice_loops = [(n, s // dm) for n, s in loops if s % dm == 0]
    byte_loops = [(n, s) for n, s in loops if s % dm]
    if any(abs(s) >= dm for _, s in byte_loops):
        return "a stride crosses slices without being a whole number of slices"
    first_slice, offset = divmod(base, dm)
    low = offset + sum(min(0, (n - 1) * s) for n, s in byte_loops)
    high = offset + sum(max(0, (n - 1) * s) for n, s in byte_loops)
    if low < alloc.base or high >= alloc.end:
        return f"bytes {low}..{high} of a slice leave the allocation [{alloc.base}, {alloc.end})"
    s_low = first_slice + sum(min(0, (n - 1) * s) for n, s in slice_loops)
    s_high = first_slice + sum(max(0, (n - 1) * s) for n, s in slice_loops)
    if s_low < 0 or s_high >= t.slice.size:
        return f"slices {s_low}..{s_high} outside the tensor's {t.slice.size} slices"
    return None
