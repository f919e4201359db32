"""SPM rules SPM-1..3 (docs/machine/spm.md): `to_spm` and an SPM tensor's `to_dm`.

SPM-1: the SPM tensor's Cluster is 1 or 2 positions, its Pe 1, 2 or 4, and its Element fits
       one PE's 4 KiB scratchpad (`ir.spm.spm_type_fault`).
SPM-2: the move keeps Chip and Cluster, and Pe counts the DM side's Slice / 64 PEs.
SPM-3: the move is a DMA between DM and the SPM's HBM-like store (DMA-1..6 on `spm_as_hbm`).
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.rules.dma import check_dma_for
from ir.spm import SLICES_PER_PE, spm_as_hbm, spm_type_fault

__all__ = ["check_to_spm", "check_spm_to_dm", "check_spm_move"]


def check_spm_move(spm: Any, dm: Any, into_spm: bool) -> Violation | None:
    """SPM-1..3 of a move between the SPM type `spm` and the DM type `dm`."""
    fault = spm_type_fault(spm)
    if fault is not None:
        return fault
    if spm.dtype != dm.dtype:
        return Violation("SPM-3", f"a move between DM and SPM keeps the dtype ({dm.dtype} vs {spm.dtype})")
    for level in ("chip", "cluster"):
        a, b = getattr(dm, level), getattr(spm, level)
        if not a.equivalent(b):
            return Violation("SPM-2", f"the SPM tensor's {level.capitalize()} `{b}` differs from the DM tensor's `{a}`",
                             help=f"an SPM tensor stays on its DM tensor's chips and clusters: give it {level} `{a}`")
    if spm.pe.size * SLICES_PER_PE != dm.slice.size:
        return Violation("SPM-2", f"Pe `{spm.pe}` names {spm.pe.size} PE(s), but the DM tensor's {dm.slice.size} "
                                  f"slices form {max(dm.slice.size // SLICES_PER_PE, 0)}",
                         help=f"each PE drives {SLICES_PER_PE} slices: Pe spans Slice / {SLICES_PER_PE} positions, "
                              f"e.g. m(\"1 # {max(dm.slice.size // SLICES_PER_PE, 1)}\")")
    hbm = spm_as_hbm(spm)
    src, dst = (dm, hbm) if into_spm else (hbm, dm)
    return check_dma_for("SPM-3", "the move cannot be made by Tensor DMA", src, dst, f"a DMA between {dm} and {hbm}")


def check_to_spm(op: Any) -> Violation | None:
    return check_spm_move(op.result.type, op.src.type, True)


def check_spm_to_dm(op: Any) -> Violation | None:
    return check_spm_move(op.src.type, op.result.type, False)
