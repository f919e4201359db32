"""Which record a Vector Engine pass lowers to: `vector_pair` when it starts with the unzip,
`vector_branch` when it has a comparison tag or a branched operand, else `vector`."""

from __future__ import annotations

from typing import Any

from ir.vector import enums as E
from ir.vector.branch_ops import BRANCH_OP_CLASSES
from ir.vector.stash_ops import STASH_OP_CLASSES
from tu_ops.vector import VectorEngineOp
from tu_ops.vector_branch import VectorBranchOp
from tu_ops.vector_inter import InterSliceReduceOp
from tu_ops.vector_pair import VectorPairOp

__all__ = ["record_kind"]


def record_kind(body: tuple[Any, ...]) -> type:
    """The record class of the pass whose ops after `vector_init` are `body` (the `into` of
    the `vector_init` lowering: a feed delivering to the pass names it)."""
    first = body[0] if body else None
    if getattr(first, "STAGE", "") == "vector_intra_slice_unzip":
        return VectorPairOp
    if getattr(first, "STAGE", "") == "vector_inter_slice_reduce":  # InterFirst (tu_ops.lower.vector_inter)
        return InterSliceReduceOp
    mode = getattr(first, "mode", None)
    if (mode is not None and mode.is_(E.TagMode.COMPARISON)) or any(isinstance(o, (*BRANCH_OP_CLASSES, *STASH_OP_CLASSES)) for o in body):
        return VectorBranchOp
    return VectorEngineOp
