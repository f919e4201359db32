"""Bad `dma_gather` records for the op-verifier table of tests/tu_ops/test_verifiers.py."""

from __future__ import annotations

import attrs

from tests.topology import gather_kernels as g


def _gather_op(kernel):
    from tu_ops.lower.api import lower_kernel

    low = lower_kernel(kernel)
    return next(s for s in low.steps if getattr(s, "MNEMONIC", "") == "dma_gather")


def _bad(kernel, **changes):
    def build():
        return attrs.evolve(_gather_op(kernel), **changes), None
    return build


def _scatter_bad(**changes):
    def build():
        from tu_ops.lower.api import lower_kernel

        op = next(s for s in lower_kernel(g.scatter_rows).steps if getattr(s, "MNEMONIC", "") == "dma_scatter")
        return attrs.evolve(op, **changes), None
    return build


def _shuffle_bad(**changes):
    def build():
        from tests.topology import shuffle_kernels as s
        from tu_ops.gather import ShuffleLevel
        from tu_ops.lower.api import lower_kernel

        kernel = s.swap_clusters if "pattern" in changes else s.hbm_broadcast_chip
        op = next(x for x in lower_kernel(kernel).steps if getattr(x, "MNEMONIC", "") == "dma_shuffle")
        edits = {"level": ShuffleLevel.CLUSTER} if changes.get("level") == "HBM_CLUSTER" else changes
        return attrs.evolve(op, **edits), None
    return build


def _unscaled_without_reads():
    op = _gather_op(g.rows_unscaled_placed)
    return attrs.evolve(op, index_commands=()), None


GATHER_BAD = {
    "GATHEROP-1": _unscaled_without_reads,
    "GATHEROP-1:rows": _bad(g.rows_scaled, rows=0),
    "DMAOP-5:gathered": _bad(g.rows_scaled, gathered=700),
    "SCATTEROP-1": _scatter_bad(rows=0),
    "DMAOP-5:scattered": _scatter_bad(scattered=100),
    "SHUFFLEOP-1": _shuffle_bad(pattern=(1, 2)),
    "SHUFFLEOP-1:level": _shuffle_bad(level="HBM_CLUSTER"),
}
