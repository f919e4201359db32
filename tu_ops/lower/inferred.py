"""Mappings npu-opt infers print from their factor form (visa/visa.lark rule 5).

The `to_trf` lane and element, the `commit` element and the `to_hbm` destination of
docs/porting.md are rewritten into the tree whose display is the factor form, one item per
factor: `X`, `X % e`, `X / s`, `X / s % e`, `e` (a broadcast), `1 # e` (padding), `1` for
no factor; a factor form with a ragged piece keeps the inferred tree.

Whether a value was inferred is read from the traced op when it records it (an
`inferred` / `inferred_lane` / `inferred_element` attribute); otherwise it is detected by
comparing the op's mapping with the default the DSL would have built (tree equality).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir import ops as ir
from ir.errors import MappingError
from ir.mapping.factors import RaggedFactor
from ir.mapping.nodes import Mapping, pair_all
from ir.rules.collect import infer_trf
from ir.rules.contract_geometry import factor_mapping
from tu_ops.lower.tables import prints_type

__all__ = ["factor_form", "trf_inferred", "commit_inferred"]


def factor_form(mapping: Mapping) -> Mapping:
    """The tree whose text is `mapping`'s factor form (rule 5); the tree itself when the
    factor form has a ragged piece (or cannot be computed)."""
    try:
        factors = mapping.factors()
    except MappingError:
        return mapping
    if any(isinstance(f, RaggedFactor) for f in factors):
        return mapping
    return pair_all([factor_mapping(f) for f in factors])


def _flag(op: Any, name: str) -> bool | None:
    value = getattr(op, name, None)
    return value if isinstance(value, bool) else None


def trf_inferred(op: Any, time: Mapping, packet: Mapping) -> tuple[bool, bool]:
    """(lane inferred, element inferred) for a traced `to_trf`."""
    lane_flag, elem_flag = _flag(op, "inferred_lane"), _flag(op, "inferred_element")
    both = _flag(op, "inferred")
    if both is not None:
        lane_flag = both if lane_flag is None else lane_flag
        elem_flag = both if elem_flag is None else elem_flag
    if lane_flag is not None and elem_flag is not None:
        return lane_flag, elem_flag
    try:
        lane, element = infer_trf(time, packet, None)
        lane_inf = op.lane == lane
        if lane_inf:
            return True, op.element == element
        return False, op.element == infer_trf(time, packet, op.lane)[1]
    except MappingError:
        return False, False


def commit_inferred(op: Any, time: Mapping, packet: Mapping) -> bool:
    """Was the `commit` element the default `[T, P]`?"""
    flag = _flag(op, "inferred")
    if flag is not None:
        return flag
    return op.element == pair_all([time, packet])


# --- declarations: inferred layouts print from their factor form (rule 5) -------------------

@prints_type(ir.ToTrf)
def _trf_type(op: ir.ToTrf, types: dict[int, Any]) -> Any | None:
    stream = op.input.type
    lane_inf, elem_inf = trf_inferred(op, stream.time, stream.packet)
    if not (lane_inf or elem_inf):
        return None
    t = op.result.type
    return attrs.evolve(t, lane=factor_form(t.lane) if lane_inf else t.lane,
                        element=factor_form(t.element) if elem_inf else t.element)


@prints_type(ir.Commit)
def _commit_type(op: ir.Commit, types: dict[int, Any]) -> Any | None:
    stream = op.input.type
    if not commit_inferred(op, stream.time, stream.packet):
        return None
    return attrs.evolve(op.result.type, element=factor_form(op.result.type.element))


@prints_type(ir.View)
def _view_type(op: ir.View, types: dict[int, Any]) -> Any | None:
    """A view prints as the tensor it views."""
    return types.get(op.src.id)
