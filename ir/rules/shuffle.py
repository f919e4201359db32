"""Shuffle rules SHUFFLE-1..3 (docs/machine/topology.md "Shuffles").

SHUFFLE-1: the pattern has one entry per chip (cluster) of the tensor, each naming one of
           them; the const DIM equals that count.
SHUFFLE-2: every position of the shuffled level holds data (a padded Chip or Cluster,
           such as `1 # 2`, has no data to move).
SHUFFLE-3: `hbm_cluster_shuffle` is not available: an HBM tensor has no Cluster level, and
           the reference leaves the method unimplemented.
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.mapping.cells import Padding
from ir.words import a_an

__all__ = ["check_shuffle"]


def check_shuffle(op: Any) -> Violation | None:
    """SHUFFLE-1 and SHUFFLE-2 for a `Shuffle` op."""
    t = op.src.type
    level = getattr(t, op.level)
    n = level.size
    sources = op.sources
    if op.dim != n or len(sources) != n or any(not 0 <= s < n for s in sources):
        return Violation("SHUFFLE-1", f"{a_an(op.level)} shuffle of a tensor with {n} {op.level} position(s) takes "
                                      f"DIM={n} and {n} source(s) in 0..{n - 1}; got DIM={op.dim}, "
                                      f"pattern {list(sources)}",
                         help=f"pattern[target] = source, e.g. {list(range(1, n)) + [0]}")
    padded = [p for p in range(n) if isinstance(level.cell(p), Padding)]
    if padded:
        return Violation("SHUFFLE-2", f"{op.level} position {padded[0]} of `{level}` is padding: there is no data "
                                      "to move from or to it",
                         help=f"shuffle a tensor whose {op.level.title()} mapping names an axis on every position")
    return None
