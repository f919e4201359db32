"""The commit write plan (docs/machine/commit.md) the lowering (`CommitOp`) and the cpu backend use.

`sequence(memory = element, stream = [Time, Packet])`, each descriptor coalesced
separately, strides in destination elements; and the Commit Engine's limits.
"""

from __future__ import annotations

import attrs

from ir.dtypes import DType
from ir.mapping.factors import AxisFactor, Factor, RaggedFactor
from ir.mapping.nodes import Mapping, Pair
from ir.mapping.ops import Entry, factor_frags
from ir.mapping.sequence import SequenceFailure, SequenceResult, sequence
from ir.types import StreamType

__all__ = [
    "commit_write_plan", "place_stream", "plan_of", "unplaced", "CommitWritePlan", "COMMIT_WIDTHS", "COMMIT_BASE",
    "SEQ_MAX_ENTRIES", "SEQ_MAX_ITER",
]

COMMIT_WIDTHS = (8, 16, 24, 32)  # docs/machine/index.md: legal bytes of one committed packet
COMMIT_BASE = 8  # commit write granularity in bytes
SEQ_MAX_ENTRIES = 8  # loop entries of one sequencer (fetch: time and packet together)
SEQ_MAX_ITER = 65536  # largest size of one entry


@attrs.frozen
class CommitWritePlan:
    """How the Commit Engine writes one stream into DM (docs/machine/commit.md).

    `time` and `packet` are the coalesced descriptors (strides in destination elements).
    A packet is written as contiguous runs of `piece_elems` elements, one run starting at every position of the
    loop `piece_starts` (the packet entries outside the innermost contiguous one)."""

    dtype: DType
    time: tuple[Entry, ...]
    packet: tuple[Entry, ...]
    piece_elems: int
    piece_starts: tuple[Entry, ...]

    @property
    def entries(self) -> tuple[Entry, ...]:
        """Time then packet entries, as the sequencer counts them (COMMIT-4)."""
        return self.time + self.packet

    @property
    def piece_bytes(self) -> float:
        return self.piece_elems * self.dtype.bits / 8

    @property
    def contiguous(self) -> bool:
        """True when one packet is one contiguous write."""
        return not self.piece_starts


def plan_of(dtype: DType, found: SequenceResult) -> CommitWritePlan:
    time, packet = found.coalesced()
    if packet and packet[-1].stride == 1:
        piece, starts = packet[-1].size, packet[:-1]
    else:
        piece, starts = 1, packet
    return CommitWritePlan(dtype, time, packet, piece, starts)


def commit_write_plan(stream_type: StreamType, element: Mapping) -> CommitWritePlan:
    """The write plan of `commit(element)` on a stream that passed COMMIT-2; ValueError otherwise."""
    found = place_stream(stream_type, element)
    if isinstance(found, SequenceFailure):
        raise ValueError(f"commit of {stream_type} into {element} is not placeable: {found.reason}")
    lost = unplaced(found)
    if lost is not None:
        raise ValueError(f"commit of {stream_type} into {element} is not placeable: {lost[1]} has nowhere to go")
    return plan_of(stream_type.dtype, found)


def place_stream(stream_type: StreamType, element: Mapping) -> SequenceResult | SequenceFailure:
    """`sequence(element, [Time, Packet])`: the element's own factor form first, then (for an
    element of several terms) the terms' factors joined, which hold the same cells but keep
    the digit ranges each term names. The joint form of a padded axis split over two terms
    (`R # 16 / 8, R # 16 % 8` with |R| = 10) refactors its live run along the axis's own
    divisors, which the stream's split need not follow; the default `commit()` element is
    `[Time, Packet]` term for term, so the second form always places it (COMMIT-2)."""
    levels = [stream_type.time, stream_type.packet]
    found = sequence(element, levels)
    if isinstance(found, SequenceFailure) and isinstance(element, Pair):
        by_term = sequence(list(element.flatten()), levels)
        if not isinstance(by_term, SequenceFailure):
            return by_term
    return found


def unplaced(found: SequenceResult) -> tuple[int, Factor] | None:
    """The first live stream piece (level, factor) whose digits the element lacks (stride 0)."""
    for level, (pieces, entries) in enumerate(zip(found.pieces, found.levels)):
        for piece, entry in zip(pieces, entries):
            if not entry.stride and isinstance(piece, (AxisFactor, RaggedFactor)) and factor_frags(piece):
                return level, piece
    return None
