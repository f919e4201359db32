"""How a traced stage finds its lowering: a table keyed by op class, filled by declaration
(tu_ops/lower/tables.py).

Each lowering module declares, next to its builder, `@lowers(ir.SomeOp)` on a function
`(op, site) -> tu op | None` (None: the stage is folded into another stage's op), and
`@feeds(ir.SomeOp)` when the op, consuming a `collect`, decides how many flits the feed
packs, and `@prints_type(ir.SomeOp)` when its result type prints differently once lowered
(an inferred layout prints from its factor form). A lookup loads the module that declares
the op, as the package's index says (tu_ops/lower/declared_index.py); this module tells the
tables how, so the declaring modules import the tables alone. The lowering (`build`) and
the VISA re-derivation (`visa.relower`) both call `lower_stage`, so a new engine adds its
lowering in one place, its own module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ir.declare import write_index
from ir.errors import InternalError
from tu_ops.enums import CollectFlits
from tu_ops.lower.program import ProgramChain
from tu_ops.lower.tables import FEED_FLITS, LOWERINGS, PRINTED_TYPES, Site, feeds, lowers, prints_type

__all__ = ["Site", "lowers", "feeds", "prints_type", "lower_stage", "feed_flits", "lowered_types", "LOWERINGS",
           "FEED_FLITS", "PRINTED_TYPES"]


def _load() -> None:
    """Every module of `tu_ops.lower` that declares a lowering, a feed packing or a lowered type."""
    from tu_ops.lower import (commit, contract, engines, inferred, vector, vector_branch,  # noqa: F401
                              vector_inter, vector_pair, vrf)


def _index() -> dict[str, dict[str, Callable[[], None]]]:
    from tu_ops.lower.declared_index import DECLARED
    return DECLARED


LOWERINGS.load = FEED_FLITS.load = PRINTED_TYPES.load = _load  # how a lookup loads the declaring modules
LOWERINGS.index = FEED_FLITS.index = PRINTED_TYPES.index = _index
INDEX_COMMAND = "python -m tu_ops.lower.dispatch"


def write_declared_index() -> str:
    """Rewrite tu_ops/lower/declared_index.py from the declarations; its path."""
    from tu_ops.lower import declared_index
    return write_index([LOWERINGS, FEED_FLITS, PRINTED_TYPES], declared_index.__file__, INDEX_COMMAND)


def lowered_types(kernel: Any) -> dict[int, Any]:
    """The lowered type of every traced value whose type prints differently once lowered."""
    out: dict[int, Any] = {}
    for op in kernel.ops:
        fn = PRINTED_TYPES.get(type(op))
        t = fn(op, out) if fn is not None else None
        if t is not None:
            out[op.result.id] = t
    return out


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
