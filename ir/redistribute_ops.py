"""The traced op of a staged DM redistribution (`chip_shuffle`, `cluster_swap`, `chip_slice`,
`cluster_slice` ... `.to_dm(...)`, and the asymmetric slices), docs/machine/topology.md.

`%4 = redistribute %2 window=m"(1 # 4, C, D)" sources='1.0,2.0,3.0,0.0' offsets='0,64,128,192'
engine='tdma' : dm<...>`: target (chip, cluster) number t (chip-major) of the result is the
DMA of source part `sources[t]`'s cells at `offsets[t]` cells into its Element, viewed
through `window` (the Element with every sliced digit range left as padding), into the
result's layout. `to_dm_view` writes the write view `view` (at `offset` cells per level) of
the tensor `into` instead, and the result is `into`'s new contents. A `src` that is a tile at
a runtime start is a `window` naming its scalar; a write view tiled at a runtime start adds
`start`, `start_stride` and `start_limit` as `to_view` does (docs/runtime.md#runtime-tile-starts).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.mapping.nodes import Mapping
from ir.op_frame import attr, operand
from ir.ops import Op, Value
from ir.rules.redistribute import check_redistribute, parse_offsets, parse_sources
from ir.rules.runtime_tiles import check_runtime_start

__all__ = ["Redistribute"]


@attrs.frozen(kw_only=True)
class Redistribute(Op):
    """One fused redistribution: per target a source part and an Element offset."""

    STAGE = "redistribute"
    RULES = (check_redistribute, check_runtime_start)
    src: Value = operand()
    window: Mapping = attr()
    sources: str = attr()        # per target: "chip.cluster", comma separated
    offsets: str = attr()        # per target: cell offset into the source Element
    engine: str = attr("tdma")   # "tdma", or "sub" for an asymmetric slice
    into: Value | None = operand(optional=True)          # `to_dm_view`: the tensor written
    view: Any = attr(default=None, optional=True)        # ... its write view's type
    offset: tuple[int, ...] | None = attr(default=None, optional=True)   # ... and cell offsets per level
    start: Value | None = operand(optional=True)                         # ... and its runtime start
    start_stride: int | None = attr(default=None, optional=True)
    start_limit: int | None = attr(default=None, optional=True)

    def attributes(self) -> list[tuple[str, Any]]:
        """The printed fields; a runtime start's stride and limit only when the write view has one."""
        return [(k, v) for k, v in super().attributes() if k not in ("start_stride", "start_limit") or v is not None]

    @property
    def placements(self) -> list[tuple[int, int]]:
        return parse_sources(self.sources)

    @property
    def cell_offsets(self) -> list[int]:
        return parse_offsets(self.offsets)
