"""`SpmDmaOp`: a Tensor DMA between DM and scratchpad memory (docs/machine/spm.md).

`%3 = dma_spm src=%2 kind=DM_TO_HBM element_type=i32 aggregate=... commands=[...] : <dm> -> <spm>`.

The DMA engine reads and writes an SPM like HBM (one byte stream per chip, no slice
addressing), so the record's `kind` and `commands` are those of the copy between the DM side
and the SPM tensor's store `ir.spm.spm_as_hbm` (per chip `[Cluster, Pe, Element]`):
DM_TO_HBM into SPM, HBM_TO_DM out of it. `as_dma()` is that copy; DMAOP-1..5 are checked
on it. SPMOP-1 checks the SPM side against the DM side (the trace's SPM-1 and SPM-2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import attrs

from ir.rules.spm import check_spm_move
from ir.spm import spm_as_hbm
from tu_ops.base import VerifyContext, rule
from tu_ops.dma import DmaOp

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

    def traced_stage(self) -> str | None:
        return "to_spm" if self.output_type.kind == "spm" else "to_dm"

    def as_dma(self) -> DmaOp:
        """The plain DMA this record is: its SPM side as the HBM tensor it is stored as."""
        src, dst = self.input_type, self.output_type
        return DmaOp(result=self.result, src=self.src, kind=self.kind, element_type=self.element_type,
                     aggregate=self.aggregate, commands=self.commands,
                     input_type=spm_as_hbm(src) if src.kind == "spm" else src,
                     output_type=spm_as_hbm(dst) if dst.kind == "spm" else dst,
                     src_alloc=self.src_alloc, dst_alloc=self.dst_alloc, loc=self.loc)

    @rule("DMAOP-1")
    def _dmaop_1(self, target: Target, ctx: VerifyContext | None) -> str | None:
        return self.as_dma()._dmaop_1(target, ctx)

    @rule("DMAOP-5")
    def _dmaop_5(self, target: Target, ctx: VerifyContext | None) -> str | None:
        return self.as_dma()._dmaop_5(target, ctx)

    @rule("SPMOP-1")
    def _spmop_1(self, target: Target, ctx: VerifyContext | None) -> str | None:
        src, dst = self.input_type, self.output_type
        if {src.kind, dst.kind} != {"dm", "spm"}:
            return f"a dma_spm moves between DM and SPM, not {src.kind} -> {dst.kind}"
        spm, dm = (dst, src) if dst.kind == "spm" else (src, dst)
        found = check_spm_move(spm, dm, dst.kind == "spm")
        return None if found is None else f"[{found.code}] {found.message}"
