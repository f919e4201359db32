"""The lowering's declaration tables: a traced stage's lowering (`@lowers`), the feed packing
its op decides (`@feeds`) and its printed lowered type (`@prints_type`), each declared next
to its builder in a module of `tu_ops.lower`, and `Site`, where a stage lowers. A lowering
module imports this module alone; the lookups (tu_ops/lower/dispatch.py) give the tables the
way to load the declaring modules, so no declaring module imports the lookups back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from ir import ops as ir
from ir.declare import Table
from ir.stage_spec import STAGES
from tu_ops.base import Ref
from tu_ops.enums import TuContext
from tu_ops.stage_record import record_of

if TYPE_CHECKING:
    from tu_ops.lower.program import ProgramChain

__all__ = ["Site", "lowers", "feeds", "prints_type", "LOWERINGS", "FEED_FLITS", "PRINTED_TYPES"]


def _stage_lowering(op_cls: Any) -> tuple[Callable[..., Any], dict[str, Any]] | None:
    """A declared stage's lowering (ir.stage_spec): its record of the op's types and choices."""
    spec = STAGES.get(op_cls)
    if spec is None:
        return None
    record = record_of(spec)

    def lower(op: Any, site: Site) -> Any:
        return record.of_types(Ref(site.result), Ref(site.src), op.input.type, spec.choices(op), op.loc)

    return lower, {"into": record}


# Each filled by the modules of `tu_ops.lower`; a lookup loads the one module that declares
# the op (tu_ops/lower/declared_index.py, rewritten by `python -m tu_ops.lower.dispatch`),
# as tu_ops/lower/dispatch.py tells the tables when it is imported.
LOWERINGS = Table("lowering", package="tu_ops.lower", derive=_stage_lowering)
FEED_FLITS = Table("feed packing", package="tu_ops.lower")
PRINTED_TYPES = Table("lowered type", package="tu_ops.lower")


@attrs.frozen
class Site:
    """Where a stage of a TU program lowers: its chain and position there, the ids of its
    result and of the value it streams from, and how to find a traced value's lowered id
    and type."""

    chain: ProgramChain
    position: int  # index of the op in `chain.after_collect()`
    result: int
    src: int
    ref: Callable[[ir.Value], int]
    type_of: Callable[[ir.Value], Any]
    context: TuContext
    target: Any

    def later(self, cls: type) -> Any | None:
        """The first op of class `cls` after this stage in its chain, or None."""
        rest = self.chain.after_collect()[self.position + 1:]
        return next((op for op in rest if isinstance(op, cls)), None)


def lowers(op_cls: type, *, into: type | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare `fn(op, site)` as the lowering of traced ops of class `op_cls`; `into` names the
    tu op class it builds (or joins) when a feed may deliver to it (its `FEED_DEST`)."""
    return LOWERINGS.declare(op_cls, into=into)


def feeds(op_cls: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare `fn(op) -> CollectFlits`: the feed packing for an `op_cls` right after `collect`."""
    return FEED_FLITS.declare(op_cls)


def prints_type(op_cls: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare `fn(op, types) -> type | None`: the lowered type of an `op_cls` result (None:
    its traced type), given the lowered types of the values defined before it."""
    return PRINTED_TYPES.declare(op_cls)
