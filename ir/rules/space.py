"""Level predicates of tensor and stream types, reported under the using rule's ID (SPACE, MEM-1, TRF-1/2, TYPE-3)."""

from __future__ import annotations

from ir.diagnostic import Violation
from ir.machine import constants
from ir.mapping import levels
from ir.types import DmType, HbmType, StreamType, TrfType

__all__ = ["predicate", "validate_type", "same_spatial"]


def predicate(violation: levels.LevelViolation | None, code: str | None = None) -> Violation | None:
    """A level predicate's failure as a Violation (under `code` when given)."""
    if violation is None:
        return None
    return Violation(code or violation.code, violation.message,
                     notes=(f"docs/machine/index.md predicate {violation.predicate}",))


def validate_type(t: HbmType | DmType | TrfType | StreamType, chips: int | None = None, *,
                  code: str | None = None) -> Violation | None:
    """Level predicates of a type: TYPE-3, then SPACE-1 (when `chips` is given), SPACE-2,
    SPACE-3, MEM-1, TRF-1, TRF-2. `code` reports the Cluster/Slice/DM predicates under the
    using stage's rule (e.g. DMA-3 for a DMA destination). The limits are those of the target
    being checked against (ir/machine.py)."""
    if not t.dtype.materializable and not isinstance(t, StreamType):
        return Violation("TYPE-3", f"{t.dtype} exists only inside a stream; tensors cannot hold it",
                         help="store i4 or i8; fetch_zero_point_sub produces i5/i9 in the stream")
    c = constants()
    found = predicate(levels.chip(t.chip, chips)) if chips is not None else None
    if found is None and not isinstance(t, HbmType):
        found = (predicate(levels.cluster(t.cluster, c.CLUSTER_SIZES), code)
                 or predicate(levels.slice_(t.slice, c.SLICE_SIZES), code))
    if found is None and isinstance(t, DmType):
        found = predicate(levels.dm_cap(t.element, t.dtype.bits, c.DM_SLICE_BYTES), code)
    if found is None and isinstance(t, TrfType):
        found = (predicate(levels.trf_lane(t.lane, c.LANES))
                 or predicate(levels.trf_cap(t.lane, t.element, t.dtype.bits, c.TRF_BYTES)))
    return found


def same_spatial(a, b) -> str | None:
    """Which of Chip/Cluster/Slice differs between two typed values (SPACE-4), or None."""
    for name in ("chip", "cluster", "slice"):
        if not getattr(a, name).equivalent(getattr(b, name)):
            return name
    return None
