"""The `lower-ops` pass body: a traced kernel becomes a LoweredKernel (docs/reference/diagnostics.md).

Programs are placed at their sinks and DMAs at their calls (`tu_ops.lower.program`);
each traced stage becomes its op (`feed`, `trf`, `contract`, `commit`, `dma` modules),
keeping the user's location. Addresses are left at their unallocated values (commit
`dest=0`, `base_row=0`, DM-side DMA bases relative to the tensor) for the allocation pass.
"""

from __future__ import annotations

import sys
from typing import Any

import attrs

from ir import ops as ir
from ir.errors import InternalError
from ir.mapping.axes import REGISTRY_NAME
from ir.mapping.nodes import Mapping, Symbol
from tu_ops.base import Ref
from tu_ops.enums import CollectFlits, TuContext
from tu_ops.lower.commit import lower_cast, lower_commit
from tu_ops.lower.contract import lower_lane, lower_outer, lower_packet, lower_time, outer_pack
from tu_ops.lower.dma import lower_dma
from tu_ops.lower.feed import lower_feed
from tu_ops.lower.inferred import commit_inferred, factor_form, trf_inferred
from tu_ops.lower.program import Chain, layout
from tu_ops.lower.trf import lower_trf, trf_flits
from tu_ops.program import KernelParam, LoweredKernel, TuProgram

__all__ = ["build_lowered", "kernel_axes"]


def _lowered_types(kernel: Any) -> dict[int, Any]:
    """Types rewritten so that inferred mappings print from their factor form (rule 5)."""
    out: dict[int, Any] = {}
    for op in kernel.ops:
        if isinstance(op, ir.ToTrf):
            stream = op.input.type
            lane_inf, elem_inf = trf_inferred(op, stream.time, stream.packet)
            if lane_inf or elem_inf:
                t = op.result.type
                out[op.result.id] = attrs.evolve(
                    t, lane=factor_form(t.lane) if lane_inf else t.lane,
                    element=factor_form(t.element) if elem_inf else t.element)
        elif isinstance(op, ir.Commit):
            stream = op.input.type
            if commit_inferred(op, stream.time, stream.packet):
                out[op.result.id] = attrs.evolve(op.result.type, element=factor_form(op.result.type.element))
        elif isinstance(op, ir.View) and op.src.id in out:
            out[op.result.id] = out[op.src.id]
    return out


def build_lowered(kernel: Any, target: Any, axes: tuple[tuple[str, int], ...] | None = None) -> LoweredKernel:
    """Lower every op of a traced kernel (without allocation)."""
    lay = layout(kernel)
    types = _lowered_types(kernel)

    def typ(value: ir.Value) -> Any:
        return types.get(value.id, value.type)

    steps: list[Any] = []
    programs = 0
    for k, (kind, item) in enumerate(lay.steps):
        first = lay.first_id[k]
        if kind == "dma":
            steps.append(lower_dma(item, first, lay.refs[item.src.id], typ(item.src), typ(item.result), target))
            continue
        steps.append(_program(item, first, programs, lay.refs, typ, target))
        programs += 1
    params = [KernelParam(Ref(p.index), p.name, p.result.type) for p in kernel.params]
    ret = kernel.returns
    results = [Ref(lay.refs[v.id]) for v in ret.values] if ret is not None else []
    return LoweredKernel(name=kernel.name, chip=kernel.chips, axes=kernel_axes(kernel, axes),
                         params=params, steps=steps, results=results)


def _feed_flits(chain: Chain) -> CollectFlits:
    consumer = chain.after_collect()[0]
    if isinstance(consumer, ir.ToTrf):
        return trf_flits(consumer)
    if isinstance(consumer, ir.ContractOuter):
        return CollectFlits(outer_pack(consumer))
    return CollectFlits.Flit1


