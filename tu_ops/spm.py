"""`SpmDmaOp`: a Tensor DMA between DM and scratchpad memory (docs/machine/spm.md).

`%3 = dma_spm src=%2 kind=DM_TO_HBM element_type=i32 aggregate=... commands=[...] : <dm> -> <spm>`.

A `to_spm` of a tile of a DM tensor reads a window, as `dma_window` does: `src_view` (one
mapping per level) and `src_offset` (bytes) name it, the input type is the tensor's own and
the commands are those of the copy from the tile's type, their source addresses shifted by
`src_offset` (both fields absent for a whole tensor). A tile at a runtime start (a rolled
loop's index) adds `src_start=%k src_start_bytes= src_start_limit=` as `dma_window` does: the
source addresses move by `start * src_start_bytes` when the copy runs (RUNTIME-8, LOOP-6).

The DMA engine reads and writes an SPM like HBM (one byte stream per chip, no slice
addressing), so the record's `kind` and `commands` are those of the copy between the DM side
and the SPM tensor's store `ir.spm.spm_as_hbm` (per chip `[Cluster, Pe, Element]`):
DM_TO_HBM into SPM, HBM_TO_DM out of it. `as_dma()` is that copy; DMAOP-1..5 are checked
on it. SPMOP-1 checks the SPM side against the DM side (the trace's SPM-1 and SPM-2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from ir.mapping.nodes import Mapping
from ir.rules.spm import check_spm_move
from ir.spm import spm_as_hbm
from tu_ops.base import Ref, VerifyContext, attr, operand, rule
from tu_ops.dma import DmaOp
from tu_ops.dma_view import DmaWindowOp, with_levels

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["SpmDmaOp"]


@attrs.frozen(kw_only=True)
class SpmDmaOp(DmaOp):
    """A DM tensor copied into SPM (`to_spm`) or an SPM tensor into DM (its `to_dm`)."""

    MNEMONIC: ClassVar[str] = "dma_spm"
    PIPELINE_RANK: ClassVar[int] = 120
    IN_KINDS: ClassVar[tuple[str, ...]] = ("dm", "spm")
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("dm", "spm")

    src_view: tuple[Mapping, ...] | None = attr(default=None, optional=True, converter=attrs.converters.optional(tuple))
    src_offset: int | None = attr(default=None, optional=True)
    src_start: Ref | None = operand(optional=True)
    src_start_bytes: int | None = attr(default=None, optional=True)
    src_start_limit: int | None = attr(default=None, optional=True)

    def reads(self) -> tuple[Ref, ...]:
        """The source, and the runtime start of the tile it reads when it has one."""
        return (self.src,) if self.src_start is None else (self.src, self.src_start)

    def view_types(self) -> tuple[Any, Any]:
        """(source, destination) types the commands walk: the tile a `to_spm` reads, when it reads one."""
        src = self.input_type if self.src_view is None else with_levels(self.input_type, self.src_view)
        return src, self.output_type

    def traced_stage(self) -> str | None:
        return "to_spm" if self.output_type.kind == "spm" else "to_dm"

    def as_dma(self) -> DmaOp:
        """The plain DMA this record is: its SPM side as the HBM tensor it is stored as."""
        src, dst = self.input_type, self.output_type
        fields = dict(result=self.result, src=self.src, kind=self.kind, element_type=self.element_type,
                      aggregate=self.aggregate, commands=self.commands,
                      input_type=spm_as_hbm(src) if src.kind == "spm" else src,
                      output_type=spm_as_hbm(dst) if dst.kind == "spm" else dst,
                      src_alloc=self.src_alloc, dst_alloc=self.dst_alloc, loc=self.loc)
        starts = {"src_start": self.src_start, "src_start_bytes": self.src_start_bytes,
                  "src_start_limit": self.src_start_limit}
        if self.src_view is None and self.src_offset is None and not any(v is not None for v in starts.values()):
            return DmaOp(**fields)
        return DmaWindowOp(**fields, src_view=self.src_view or (), src_offset=-1 if self.src_offset is None
                           else self.src_offset, **starts)   # one of the two missing: DMAOP-6 refuses it

    @rule("DMAOP-1")
    def _dmaop_1(self, target: Target, ctx: VerifyContext | None) -> str | None:
        return self.as_dma()._dmaop_1(target, ctx)

    @rule("DMAOP-5")
    def _dmaop_5(self, target: Target, ctx: VerifyContext | None) -> str | None:
        return self.as_dma()._dmaop_5(target, ctx)

    @rule("DMAOP-6")
    def _dmaop_6(self, target: Target, ctx: VerifyContext | None) -> str | None:
        copy = self.as_dma()   # a window of the DM source: its view keeps the tensor's extents, inside it
        return copy._dmaop_6(target, ctx) if isinstance(copy, DmaWindowOp) else None

    @rule("RUNTIME-8")
    def _runtime_start(self, target: Target, ctx: VerifyContext | None) -> str | None:
        copy = self.as_dma()   # the tile at a runtime start: its scalar, step and last window
        return copy._runtime_start(target, ctx) if isinstance(copy, DmaWindowOp) else None

    @rule("SPMOP-1")
    def _spmop_1(self, target: Target, ctx: VerifyContext | None) -> str | None:
        src, dst = self.view_types()
        if {src.kind, dst.kind} != {"dm", "spm"}:
            return f"a dma_spm moves between DM and SPM, not {src.kind} -> {dst.kind}"
        spm, dm = (dst, src) if dst.kind == "spm" else (src, dst)
        found = check_spm_move(spm, dm, dst.kind == "spm")
        return None if found is None else f"[{found.code}] {found.message}"
