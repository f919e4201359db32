"""Bad `dma_spm`, prefixed `dma_gather` (a trace-time prefix, or a runtime count) and
by-positions `dma_scatter` records for the op-verifier table of tests/tu_ops/test_verifiers.py."""

from __future__ import annotations

import attrs

from ir.mapping.api import m
from tests.spm import kernels as k
from tests.spm import runtime_prefix_kernels as rk
from tu_ops.base import Ref
from tu_ops.lower.api import lower_kernel


def _step(kernel, mnemonic):
    return next(s for s in lower_kernel(kernel).steps if getattr(s, "MNEMONIC", "") == mnemonic)


def _bad(kernel, mnemonic, edit):
    def build():
        return edit(_step(kernel, mnemonic)), None
    return build


def _count_of_the_u32_load():
    """The cast kernel's gather with its count moved from the i32 cast to the u32 load it casts."""
    lowered = lower_kernel(rk.cast_prefix)
    load = next(s for s in lowered.steps if getattr(s, "MNEMONIC", "") == "scalar_load")
    gather = next(s for s in lowered.steps if getattr(s, "MNEMONIC", "") == "dma_gather")
    return attrs.evolve(gather, count=Ref(load.result.id)), lowered.context()


def _pe(op, pe):
    """The SPM side with another Pe (the DM side's 256 slices are 4 PEs)."""
    axes = {"CL": 2, "N": 16}
    return attrs.evolve(op, output_type=attrs.evolve(op.output_type, pe=m(pe, axes=axes)),
                        dst_alloc=None)   # no allocation to hold the commands to


SPM_BAD = {
    "SPMOP-1": _bad(k.spm_round_trip, "dma_spm", lambda op: _pe(op, "1 # 2")),
    "DMAOP-1:spm": _bad(k.spm_round_trip, "dma_spm", lambda op: attrs.evolve(op, kind=type(op.kind).HBM_TO_DM)),
    "GATHEROP-1:prefix": _bad(k.PREFIXED[77], "dma_gather", lambda op: attrs.evolve(op, prefix=257)),
    "GATHEROP-2:beside a prefix": _bad(rk.runtime_prefix, "dma_gather", lambda op: attrs.evolve(op, prefix=5)),
    "GATHEROP-2:u32": _count_of_the_u32_load,
    "SCATTEROP-1:positions": _bad(k.scatter_by_positions, "dma_scatter", lambda op: attrs.evolve(op, mode=None)),
}
