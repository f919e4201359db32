"""Every lowered op class, in pipeline order (docs/reference/diagnostics.md): the classes the
record modules of `tu_ops` declare, ordered by their `PIPELINE_RANK`. Importing this module
loads every record module; `tu_ops.OP_CLASSES` is its `op_classes()`."""

from __future__ import annotations

from tu_ops import (commit, contract, dma, dma_view, feed, gather, redistribute, rf_reshape,  # noqa: F401
                    runtime, spm, transpose, trf, vector, vector_branch, vector_inter,
                    vector_pair, vrf)
from tu_ops.base import TU_OPS

__all__ = ["op_classes"]


def op_classes() -> tuple[type, ...]:
    """The op classes of the global registry, by (pipeline rank, mnemonic)."""
    return tuple(sorted(TU_OPS.global_values(), key=lambda cls: (cls.PIPELINE_RANK, cls.MNEMONIC)))
