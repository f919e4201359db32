"""The tensors of the schedule page: where each one lives, when, and which records touch it.

A tensor is a value the kernel keeps in a memory: a DM tensor at its allocation's byte range
(the [L] allocation facts `visa.facts.with_facts` derives, and the resident DM parameters),
a TRF tensor at its rows, a VRF tensor at its words (`steps.vrf_regions`), an HBM tensor
(a parameter, a result, a DMA's HBM side) with no address of the slice. The result of a write
into a tensor (`dma_into`, in DM or HBM), a register-file relabel and an in-out parameter's
final value are names of the tensor their chain starts at: they join it, and a write into a
tensor counts as its writer, not its reader.

A tensor's lifetime in cycles runs from the start of its first live step to the latest end
among its live steps (a DM or TRF allocation's `first_step ... last_step`; otherwise the
steps writing or reading it); a parameter is live from cycle 0, a result until the makespan,
an unused parameter not at all ([0, 0)).
"""

from __future__ import annotations

from typing import Any

import attrs

from tu_ops.base import Ref
from tu_ops.printing import type_text
from tu_ops.program import LoweredKernel, TuProgram
from tu_ops.rf_reshape import rf_aliases
from visa.facts import resident_allocations
from visa.schedule.model import Schedule
from visa.schedule.steps import vrf_regions

__all__ = ["tensor_nodes", "record_reads", "UNITS"]

UNITS = {"dm": "byte", "trf": "row", "vrf": "word", "hbm": ""}


def record_reads(op: Any) -> list[Ref]:
    """The values a record reads: its operands (a feed's source tensors, a contraction's
    weights, a pass's register-file tensors, a DMA's sources) and the tensor it writes into."""
    refs: list[Ref] = list(op.reads()) if hasattr(op, "reads") else []
    for f in attrs.fields(type(op)):
        if f.metadata.get("role") == "operand":
            value = getattr(op, f.name)
            refs += [v for v in (value if isinstance(value, tuple) else (value,)) if isinstance(v, Ref)]
    if op.MNEMONIC == "feed_buffer":
        refs += op.operands()
    if isinstance(getattr(op, "into", None), Ref):
        refs.append(op.into)
    return list(dict.fromkeys(r for r in refs if r != op.result))


def _base_nodes(kernel: LoweredKernel, makers: dict[int, Any]) -> dict[int, dict[str, Any]]:
    """Every tensor by value id: its memory, address range and allocated steps (when it has them)."""
    names = {p.ref.id: p.name for p in kernel.params}
    types = {p.ref.id: p.type for p in kernel.params} | {i: op.output_type for i, op in makers.items()}
    nodes: dict[int, dict[str, Any]] = {}

    def add(ref_id: int, space: str, lo: int | None, hi: int | None, steps: tuple[int, int] | None,
            **extra: Any) -> None:
        nodes[ref_id] = {"name": f"%{ref_id}", "param": names.get(ref_id, ""), "space": space, "lo": lo, "hi": hi,
                         "unit": UNITS[space], "type": type_text(types.get(ref_id)), "alloc_steps": steps, **extra}

    for a in (*kernel.dm_allocations, *resident_allocations(kernel)):
        add(a.tensor.id, "dm", a.base, a.base + a.size, (a.first_step, a.last_step))
    for t in kernel.trf_allocations:
        add(t.tensor.id, "trf", t.base_row, t.base_row + t.rows, (t.first_step, t.last_step), lanes=t.lanes)
    for ref_id, (lo, hi) in vrf_regions(kernel).items():
        add(ref_id, "vrf", lo, hi, None)
    for ref_id, t in types.items():
        if ref_id not in nodes and getattr(t, "kind", None) == "hbm":
            add(ref_id, "hbm", None, None, None)
    return nodes


