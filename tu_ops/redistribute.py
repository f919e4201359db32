"""`RedistributeOp`: a lowered staged DM redistribution (docs/machine/topology.md
"Redistributions"), one Tensor DMA record for a whole plan; `DmaRelayoutOp`: a DM -> DM
`to_dm` across chips or clusters.

`%5 = dma_redistribute src=%2 kind=DM_TO_DM element_type=i32 ... src_view=[...] src_offset=0
sources=[4, 0, 6, 2, ...] offsets=[0, 512, ...] engine=tdma : <dm> -> <dm>`.

The commands are those of a DM -> DM copy from the source viewed as `src_view` (the Element
with every sliced digit range left as padding) into the result, one per live target
(chip, cluster) `part`. Target number t = chip * clusters + cluster reads the DM of source
part `sources[t]` (numbered alike), its commands' sources shifted by `src_offset` (a tile
of the tensor read) plus `offsets[t]` bytes (the selected positions). A `to_dm_view` record
writes the window `dst_view` (`dst_offset` bytes in) of the tensor `into`; its result is
`into`'s new contents, at `into`'s address. A tile at a runtime start (read or written)
adds `src_start=%k src_start_bytes= src_start_limit=` (`dst_` for the write) as `dma_window`
and `dma_into` do: that side's addresses move by `start * start_bytes` when the copy runs.
The verifier checks DMAOP-1 ... 5, REDISTOP-1 and RUNTIME-8 (LOOP-6 the starts in a loop); the commands are re-derived from the fields (`tu_ops.dma_records`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import enum

import attrs

from ir.mapping.nodes import Mapping
from tu_ops.base import Ref, VerifyContext, attr, operand, rule
from tu_ops.dma import DmaOp
from tu_ops.dma_view import start_problem, with_levels
from tu_ops.enums import DmaKind

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["RedistributeEngine", "RedistributeOp", "DmaRelayoutOp"]


def _levels(value: Any) -> tuple[Mapping, ...] | None:
    return None if value is None else tuple(value)


class RedistributeEngine(enum.Enum):
    """The context the traced call named: the Tensor DMA (`chip_shuffle` ... `to_dm`) or the
    Sub context (`asymmetric_chip_slice`, run as this DMA record)."""

    TDMA = "tdma"
    SUB = "sub"


class _Windows:
    """The window fields both records share: `src_view` (a read window of the input, absent for
    the whole tensor) and `into` / `dst_view` (a write window of the tensor written into)."""

    def reads(self) -> tuple[Ref, ...]:
        """The source, and the tensor written into (its other cells stay)."""
        return (self.src,) + ((self.into,) if self.into is not None else ())  # type: ignore[attr-defined]

    def view_types(self) -> tuple[Any, Any]:
        """(source, destination) types the commands walk."""
        t, out = self.input_type, self.output_type  # type: ignore[attr-defined]
        src = t if self.src_view is None else with_levels(t, self.src_view)  # type: ignore[attr-defined]
        dst = out if self.dst_view is None else with_levels(out, self.dst_view)  # type: ignore[attr-defined]
        return src, dst


@attrs.frozen(kw_only=True)
class RedistributeOp(_Windows, DmaOp):
    """Every target part of a DM tensor copied from its own source part and offset."""

    MNEMONIC: ClassVar[str] = "dma_redistribute"
    PIPELINE_RANK: ClassVar[int] = 118
    TRACED_STAGE: ClassVar[str | None] = "redistribute"
    IN_KINDS: ClassVar[tuple[str, ...]] = ("dm",)
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("dm",)

    src_view: tuple[Mapping, ...] = attr(converter=tuple)
    src_offset: int = attr()
    sources: tuple[int, ...] = attr(converter=tuple)
    offsets: tuple[int, ...] = attr(converter=tuple)
    engine: RedistributeEngine = attr(converter=RedistributeEngine)
    into: Ref | None = operand(optional=True)     # `to_dm_view`: the tensor written (result at its address)
    dst_view: tuple[Mapping, ...] | None = attr(default=None, optional=True, converter=_levels)
    dst_offset: int | None = attr(default=None, optional=True)
    src_start: Ref | None = operand(optional=True)   # a tile read at a runtime start
    src_start_bytes: int | None = attr(default=None, optional=True)
    src_start_limit: int | None = attr(default=None, optional=True)
    dst_start: Ref | None = operand(optional=True)   # a tile written at a runtime start
    dst_start_bytes: int | None = attr(default=None, optional=True)
    dst_start_limit: int | None = attr(default=None, optional=True)

    def reads(self) -> tuple[Ref, ...]:
        """The source, the tensor written into, and the runtime starts of the tiles."""
        return super().reads() + tuple(r for r in (self.src_start, self.dst_start) if r is not None)

    def command_source(self, i: int, cmd: Any) -> tuple[int, int]:
        """The (chip, cluster) whose DM command `i` (of target part `cmd.part`) reads."""
        clusters = self.input_type.cluster.size
        return divmod(self.sources[cmd.part.chip * clusters + cmd.part.cluster], clusters)

    @rule("REDISTOP-1")
    def _redistop_1(self, target: Target, ctx: VerifyContext | None) -> str | None:
        t, out = self.input_type, self.output_type
        if self.kind is not DmaKind.DM_TO_DM:
            return f"a redistribution copies DM to DM, not {self.kind.name}"
        if out.chip.size != t.chip.size or out.cluster.size != t.cluster.size:
            return "the result keeps the tensor's chips and clusters"
        parts = t.chip.size * t.cluster.size
        if len(self.sources) != parts or len(self.offsets) != parts:
            return f"{len(self.sources)} source(s) and {len(self.offsets)} offset(s) for {parts} (chip, cluster) part(s)"
        if any(not 0 <= s < parts for s in self.sources):
            return f"sources {list(self.sources)} name a part outside the tensor's {parts}"
        if len(self.src_view) != 4 or any(a.size != b.size for a, b in zip(t.levels(), self.src_view)):
            return "src_view does not keep the tensor's extent per level"
        limit = target.constants.DM_SLICE_BYTES * t.slice.size
        if any(not 0 <= self.src_offset + o < limit for o in self.offsets):
            return f"offsets {list(self.offsets)} leave the tensor's {limit} bytes"
        return None

    @rule("RUNTIME-8")
    def _runtime_start(self, target: Target, ctx: VerifyContext | None) -> str | None:
        return start_problem(self, target, ctx, "src") or start_problem(self, target, ctx, "dst")


@attrs.frozen(kw_only=True)
class DmaRelayoutOp(_Windows, DmaOp):
    """A DM -> DM `to_dm` whose Chip, Cluster or number of slices changes: each command reads
    the DM of source part `sources[i]` (chip * clusters + cluster of the input), its source
    addresses local to that part; a command never crosses parts."""

    MNEMONIC: ClassVar[str] = "dma_relayout"
    PIPELINE_RANK: ClassVar[int] = 119
    TRACED_STAGE: ClassVar[str | None] = "to_dm"
    IN_KINDS: ClassVar[tuple[str, ...]] = ("dm",)
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("dm",)

    sources: tuple[int, ...] = attr(converter=tuple)
    src_view: tuple[Mapping, ...] | None = attr(default=None, optional=True, converter=_levels)  # a read window
    src_offset: int | None = attr(default=None, optional=True)
    into: Ref | None = operand(optional=True)     # `to_dm_view`: the tensor written (result at its address)
    dst_view: tuple[Mapping, ...] | None = attr(default=None, optional=True, converter=_levels)
    dst_offset: int | None = attr(default=None, optional=True)

    def traced_stage(self) -> str | None:
        """A `to_dm`, or a `to_dm_view` when it writes into a view."""
        return "to_dm" if self.into is None else "to_dm_view"

    def command_source(self, i: int, cmd: Any) -> tuple[int, int]:
        """The (chip, cluster) whose DM command `i` reads."""
        return divmod(self.sources[i], self.input_type.cluster.size)

    @rule("DMAOP-5")
    def _dmaop_5(self, target: Target, ctx: VerifyContext | None) -> str | None:
        if len(self.sources) != len(self.commands):
            return f"{len(self.sources)} source part(s) for {len(self.commands)} command(s)"
        t = self.input_type
        if any(not 0 <= s < t.chip.size * t.cluster.size for s in self.sources):
            return f"sources {list(self.sources)} name a part outside the input's {t.chip.size * t.cluster.size}"
        for i, cmd in enumerate(self.commands):
            chip, cluster = self.command_source(i, cmd)
            moved = attrs.evolve(self, commands=(attrs.evolve(cmd, part=(chip, cluster, cmd.part.dmn)),),
                                 aggregate=None, sources=(self.sources[i],))
            problem = moved.sides_problem(target, self.src_alloc, None)
            if problem:
                return f"command {i} {problem.split(' ', 2)[2]}"
        return self.sides_problem(target, None, self.dst_alloc)
