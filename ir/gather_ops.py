"""Traced ops of indexed and topology DMA: `dma_gather_scaled` / `dma_gather_unscaled` (ir.gather),
`dma_scatter` (ir.scatter), and the chip and cluster shuffles."""

from __future__ import annotations

from typing import Any

import attrs

from ir.mapping.nodes import Mapping
from ir.op_frame import attr, operand
from ir.ops import Op, Value
from ir.gather_prefix import check_count
from ir.rules.gather import check_gather
from ir.rules.runtime_tiles import check_runtime_start
from ir.rules.scatter import check_scatter
from ir.rules.shuffle import check_shuffle

__all__ = ["Gather", "Scatter", "Shuffle"]


@attrs.frozen(kw_only=True)
class Gather(Op):
    """Rows of the HBM table `src` gathered into DM at the rows `index` names:
    `%3 = dma_gather %0, %2 scaled=True : dm<...>`."""

    STAGE = "dma_gather"
    RULES = (check_gather, check_count)
    src: Value = operand()
    index: Value = operand()
    scaled: bool = attr()
    # `.sparse_prefix(n)` of the staged form: each chip gathers its first n index entries (in the
    # index's logical order) and leaves the rest of the output zero. An int known at trace time
    # is `prefix`; a runtime i32 scalar is the operand `count` (ir.gather_prefix).
    prefix: int | None = attr(None, optional=True)
    count: Value | None = operand(optional=True)

    def attributes(self) -> list:
        """The attributes, without an unset prefix (the v0.6 forms print as they always did)."""
        return [(k, v) for k, v in super().attributes() if not (k == "prefix" and v is None)]


@attrs.frozen(kw_only=True)
class Scatter(Op):
    """The DM tensor `src` written into rows of a new HBM tensor at the byte offsets `index`
    names: `%4 = dma_scatter %2, %1 key=m"K" : hbm<...>`."""

    STAGE = "dma_scatter"
    RULES = (check_scatter, check_runtime_start)
    src: Value = operand()
    index: Value = operand()
    key: Mapping = attr()
    into: Value | None = operand(optional=True)   # an existing tensor written in place (its other rows kept)
    # ... or one page of it (`ir.scatter.page_of`): the page's type, its first cell in the element,
    # and a runtime start moving it by `start * start_stride` cells (at most `start_limit`)
    view: Any = attr(None, optional=True)
    offset: int | None = attr(None, optional=True)
    start: Value | None = operand(optional=True)
    start_stride: int | None = attr(None, optional=True)
    start_limit: int | None = attr(None, optional=True)

    def attributes(self) -> list:
        """The attributes, without the page fields of a scatter into a whole tensor."""
        return [(k, v) for k, v in super().attributes()
                if not (k in ("view", "offset", "start_stride", "start_limit") and v is None)]


@attrs.frozen(kw_only=True)
class Shuffle(Op):
    """A chip or cluster shuffle: position t of the `level` takes position `pattern[t]` of `src`
    (`%3 = shuffle %2 level='cluster' dim=2 pattern='1,0' : dm<...>`)."""

    STAGE = "shuffle"
    RULES = (check_shuffle,)
    SAME_TYPE_AS = "src"
    src: Value = operand()
    level: str = attr()          # "chip" or "cluster"
    dim: int = attr()
    pattern: str = attr()        # the sources, comma separated

    @property
    def sources(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.pattern.split(",")) if self.pattern else ()
