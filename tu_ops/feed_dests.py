"""Which op class each feed destination kind names: the classes' own `FEED_DEST`, and an
index of where each is defined, so a feed's verifier loads the one class it checks against
instead of every module of `tu_ops` (issue 29: a GEMM compile needs no vector records).

`DEST_CLASSES` is the index (kind name -> `module.Class`); tests/tu_ops/test_feed_dests.py
fails when it differs from what the op classes declare, a kind no class claims (later
scope) is absent from both.
"""

from __future__ import annotations

import functools
import importlib
from types import MappingProxyType
from typing import Mapping

import tu_ops
from tu_ops.enums import DestKind, FeedElementType

__all__ = ["DEST_CLASSES", "feed_destination", "feed_destinations", "dest_element_types", "dest_mnemonics"]

DEST_CLASSES: dict[str, str] = {
    "CAST": "tu_ops.commit.CastOp",
    "COMMIT": "tu_ops.commit.CommitOp",
    "CONTRACT_OUTER": "tu_ops.contract.ContractOuter",
    "INTER_SLICE_REDUCE": "tu_ops.vector_inter.InterSliceReduceOp",
    "TRANSPOSE": "tu_ops.transpose.TransposeOp",
    "TRF_LOAD": "tu_ops.trf.TrfLoad",
    "VECTOR": "tu_ops.vector.VectorEngineOp",
    "VECTOR_BRANCH": "tu_ops.vector_branch.VectorBranchOp",
    "VECTOR_PAIR": "tu_ops.vector_pair.VectorPairOp",
    "VRF_LOAD": "tu_ops.vrf.VrfLoad",
}


@functools.cache
def feed_destination(kind: DestKind) -> type | None:
    """The op class `kind` names (None: later scope), loading its module alone."""
    where = DEST_CLASSES.get(kind.name)
    if where is None:
        return None
    module, name = where.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


@functools.cache
def feed_destinations() -> dict[DestKind, type]:
    """The op class each destination kind names, as the op classes declare (`FEED_DEST`).
    A kind no class claims is later scope."""
    return {cls.FEED_DEST: cls for cls in tu_ops.OP_CLASSES if vars(cls).get("FEED_DEST") is not None}


def dest_element_types() -> Mapping[DestKind, frozenset[FeedElementType]]:
    """FEED-2 as data: the element types each destination kind accepts, with Flit1 and Flit2
    alike, from each op class's `FEED_ELEMENTS`. (RawInt8, Flit2, TRF_LOAD) is the
    reference's v0.3 failure and is legal here."""
    return MappingProxyType({kind: cls.FEED_ELEMENTS for kind, cls in feed_destinations().items()})


def dest_mnemonics() -> Mapping[DestKind, str]:
    """The op mnemonic each destination kind names (FEED-12)."""
    return MappingProxyType({kind: cls.MNEMONIC for kind, cls in feed_destinations().items()})