def _program(chain: Chain, first: int, index: int, refs: dict[int, int], typ: Any, target: Any) -> TuProgram:
    """One TU program: the FeedBuffer, then one op per stage after `collect`."""
    context = TuContext(chain.context)
    view = chain.begin.view
    source_t = typ(view)
    feed = lower_feed(chain, first, first + 1, _feed_flits(chain), Ref(refs[view.id]), source_t.element, target)
    ops: list[Any] = [feed]
    lane = chain.first(ir.ContractLane)
    rest = chain.after_collect()
    cur, nid = first, first + 1
    for i, op in enumerate(rest):
        if isinstance(op, (ir.CommitCast, ir.Commit)):
            continue
        if isinstance(op, ir.ToTrf):
            new = lower_trf(op, nid, cur, typ(op.result), target)
        elif isinstance(op, ir.ContractOuter):
            new = lower_outer(op, nid, cur, refs[op.trf.id], typ(op.trf), target)
        elif isinstance(op, ir.ContractPacket):
            new = lower_packet(op, nid, cur)
        elif isinstance(op, ir.ContractTime):
            if lane is None:
                raise InternalError(f"{op.text()}: contract_time without contract_lane")
            new = lower_time(op, nid, cur, lane.mode)
        elif isinstance(op, ir.ContractLane):
            new = lower_lane(op, nid, cur)
        elif isinstance(op, ir.Cast):
            new = lower_cast(op, nid, cur)
        elif isinstance(op, ir.CommitTrim):
            conv = next((x for x in rest[i + 1:] if isinstance(x, ir.CommitCast)), None)
            new = lower_commit(op, conv, chain.sink, nid, cur, typ(chain.sink.result), context, target)
        else:
            raise InternalError(f"{op.text()}: no lowering for stage `{op.STAGE}`")
        ops.append(new)
        cur, nid = nid, nid + 1
    return TuProgram(index=index, context=context, space=chain.begin.result.type.spatial(), ops=ops)


# --- the signature's axes line ----------------------------------------------------------------

def _symbols(mapping: Mapping, out: dict[str, int]) -> None:
    stack = [mapping]
    found = []
    while stack:
        node = stack.pop()
        if isinstance(node, Symbol):
            found.append((node.name, node.axis_size))
        stack.extend(reversed(node.children()))
    for name, size in found:
        out.setdefault(name, size)


def _used_axes(kernel: Any) -> dict[str, int]:
    """Every axis named in the kernel's types and stage mappings, by first appearance."""
    out: dict[str, int] = {}
    for op in kernel.ops:
        if op.result is not None:
            for level in op.result.type.levels():
                _symbols(level, out)
        for _, value in op.attributes():
            if isinstance(value, Mapping):
                _symbols(value, out)
    return out


def _declared(kernel: Any) -> tuple[tuple[str, int], ...] | None:
    """The axis declaration order of the kernel's module: recorded on the kernel, or read
    from the module registry of the file the kernel is defined in."""
    recorded = getattr(kernel, "axes", None)
    if recorded:
        return tuple(recorded.items()) if isinstance(recorded, dict) else tuple(recorded)
    locs = [op.loc for op in kernel.ops if op.loc is not None]
    if not locs:
        return None
    for module in list(sys.modules.values()):
        if getattr(module, "__file__", None) == locs[0].file:
            reg = getattr(module, REGISTRY_NAME, None)
            if isinstance(reg, dict):
                return tuple(reg.items())
    return None


def kernel_axes(kernel: Any, declared: tuple[tuple[str, int], ...] | None = None) -> tuple[tuple[str, int], ...]:
    """The `axes` line: every axis the kernel's mappings use, in declaration order (axes
    whose declaration is unknown follow, by first appearance)."""
    used = _used_axes(kernel)
    order = declared or _declared(kernel) or ()
    out = [(name, used[name]) for name, _ in order if name in used]
    seen = {name for name, _ in out}
    return tuple(out + [(n, s) for n, s in used.items() if n not in seen])
