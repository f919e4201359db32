"""Scratchpad moves on the cpu backend (docs/machine/spm.md): an SPM tensor is held as the
HBM tensor it is stored as (`ir.spm.spm_as_hbm`), so `to_spm` and its `to_dm` are DMAs."""

from __future__ import annotations

import numpy as np

from ir.spm import spm_as_hbm
from ir.spm_ops import SpmToDm, ToSpm

from backends.cpu import moves
from backends.cpu.handlers import handles
from backends.cpu.options import DEFAULT, CpuOptions

__all__ = ["to_spm", "spm_to_dm"]


@handles(ToSpm, options=True)
def to_spm(op: ToSpm, src: np.ndarray, options: CpuOptions = DEFAULT) -> np.ndarray:
    """DM -> SPM: a DMA into the SPM's HBM-like store; padding is zero."""
    return moves.move_global(src, op.src.type, spm_as_hbm(op.result.type), fast=options.fast_moves)


@handles(SpmToDm, options=True)
def spm_to_dm(op: SpmToDm, src: np.ndarray, options: CpuOptions = DEFAULT) -> np.ndarray:
    """SPM -> DM: a DMA out of the SPM's HBM-like store."""
    return moves.move_global(src, spm_as_hbm(op.src.type), op.result.type, fast=options.fast_moves)
