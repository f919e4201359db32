"""How a traced stage finds its lowering: a table keyed by op class, filled by declaration.

Each lowering module declares, next to its builder, `@lowers(ir.SomeOp)` on a function
`(op, site) -> tu op | None` (None: the stage is folded into another stage's op), and
`@feeds(ir.SomeOp)` when the op, consuming a `collect`, decides how many flits the feed
packs, and `@prints_type(ir.SomeOp)` when its result type prints differently once lowered
(an inferred layout prints from its factor form). A lookup loads the module that declares
the op, as the package's index says (tu_ops/lower/declared_index.py). The lowering (`build`) and the VISA re-derivation (`visa.relower`) both
call `lower_stage`, so a new engine adds its lowering in one place, its own module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from ir import ops as ir
from ir.declare import Table, write_index
from ir.errors import InternalError
from ir.stage_spec import STAGES
from tu_ops.base import Ref
from tu_ops.enums import CollectFlits, TuContext
from tu_ops.lower.program import ProgramChain
from tu_ops.stage_record import record_of

__all__ = ["Site", "lowers", "feeds", "prints_type", "lower_stage", "feed_flits", "lowered_types", "LOWERINGS",
           "FEED_FLITS", "PRINTED_TYPES"]



def _load() -> None:
    """Every module of `tu_ops.lower` that declares a lowering, a feed packing or a lowered type."""
    from tu_ops.lower import (commit, contract, engines, inferred, trf, valid_count, vector,  # noqa: F401
                              vector_branch, vector_inter, vector_pair, vrf)


def _index() -> dict[str, dict[str, Callable[[], None]]]:
    from tu_ops.lower.declared_index import DECLARED
    return DECLARED


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
# the op (tu_ops/lower/declared_index.py, rewritten by `python -m tu_ops.lower.dispatch`).
LOWERINGS = Table("lowering", _load, _index, package="tu_ops.lower", derive=_stage_lowering)
FEED_FLITS = Table("feed packing", _load, _index, package="tu_ops.lower")
PRINTED_TYPES = Table("lowered type", _load, _index, package="tu_ops.lower")
INDEX_COMMAND = "python -m tu_ops.lower.dispatch"


def write_declared_index() -> str:
    """Rewrite tu_ops/lower/declared_index.py from the declarations; its path."""
    from tu_ops.lower import declared_index
    return write_index([LOWERINGS, FEED_FLITS, PRINTED_TYPES], declared_index.__file__, INDEX_COMMAND)


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


def lowered_types(kernel: Any) -> dict[int, Any]:
    """The lowered type of every traced value whose type prints differently once lowered."""
    out: dict[int, Any] = {}
    for op in kernel.ops:
        fn = PRINTED_TYPES.get(type(op))
        t = fn(op, out) if fn is not None else None
        if t is not None:
            out[op.result.id] = t
    return out


@prints_type(ir.View)
def _view_type(op: ir.View, types: dict[int, Any]) -> Any | None:
    """A view prints as the tensor it views."""
    return types.get(op.src.id)


def lower_stage(op: Any, site: Site) -> Any | None:
    """The tu op of traced stage `op` at `site` (None when another stage's op holds it)."""
    fn = LOWERINGS.require(type(op))
    if fn is None:
        raise InternalError(f"{op.text()}: no lowering for stage `{op.STAGE}`")
    try:
        return fn(op, site)
    except ValueError as e:  # a record's `of_types` finding no record for the types: our bug
        raise InternalError(f"{op.text()}: {e}") from e


def feed_flits(chain: ProgramChain) -> CollectFlits:
    """How many flits the feed of `chain` packs per time step (one unless its consumer says)."""
    consumer = chain.after_collect()[0]
    LOWERINGS.require(type(consumer))  # the module of its lowering declares its packing too
    fn = FEED_FLITS.get(type(consumer))
    try:
        return fn(consumer) if fn is not None else CollectFlits.Flit1
    except ValueError as e:
        raise InternalError(f"{consumer.text()}: {e}") from e


if __name__ == "__main__":  # `python -m tu_ops.lower.dispatch`: the module's own tables, not __main__'s
    from tu_ops.lower.dispatch import write_declared_index as _write
    print(f"wrote {_write()}")
