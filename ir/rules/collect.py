"""Collect and TRF rules (pipeline.md 8): COLLECT-1..5, TRF-1..7, and the to_trf defaults."""

from __future__ import annotations

from ir.diagnostic import Violation
from ir.mapping.nodes import IDENTITY, Mapping

__all__ = ["check_collect", "check_to_trf", "infer_trf"]


def check_collect(op) -> Violation | None:
    return None


def check_to_trf(op) -> Violation | None:
    return None


def infer_trf(time: Mapping, packet: Mapping, lane: Mapping | None) -> tuple[Mapping, Mapping]:
    """Default (lane, element) of `to_trf` (pipeline.md 3.2)."""
    return IDENTITY, time