def tensor_nodes(schedule: Schedule, kernel: LoweredKernel) -> tuple[list[dict[str, Any]], dict[str, list[int]]]:
    """The page's tensors (in value order) and, by record ref, the indices of the tensors it
    reads or writes. Each tensor names its writers and readers (record refs), its contexts,
    its live steps and cycles."""
    ops = [(i, op) for i, s in enumerate(kernel.steps) for op in (s.ops if isinstance(s, TuProgram) else (s,))]
    makers = {op.result.id: op for _, op in ops if op.result is not None}
    nodes = _base_nodes(kernel, makers)
    alias = _into_roots(op for _, op in ops) | rf_aliases(op for _, op in ops)
    inout = [p.ref.id for p in kernel.params if p.inout]
    alias |= {final.id: param for final, param in zip(kernel.finals, inout) if final.id != param}
    for name in [rid for rid in nodes if alias.get(rid, rid) in nodes and alias.get(rid, rid) != rid]:
        del nodes[name]
    slot_of = {r.ref: slot for slot in schedule.slots for r in slot.step.records}
    touched: dict[int, list[int]] = {}     # tensor id -> the kernel steps that write or read it
    links: dict[str, list[int]] = {}       # record ref -> tensor ids, in the order it touches them
    for step, op in ops:
        ref, wrote = str(op.result), alias.get(op.result.id, op.result.id)
        for rid, role in [(r.id, "readers") for r in record_reads(op)] + [(op.result.id, "writers")]:
            root = alias.get(rid, rid)
            if root not in nodes or (role == "readers" and root == wrote):   # a write into a tensor
                continue
            nodes[root].setdefault(role, []).append(ref)
            touched.setdefault(root, []).append(step)
            links.setdefault(ref, []).append(root)
    order = sorted(nodes)
    index = {rid: i for i, rid in enumerate(order)}
    step_slots = _step_slots(kernel, slot_of)
    finals = {r.id for r in (*kernel.results, *kernel.finals)}
    params = {p.ref.id for p in kernel.params}
    out = []
    for rid in order:
        node = nodes[rid]
        alloc = node.pop("alloc_steps")
        steps = alloc or (min(touched.get(rid, [0])), max(touched.get(rid, [0])))
        live = [step_slots[k] for k in range(steps[0], min(steps[1], len(step_slots) - 1) + 1) if step_slots[k]] \
            if alloc is not None or rid in touched else []          # an unused parameter: no live step
        start = 0 if rid in params or not live else min(s.start for s in live)
        end = schedule.makespan if rid in finals or steps[1] >= len(step_slots) else \
            max(s.end for s in live) if live else start
        contexts = sorted({slot_of[r].step.context for r in (*node.get("writers", ()), *node.get("readers", ()))
                           if r in slot_of})
        out.append({**node, "writers": list(dict.fromkeys(node.get("writers", ()))),
                    "readers": list(dict.fromkeys(node.get("readers", ()))), "first_step": steps[0],
                    "last_step": steps[1], "start": start, "end": max(end, start), "contexts": contexts})
    return out, {ref: list(dict.fromkeys(index[t] for t in ts)) for ref, ts in links.items()}


def _into_roots(ops: Any) -> dict[int, int]:
    """Every write-into result (a `dma_into` in DM or HBM, a commit into a tensor) -> the id of
    the tensor its chain started from: it names that tensor's storage, updated."""
    roots: dict[int, int] = {}
    for op in ops:
        into = getattr(op, "into", None)
        if isinstance(into, Ref):
            roots[op.result.id] = roots.get(into.id, into.id)
    return roots


def _step_slots(kernel: LoweredKernel, slot_of: dict[str, Any]) -> list[Any]:
    """The scheduled slot of each kernel step (found by its first record), None for one the
    schedule does not hold."""
    firsts = [(s.ops[0] if s.ops else None) if isinstance(s, TuProgram) else s for s in kernel.steps]
    return [slot_of.get(str(op.result)) if op is not None else None for op in firsts]
