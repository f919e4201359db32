"""The `lower-ops` pass body: a traced kernel becomes a LoweredKernel (docs/reference/diagnostics.md).

Programs are placed at their sinks and DMAs at their calls (`tu_ops.lower.program`);
each traced stage becomes its op (`feed`, `trf`, `contract`, `commit`, `dma` modules),
keeping the user's location. Addresses are left at their unallocated values (commit
`dest=0`, `base_row=0`, DM-side DMA bases relative to the tensor) for the allocation pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ir import ops as ir
from ir.kernel import Kernel, used_axes
from tu_ops.base import Ref
from tu_ops.enums import TuContext
from tu_ops.lower.dispatch import Site, feed_flits, lower_stage, lowered_types
from ir.gather_ops import Gather, Scatter, Shuffle
from ir.spm_ops import SpmToDm, ToSpm
from ir.redistribute_ops import Redistribute
from tu_ops.lower.commit_view import direct_commit_views, into_fields
from tu_ops.lower.redistribute import lower_redistribute, relayout_view_step
from tu_ops.dma_commands import lower_dma
from tu_ops.dma_records import crosses_parts, relayout_record, spm_record
from tu_ops.lower.feed import lower_feed
from tu_ops.lower.program import ProgramChain, layout
from ir.runtime_ops import RUNTIME_STEPS
from tu_ops.lower.views import (lower_view_step, refuse_unplaced, runtime_start_fields, scatter_window, shift_feed,
                                spm_window_step, windows_of)
from ir.resident import placements
from tu_ops.program import KernelParam, LoweredKernel, TuProgram

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["build_lowered", "dma_records", "kernel_axes"]


def _prepared(kernel: Kernel, target: Target) -> tuple[dict[int, Any], dict[int, Any], Any, Any]:
    """(windows, folded commit views, layout, typ): what every step's lowering reads."""
    refuse_unplaced(kernel)
    windows = windows_of(kernel)
    folded = direct_commit_views(kernel, target)
    types = lowered_types(kernel)

    def typ(value: ir.Value) -> Any:
        return types.get(value.id, value.type)

    return windows, folded, layout(kernel, folded), typ


def dma_records(kernel: Kernel, target: Target) -> list[Any]:
    """The records `build_lowered` makes outside the programs (every DMA-context step), in
    body order, without lowering a program: what `driver.tune` bounds a candidate by before
    its whole lowering (the programs, the allocation and the verifiers) is paid for."""
    windows, _, lay, typ = _prepared(kernel, target)
    return [_dma_step(item, lay.first_id[k], lay.refs, windows, typ, target)
            for k, (kind, item) in enumerate(lay.steps) if kind == "dma"]


def build_lowered(kernel: Any, target: Any, axes: tuple[tuple[str, int], ...] | None = None) -> LoweredKernel:
    """Lower every op of a traced kernel (without allocation)."""
    windows, folded, lay, typ = _prepared(kernel, target)
    steps: list[Any] = []
    programs = 0
    for k, (kind, item) in enumerate(lay.steps):
        first = lay.first_id[k]
        if kind == "dma":
            steps.append(_dma_step(item, first, lay.refs, windows, typ, target))
            continue
        steps.append(_program(item, first, programs, lay.refs, typ, target, windows, folded))
        programs += 1
    resident = iter(placements(p.result.type for p in kernel.params if p.result.type.kind == "dm"))
    params = [KernelParam(Ref(p.index), p.name, p.result.type, p.mutable,
                          next(resident) if p.result.type.kind == "dm" else None) for p in kernel.params]
    ret = kernel.returns
    results = [Ref(lay.refs[v.id]) for v in ret.values] if ret is not None else []
    finals = [Ref(lay.refs[f.value.id]) for f in kernel.finals]
    return LoweredKernel(name=kernel.name, chip=kernel.chips, axes=kernel_axes(kernel, axes),
                         params=params, steps=steps, results=results, finals=finals, pe=getattr(kernel, "pe", 8))


