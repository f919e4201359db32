"""Which op class each feed destination kind names: the classes' own `FEED_DEST`, and an
index of where each is defined, so a feed's verifier loads the one class it checks against
instead of every module of `tu_ops` (issue 29: a GEMM compile needs no vector records).

`DEST_CLASSES` is the index (kind name -> a function importing the class); tests/tu_ops/test_feed_dests.py
fails when it differs from what the op classes declare, a kind no class claims (later
scope) is absent from both.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import MappingProxyType
from typing import Mapping

import tu_ops
from tu_ops.enums import DestKind, FeedElementType

__all__ = ["DEST_CLASSES", "feed_destination", "feed_destinations", "dest_element_types", "dest_mnemonics"]



def _cast() -> type:
    from tu_ops.commit import CastOp
    return CastOp


def _commit() -> type:
    from tu_ops.commit import CommitOp
    return CommitOp


def _contract_outer() -> type:
    from tu_ops.contract import ContractOuter
    return ContractOuter


def _inter_slice_reduce() -> type:
    from tu_ops.vector_inter import InterSliceReduceOp
    return InterSliceReduceOp


def _transpose() -> type:
    from tu_ops.transpose import TransposeOp
    return TransposeOp


def _trf_load() -> type:
    from tu_ops.trf import TrfLoad
    return TrfLoad


def _vector() -> type:
    from tu_ops.vector import VectorEngineOp
    return VectorEngineOp


def _vector_branch() -> type:
    from tu_ops.vector_branch import VectorBranchOp
    return VectorBranchOp


def _vector_pair() -> type:
    from tu_ops.vector_pair import VectorPairOp
    return VectorPairOp


def _vrf_load() -> type:
    from tu_ops.vrf import VrfLoad
    return VrfLoad


DEST_CLASSES: dict[str, Callable[[], type]] = {
    "CAST": _cast,
    "COMMIT": _commit,
    "CONTRACT_OUTER": _contract_outer,
    "INTER_SLICE_REDUCE": _inter_slice_reduce,
    "TRANSPOSE": _transpose,
    "TRF_LOAD": _trf_load,
    "VECTOR": _vector,
    "VECTOR_BRANCH": _vector_branch,
    "VECTOR_PAIR": _vector_pair,
    "VRF_LOAD": _vrf_load,
}
"""Kind name -> the function importing its op class."""


@functools.cache
def feed_destination(kind: DestKind) -> type | None:
    """The op class `kind` names (None: later scope), loading its module alone."""
    load = DEST_CLASSES.get(kind.name)
    return None if load is None else load()


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
