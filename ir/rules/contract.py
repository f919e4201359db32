"""Contraction Engine rules (pipeline.md 9): OUTER-1..11, PACKET-1..4, TIME-1..4, LANE-1..6."""

from __future__ import annotations

from ir.diagnostic import Violation

__all__ = ["check_outer", "check_packet", "check_time", "check_lane"]


def check_outer(op) -> Violation | None:
    return None


def check_packet(op) -> Violation | None:
    return None


def check_time(op) -> Violation | None:
    return None


def check_lane(op) -> Violation | None:
    return None