def _dma_step(item: Any, first: int, refs: dict[int, int], windows: dict[int, Any], typ: Any, target: Any) -> Any:
    """The record of one step outside the programs: an SPM move, a shuffle, a redistribution,
    a gather or scatter, a runtime step, a DM -> DM relayout, a view step or a plain DMA."""
    if isinstance(item, (ToSpm, SpmToDm)):  # docs/machine/spm.md
        if item.src.id in windows:   # `to_spm` of a tile: the record reads the window of its tensor
            return spm_window_step(item, first, windows, refs, typ, target)
        return lower_dma(item, first, refs[item.src.id], item.src.type, item.result.type, target, spm_record)
    if isinstance(item, Shuffle):
        from tu_ops.gather_records import shuffle_record
        return shuffle_record(item, first, refs[item.src.id], target)
    if isinstance(item, Redistribute):
        return lower_redistribute(item, first, windows, refs, typ, target)
    if isinstance(item, (Gather, Scatter)):
        from tu_ops.gather_records import gather_record, scatter_record
        lower = gather_record if isinstance(item, Gather) else scatter_record
        into = {"into": refs[item.into.id]} if getattr(item, "into", None) is not None else {}
        if getattr(item, "count", None) is not None:   # a runtime sparse prefix (ir.gather_prefix)
            into["count"] = refs[item.count.id]
        page = runtime_start_fields("dst", item, refs, target) if isinstance(item, Scatter) else {}   # into a page
        if isinstance(item, Scatter) and item.src.id in windows:   # out of a tile of its DM tensor
            src, into["window"], start = scatter_window(item, windows, refs, typ, target)
            return attrs.evolve(lower(item, first, src, refs[item.index.id], target, **into), **start, **page)
        record = lower(item, first, refs[item.src.id], refs[item.index.id], target, **into)
        return attrs.evolve(record, **page) if page else record
    if isinstance(item, RUNTIME_STEPS):  # docs/runtime.md
        from tu_ops.runtime import lower_runtime
        return lower_runtime(item, first, refs)
    if isinstance(item, ir.ToDm) and item.src.id not in windows and crosses_parts(typ(item.src), typ(item.result)):
        return relayout_record(first, refs[item.src.id], typ(item.src), typ(item.result), target, item.loc)
    viewed = (relayout_view_step(item, first, windows, refs, typ, target)
              or lower_view_step(item, first, windows, refs, typ, target))
    return viewed or lower_dma(item, first, refs[item.src.id], typ(item.src), typ(item.result), target)


def _program(chain: ProgramChain, first: int, index: int, refs: dict[int, int], typ: Any, target: Any,
             windows: dict[int, Any], folded: dict[int, Any]) -> TuProgram:
    """One TU program: the FeedBuffer, then the op of each stage after `collect` (found from
    the stage's class, `tu_ops.lower.dispatch`)."""
    context = TuContext(chain.context)
    view = chain.begin.view
    rhs = getattr(chain.begin, "rhs", None)  # an interleaved begin's second view
    feed = shift_feed(lower_feed(chain, first, first + 1, feed_flits(chain), Ref(refs[view.id]), typ(view).element,
                                 target, None if rhs is None else Ref(refs[rhs.id])), view, windows, refs,
                      chain.begin, target)
    ops: list[Any] = [feed]
    cur, nid = first, first + 1
    for i, op in enumerate(chain.after_collect()):
        site = Site(chain, i, nid, cur, lambda v: refs[v.id], typ, context, target)
        new = lower_stage(op, site)
        if new is None:
            continue
        ops.append(new)
        cur, nid = nid, nid + 1
    if chain.sink.result.id in folded:  # `commit_view` straight into its view
        ops[-1] = attrs.evolve(ops[-1], **into_fields(folded[chain.sink.result.id], refs, target))
    return TuProgram(index=index, context=context, space=chain.begin.result.type.spatial(), ops=ops)


# --- the signature's axes line ----------------------------------------------------------------

def kernel_axes(kernel: Any, declared: tuple[tuple[str, int], ...] | None = None) -> tuple[tuple[str, int], ...]:
    """The `axes` line: every axis the kernel's mappings use, in declaration order (`declared`,
    else the order the traced kernel carries; axes whose declaration is unknown follow, by
    first appearance)."""
    used = used_axes(kernel)
    order = declared or kernel.axes
    out = [(name, used[name]) for name, _ in order if name in used]
    seen = {name for name, _ in out}
    return tuple(out + [(n, s) for n, s in used.items() if n not in seen])
