"""Tiles at a runtime start in the DSL (docs/runtime.md#runtime-tile-starts).

`v.tile(m("T"), 64, m("T = 64 # 512, D"), i)` with `i` a `RuntimeScalar` of type `usize`
(the reference's `tile` takes a `usize`: cast others with `i.cast(usize)`) is the tile at
start 0 whose element offset grows by `i * stride` cells when the kernel runs. The view
keeps `(scalar, stride, limit)` beside its static offsets. Its users: a Tensor DMA as the
source (`to_dm`, `to_hbm`, `to_dm_view`, `to_hbm_view`; the `window` carries the scalar)
or the destination (`to_dm_view`, `to_hbm_view`; the `to_view` does), and a stream's
`begin` (the `window` again). Everything else keeps RUNTIME-2: a runtime start of a chip,
cluster or slice tile, a second runtime start on one view, a runtime-tiled view read by
anything else (an interleaved `begin`, `to_spm`, a redistribution, a scatter) or written
by anything but a DMA (`memset`, `commit_view`, a scatter). RUNTIME-9: a start that is
not a `usize`, or whose step is not whole bytes; VIEW-13: a DM write whose step is not
whole 8-byte units.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.location import user_location
from ir.rules.runtime_tiles import START_DTYPE, runtime_tile_step
from npu_opt.stagebase import Poisoned, refuse_call
from npu_opt.trace import current

__all__ = ["runtime_retile", "refuse_runtime_read", "runtime_write_refusal"]

_TAKEN = ("a runtime tile start is taken by the `tile` of a view that a Tensor DMA copies from or into, or a "
          "stream's `begin` reads")


def _refuse(code: str, message: str, method: str, help: str | None = None) -> Poisoned:
    return refuse_call(Violation(code, message, help=help), method)


def runtime_retile(view: Any, method: str, level: str, index: Any, length: Any, mapping: Any, start: Any) -> Any:
    """The tile of `view` at the runtime scalar `start`, or a refusal."""
    if level != "element" or view._runtime is not None:
        where = f"`{method}` (the {level} level)" if level != "element" else "a view already tiled at a runtime start"
        return _refuse("RUNTIME-2", f"{_TAKEN}; {where} needs a trace-time start", method,
                       help="tile the element level of the view a DMA copies from or into, once, or guard "
                            "static tiles with `ctx.when(i == k)`")
    if start.dtype.name != START_DTYPE:
        return _refuse("RUNTIME-9", f"a runtime tile start is a usize, not a {start.dtype}", method,
                       help="cast it as the reference's `i as usize`: `.tile(..., i.cast(usize))`")
    step = runtime_tile_step(view.type.element, index, length, mapping, view.WRITABLE)
    if isinstance(step, Violation):
        return _refuse(step.code, step.message, method, help=step.help)
    stride, limit = step
    bits = view.type.dtype.bits
    if stride * bits % 8:
        return _refuse("RUNTIME-9", f"one step of the runtime start moves {stride} cells of {view.type.dtype}, "
                                    "not whole bytes", method,
                       help="tile an axis whose step holds whole bytes, or use a trace-time start")
    return view._derive(attrs.evolve(view.type, element=mapping), view._offsets, runtime=(start.value, stride, limit))


def refuse_runtime_read(what: str) -> None:
    """RUNTIME-2 for a runtime-tiled view read by something other than a Tensor DMA, at the
    user's call being executed (the reader of a view: `begin`, a gather, ...)."""
    current().refuse(Violation("RUNTIME-2", f"{_TAKEN}; {what} needs a trace-time start",
                               help="copy the tile out with `.to_dm(ctx.tdma, ...)` first and use the copy"),
                     user_location(None), "view")


def runtime_write_refusal(what: str) -> Violation:
    """RUNTIME-2 for a write into a runtime-tiled view by something other than a Tensor DMA."""
    return Violation("RUNTIME-2", f"{_TAKEN}; {what} needs a trace-time start",
                     help="write with `src.to_dm_view(ctx.tdma, view)` / `to_hbm_view`, or guard static tiles "
                          "with `ctx.when(i == k)`")
