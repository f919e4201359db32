"""How a traced stage finds its lowering: a table keyed by op class, filled by declaration.

Each lowering module declares, next to its builder, `@lowers(ir.SomeOp)` on a function
`(op, site) -> tu op | None` (None: the stage is folded into another stage's op), and
`@feeds(ir.SomeOp)` when the op, consuming a `collect`, decides how many flits the feed
packs, and `@prints_type(ir.SomeOp)` when its result type prints differently once lowered
(an inferred layout prints from its factor form). The lowering (`build`) and the VISA re-derivation (`visa.rederive`) both call
`lower_stage`, so a new engine adds its lowering in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from ir import ops as ir
from ir.errors import InternalError
from tu_ops.enums import CollectFlits, TuContext
from tu_ops.lower.program import ProgramChain

__all__ = ["Site", "lowers", "feeds", "prints_type", "lower_stage", "feed_flits", "lowered_types", "LOWERINGS",
           "FEED_FLITS", "PRINTED_TYPES"]

LOWERINGS: dict[type, Callable[[Any, Site], Any]] = {}
FEED_FLITS: dict[type, Callable[[Any], CollectFlits]] = {}
PRINTED_TYPES: dict[type, Callable[[Any, dict[int, Any]], Any]] = {}


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


def lowers(op_cls: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare `fn(op, site)` as the lowering of traced ops of class `op_cls`."""

    def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
        LOWERINGS[op_cls] = fn
        return fn

    return declare


def feeds(op_cls: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare `fn(op) -> CollectFlits`: the feed packing for an `op_cls` right after `collect`."""

    def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
        FEED_FLITS[op_cls] = fn
        return fn

    return declare


def prints_type(op_cls: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare `fn(op, types) -> type | None`: the lowered type of an `op_cls` result (None:
    its traced type), given the lowered types of the values defined before it."""

    def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
        PRINTED_TYPES[op_cls] = fn
        return fn

    return declare


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
    fn = LOWERINGS.get(type(op))
    if fn is None:
        raise InternalError(f"{op.text()}: no lowering for stage `{op.STAGE}`")
    return fn(op, site)


def feed_flits(chain: ProgramChain) -> CollectFlits:
    """How many flits the feed of `chain` packs per time step (one unless its consumer says)."""
    consumer = chain.after_collect()[0]
    fn = FEED_FLITS.get(type(consumer))
    return fn(consumer) if fn is not None else CollectFlits.Flit1


# The lowering modules declare their entries with @lowers / @feeds when imported.
from tu_ops.lower import commit, contract, engines, inferred, trf, vector  # noqa: E402, F401
from tu_ops.lower import vrf  # noqa: E402, F401
