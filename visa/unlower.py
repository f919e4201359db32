"""The records the VISA verifier still re-derives through the lowering: the Vector Engine's
passes (`vector`, `vector_pair`, `vector_branch` and their `_rf` forms), whose steps the
lowering reads off a traced pass. Every other program record declares its derived fields
itself (`TuOp.derived`, `tu_ops`), and `visa.relower` compares it with those.

Each pass record kind declares here its inverse of the lowering, `@retraces("mnemonic")` on
a function `(rec, src, types, target, fresh) -> traced ops` (`src` the traced value the
record streams from, `types` the type of every value id, `fresh` new negative ids for
intermediate values; the table is visa/unlower_table.py's); `relowered` lowers those traced
ops back into a record.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator

from ir import ops as ir
from tu_ops.lower.dispatch import Site
from tu_ops.lower.program import ProgramChain
from tu_ops.lower.vector import lower_pass, traced_pass
from tu_ops.lower.vector_branch import traced_branch
from tu_ops.lower.vector_pair import traced_pair
from visa.unlower_table import RETRACES, Underivable, retraces
# the other passes' inverses, each declared in its module: imported so that RETRACES holds them all
import visa.unlower_branch_rf  # noqa: F401
import visa.unlower_pair_rf  # noqa: F401
import visa.unlower_vrf  # noqa: F401

__all__ = ["Underivable", "retraces", "relowered", "RETRACES"]


def relowered(rec: Any, prev: int, types: dict[int, Any], context: Any, target: Any) -> Any:
    """The record the lowering makes of the traced pass `rec` stands for, streaming from value
    `prev` (the record before it)."""
    fn = RETRACES.get(rec.MNEMONIC)
    if fn is None:
        raise Underivable(rec, f"a `{rec.MNEMONIC}` record has no place in a TU program")
    group = fn(rec, ir.Value(prev, rec.input_type), types, target, itertools.count(-1, -1))
    site = Site(ProgramChain(group), 0, rec.result.id, prev, lambda v: v.id, lambda v: v.type, context, target)
    return lower_pass(group[0], site, group[1:])


@retraces("vector")
def _vector(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    return traced_pass(rec, src, fresh)


@retraces("vector_pair")
def _vector_pair(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    return traced_pair(rec, src, fresh)


@retraces("vector_branch")
def _vector_branch(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    return traced_branch(rec, src, fresh)
