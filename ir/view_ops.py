"""Traced ops of memory views and allocation (docs/views.md): `new`, `window`, `to_view`, `memset`.

A view never copies: `window` names cells of a base tensor through another type of the
same extent per level, shifted by a cell offset per level (a tile keeps the base's
addresses and marks the cells outside it as padding). `to_view` is a Tensor DMA whose
destination is such a window of an existing tensor: its result is the new contents of
that whole tensor (the SSA value that replaces it), the cells outside the window kept.
`new` is a fresh tensor that reads as zeros.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.op_frame import attr, operand
from ir.ops import Op, ToDm, ToHbm, Value
from ir.types import Type
from ir.rules.view_writes import check_dm_write_align, check_memset_bytes, read_padded
from ir.rules.runtime_tiles import check_runtime_start

__all__ = ["NewTensor", "Window", "ToView", "Memset", "proxy_dma"]


@attrs.frozen(kw_only=True)
class NewTensor(Op):
    """`HbmTensor[...].new()` / `DmTensor[...].new()`: a tensor of zeros, `%4 = new : hbm<...>`."""

    STAGE = "new"


@attrs.frozen(kw_only=True)
class Window(Op):
    """A read view of `src` through the result's type, shifted by `offset` cells per level
    (one per level of the type, outermost first): cell p of level k is the base's cell
    `p + offset[k]`. `reshaped` is the view's type right after its last `reshape` (VIEW-5:
    the base's levels relabelled, sizes kept), which later tiles narrow; None for a view
    that was never reshaped (then the IR text leaves it out).

    A tile at a runtime start (docs/runtime.md#runtime-tile-starts) adds the `usize` scalar
    `start`: the element offset grows by `start * start_stride` cells at run time, and a
    start above `start_limit` stops the run (RUNTIME-10). All three are absent otherwise."""

    STAGE = "window"
    RULES = (check_runtime_start,)
    src: Value = operand()
    start: Value | None = operand(optional=True)
    offset: tuple[int, ...] = attr()
    reshaped: Type | None = attr(default=None, optional=True)
    start_stride: int | None = attr(default=None, optional=True)
    start_limit: int | None = attr(default=None, optional=True)

    def attributes(self) -> list[tuple[str, Any]]:
        return [(k, v) for k, v in super().attributes() if k not in _OPTIONAL or v is not None]


_OPTIONAL = ("reshaped", "start_stride", "start_limit")


def proxy_dma(src: Value, view: Type, loc: Any) -> ToDm | ToHbm:
    """The plain DMA `src -> view`: the rules a copy into a view obeys are those of a copy
    into a fresh tensor of the view's type."""
    cls = ToDm if view.kind == "dm" else ToHbm
    return cls(src=src, result=Value(-1, view), loc=loc)


def _check_to_view(op: ToView) -> Violation | None:
    return proxy_dma(op.src, read_padded(op.view), op.loc).check()


@attrs.frozen(kw_only=True)
class ToView(Op):
    """`src.to_hbm_view(ctx.tdma, dst)` / `to_dm_view`: a Tensor DMA of `src` into the write
    view `dst` of tensor `into` (type `view`, shifted by `offset` cells per level); the
    result is `into`'s new contents, of `into`'s type. A `dst` tiled at a runtime start
    adds `start`, `start_stride` and `start_limit` as a `window` does."""

    STAGE = "to_view"
    RULES = (_check_to_view, check_dm_write_align, check_runtime_start)
    SAME_TYPE_AS = "into"
    src: Value = operand()
    into: Value = operand()
    start: Value | None = operand(optional=True)
    view: Any = attr()
    offset: tuple[int, ...] = attr()
    start_stride: int | None = attr(default=None, optional=True)
    start_limit: int | None = attr(default=None, optional=True)

    def attributes(self) -> list[tuple[str, Any]]:
        return [(k, v) for k, v in super().attributes() if k not in _OPTIONAL or v is not None]


@attrs.frozen(kw_only=True)
class Memset(Op):
    """`view.memset(ctx.sub, value)`: every live cell of the DM write view (type `view`,
    shifted by `offset`) of tensor `into` set to `value`; the result is `into`'s new contents.
    A view tiled at a runtime start adds `start`, `start_stride` and `start_limit` as a
    `window` does."""

    STAGE = "memset"
    RULES = (check_memset_bytes, check_runtime_start)
    SAME_TYPE_AS = "into"
    into: Value = operand()
    view: Any = attr()
    offset: tuple[int, ...] = attr()
    value: Any = attr()
    start: Value | None = operand(optional=True)
    start_stride: int | None = attr(default=None, optional=True)
    start_limit: int | None = attr(default=None, optional=True)

    def attributes(self) -> list[tuple[str, Any]]:
        return [(k, v) for k, v in super().attributes() if k not in _OPTIONAL or v is not None]
