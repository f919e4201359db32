"""SPACE-5: every Cluster and Slice of a `@device(pe=P)` kernel fits its P processing elements.

Checked once over the traced ops (docs/machine/topology.md): the first op whose result
has a Cluster or Slice larger than the PEs own is refused; `pe=8`, the whole chip, leaves
the limits of SPACE-2 and SPACE-3 unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ir.boundary import TargetRef, target_facts
from ir.diagnostic import Violation
from ir.machine import constants
from ir.topology import DEFAULT_PE, pe_fault, pe_space

__all__ = ["pe_violation"]


def pe_violation(ops: Iterable[Any], pe: int, target: TargetRef = None) -> tuple[Any, Violation] | None:
    """(op, SPACE-5 violation) of the first op whose result does not fit `pe` PEs, or None."""
    if pe == DEFAULT_PE:
        return None
    facts = target_facts(target)
    consts = facts.constants if facts is not None else constants()
    sizes = (consts.CLUSTER_SIZES, consts.SLICE_SIZES)
    for op in ops:
        t = getattr(getattr(op, "result", None), "type", None)
        if t is None or not hasattr(t, "cluster") or not hasattr(t, "slice"):
            continue
        fault = pe_fault(pe, t.cluster.size, t.slice.size, *sizes)
        if fault is not None:
            clusters, slices = pe_space(pe, *sizes)
            pad = "`1`" if clusters == 1 else "`1 # 2`"
            return op, Violation("SPACE-5", fault, label=f"@device(pe={pe})",
                                 help=f"size Cluster {pad} and Slice at most {slices} (pad a smaller one, "
                                      f"e.g. `A # {slices}`), or raise `pe`")
    return None
