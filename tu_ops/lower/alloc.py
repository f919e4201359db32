"""Liveness and memory allocation (visa/visa.lark "Liveness", "DM allocation", "TRF
allocation"; rule MEM-3 and MEM-4, refused here as [L] rules).

Steps are the body's DMAs and programs in order. A tensor is live from the step that
creates it through the last step that reads it. A DM tensor gets the lowest multiple of 8
at which it overlaps no DM tensor live at its step; a TRF tensor its rows by
tu_ops/trf_place.py (the lowest free rows, kept off the previous TRF tensor's outside a
rolled loop when the TRF has room); VISA 1 uses `region=FULL`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ir.mapping.cells import Padding
from ir.regions import extend_reads, loops

from tu_ops.base import Alloc
from tu_ops.rf_reshape import rf_aliases
from tu_ops.dma import DmaOp, moved
from tu_ops.dma_view import dm_roots
from tu_ops.dma_commands import dm_bytes
from tu_ops.lower.errors import LoweringRefusal, refusal, stage_of
from tu_ops.program import DmAllocation, LoweredKernel, TrfAllocation, TuProgram
from tu_ops.lower.vrf_alloc import allocate_vrf
from tu_ops.lower.vrf_sink import fit_vrf
from tu_ops.trf_new import trf_maker
from tu_ops.trf_place import TrfRequest, place_trf

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["allocate", "liveness", "check_capacity"]


@attrs.define
class _Tensor:
    ref: int
    op: Any
    size: int
    first: int
    last: int
    lanes: int = 0
    shape: Any = None   # a TRF tensor's geometry (`tu_ops.trf_new.trf_maker`)

    def live_at(self, step: int) -> bool:
        return self.first <= step <= self.last


@attrs.frozen
class _Resident:
    """A resident DM parameter where the allocator expects the op that made a tensor."""

    param: Any
    loc: Any = None
    MNEMONIC = "param"

    @property
    def result(self) -> Any:
        return self.param.ref

    @property
    def output_type(self) -> Any:
        return self.param.type

    def text(self) -> str:
        return self.param.text()


def liveness(kernel: LoweredKernel, target: Any) -> tuple[dict[int, _Tensor], dict[int, _Tensor]]:
    """DM and TRF tensors by value number, with their live steps."""
    dm: dict[int, _Tensor] = {}
    trf: dict[int, _Tensor] = {}
    row = target.constants.FLIT_BYTES

    roots = dm_roots(kernel.ops())
    relabels = rf_aliases(kernel.ops())  # a TRF relabel's reader reads its tensor's rows

    def read(table: dict[int, _Tensor], ref: Any, step: int) -> None:
        rid = roots.get(ref.id, relabels.get(ref.id, ref.id))
        if rid in table:
            table[rid].last = max(table[rid].last, step)

    dm.update({p.ref.id: _Tensor(p.ref.id, _Resident(p), _bytes(p.type, target), 0, len(kernel.steps))
               for p in kernel.params if p.at is not None})  # resident DM parameters: placed, live throughout
    for step, s in enumerate(kernel.steps):
        ops = s.ops if isinstance(s, TuProgram) else (s,)
        for op in ops:
            m = op.MNEMONIC
            if op.result.id in roots:  # a write into a DM tensor: its storage stays live
                read(dm, op.src, step) if op.MNEMONIC in ("dma_into", "dma_redistribute", "dma_relayout") and op.input_type.kind == "dm" else None
                read(dm, op.result, step)
                continue
            shape = trf_maker(op, target)
            if shape is not None:  # a trf_load, or a TRF tensor made by new()
                trf[op.result.id] = _Tensor(op.result.id, op, -(-shape.bytes_per_lane // row), step, step,
                                            shape.lanes, shape)
            elif isinstance(op, DmaOp) or m == "tensor_new":
                for ref in (op.reads() if isinstance(op, DmaOp) else ()):  # HBM sources are not in `dm`
                    read(dm, ref, step)
                if op.output_type.kind == "dm":
                    dm[op.result.id] = _Tensor(op.result.id, op, _bytes(op.output_type, target), step, step)
            elif m == "feed_buffer":
                for ref in op.operands():  # the source, and an interleaved begin's second tensor
                    read(dm, ref, step)
            elif m == "commit":
                dm[op.result.id] = _Tensor(op.result.id, op, _bytes(op.output_type, target), step, step)
            elif m == "contract_outer":
                read(trf, op.weights, step)
    return _through_loops(dm, kernel), _through_loops(trf, kernel)


def _through_loops(table: dict[int, _Tensor], kernel: LoweredKernel) -> dict[int, _Tensor]:
    """A tensor made before a rolled loop and read in its body is read by every iteration:
    it lives to the loop's end (`ir.regions.extend_reads`)."""
    last = extend_reads({k: t.last for k, t in table.items()}, {k: t.first for k, t in table.items()},
                        loops(kernel.steps))
    for k, t in table.items():
        t.last = last[k]
    return table


def _bytes(t: Any, target: Any) -> int:
    return dm_bytes(t, target.bits_of(t.dtype) or t.dtype.bits)


def _round8(n: int) -> int:
    return -(-n // 8) * 8


def _where(t: _Tensor) -> str:
    loc = t.op.loc
    at = f" ({loc.file.rsplit('/', 1)[-1]}:{loc.line})" if loc is not None else ""
    return f"%{t.ref} `{stage_of(t.op)}`{at}"


def _first_slice(t: Any) -> int:
    """The first slice holding the tensor (every slice has the same layout)."""
    return next((p for p in range(t.slice.size) if not isinstance(t.slice.cell(p), Padding)), 0)


def _place_dm(t: _Tensor, placed: dict[int, int], tensors: dict[int, _Tensor], limit: int) -> int:
    live = [(placed[o.ref], o) for o in tensors.values() if o.ref in placed and o.live_at(t.first)]
    for base in sorted({0, *(_round8(b + o.size) for b, o in live)}):
        if all(base + t.size <= b or b + o.size <= base for b, o in live) and base + t.size <= limit:
            return base
    in_use = sum(_round8(o.size) for _, o in live)
    why = ("" if in_use + _round8(t.size) > limit else
           " (no gap large enough: the live tensors fragment the DM)")
    notes = tuple(f"live: {_where(o)}, {_round8(o.size)} bytes at [{b}, {b + o.size})" for b, o in live)
    raise LoweringRefusal([refusal(
        "MEM-3", f"DM over-subscribed in slice {_first_slice(t.op.output_type)} (and every slice the tensor "
                 f"occupies): {t.size} bytes requested, {in_use} bytes in use, limit {limit} bytes{why}",
        t.op.loc, stage=stage_of(t.op), op=t.op.text(),
        label=f"needs {t.size} bytes of DM in each slice; {in_use} of {limit} are held by live tensors",
        notes=notes,
        help="shrink a tensor's Element mapping (spread an axis over more slices), use a narrower dtype, "
             "or end the last use of an earlier DM tensor before this step")])


def _trf_request(t: _Tensor, target: "Target") -> TrfRequest:
    return TrfRequest.of(t.ref, t.first, t.last, t.shape, target.constants.FLIT_BYTES)


def _trf_rows(tensors: dict[int, _Tensor], kernel: LoweredKernel | None, target: "Target") -> dict[int, int]:
    """Every TRF tensor's first row (tu_ops/trf_place.py), refusing MEM-4 for the first that
    does not fit."""
    bodies = [(r.begin, r.end) for r in loops(kernel.steps)] if kernel is not None else []
    rows, over = place_trf([_trf_request(t, target) for t in tensors.values()], target.constants.TRF_BYTES, bodies)
    if over is None:
        return rows
    t, c = tensors[over], target.constants
    live = [o for o in tensors.values() if o.ref != t.ref and o.live_at(t.first) and (o.first, o.ref) < (t.first, t.ref)]
    need = t.size * c.FLIT_BYTES * t.lanes
    in_use = sum(o.size * c.FLIT_BYTES * o.lanes for o in live)
    notes = tuple(f"live: {_where(o)}, {o.lanes} lanes x {o.size} rows of {c.FLIT_BYTES} bytes" for o in live)
    raise LoweringRefusal([refusal(
        "MEM-4", f"TRF over-subscribed in slice {_first_slice(t.op.output_type)}, lanes 0..{t.lanes - 1}: "
                 f"{t.lanes} x {t.shape.bytes_per_lane} = {need} bytes requested, {in_use} bytes in use, "
                 f"limit {c.TRF_BYTES} bytes ({c.TRF_BYTES // t.lanes} per lane)",
        t.op.loc, stage=stage_of(t.op), op=t.op.text(),
        label=f"needs {need} bytes of TRF in each slice; {in_use} of {c.TRF_BYTES} are held by live TRF tensors",
        notes=notes,
        help="shrink the TRF tensor (a smaller element per lane or fewer lanes), or finish the contractions "
             "that use an earlier TRF tensor before loading this one")])


def check_capacity(kernel: LoweredKernel, target: Any) -> None:
    """MEM-3 / MEM-4 for a tensor that alone exceeds the slice's DM or TRF (the trace checks
    the built-in limits; a target file may have smaller ones)."""
    dm, trf = liveness(kernel, target)
    for t in dm.values():
        _place_dm(t, {}, dm, target.constants.DM_SLICE_BYTES)
    for t in trf.values():
        _trf_rows({t.ref: t}, None, target)


def allocate(kernel: LoweredKernel, target: Any) -> LoweredKernel:
    """Assign DM addresses and TRF rows, refusing MEM-3 / MEM-4; fill every address field."""
    kernel = fit_vrf(kernel)  # a VRF load may move later when the VRF cannot hold the order as written
    dm, trf = liveness(kernel, target)
    dm_base: dict[int, int] = {p.ref.id: p.at for p in kernel.params if p.at is not None}
    for t in sorted(dm.values(), key=lambda x: (x.first, x.ref)):
        if t.ref not in dm_base:
            dm_base[t.ref] = _place_dm(t, dm_base, dm, target.constants.DM_SLICE_BYTES)
    rows = _trf_rows(trf, kernel, target)
    roots = dm_roots(kernel.ops())  # writes into a DM tensor sit at its address
    named = dm | {a: dm[r] for a, r in roots.items()}
    bases = dm_base | {a: dm_base[r] for a, r in roots.items()}
    steps = [_rewrite(s, k, named, bases, trf, rows, target) for k, s in enumerate(kernel.steps)]
    return allocate_vrf(attrs.evolve(
        kernel, steps=steps,
        dm_allocations=[DmAllocation(tensor=t.op.result, base=dm_base[t.ref], size=t.size,
                                     first_step=t.first, last_step=t.last) for t in dm.values()
                        if not isinstance(t.op, _Resident)],
        trf_allocations=[TrfAllocation(tensor=t.op.result, lanes=t.lanes, base_row=rows[t.ref],
                                       rows=t.size, first_step=t.first, last_step=t.last) for t in trf.values()]))


def _rewrite(step: Any, k: int, dm: dict[int, _Tensor], dm_base: dict[int, int], trf: dict[int, _Tensor],
             rows: dict[int, int], target: Any) -> Any:
    if isinstance(step, DmaOp):
        return _rewrite_dma(step, dm, dm_base)
    if not isinstance(step, TuProgram):  # tensor_new: no address
        return step
    ops = []
    for op in step.ops:
        m = op.MNEMONIC
        if m == "feed_buffer":
            op = attrs.evolve(op, source_base=dm_base.get(op.source.tensor.id))
        elif m == "commit":
            op = attrs.evolve(op, dest=dm_base[op.result.id] + (getattr(op, "offset", None) or 0))  # into: its window
        elif m == "trf_load":
            op = attrs.evolve(op, base_row=rows[op.result.id], live_rows=_live_rows(op, k, trf, rows, target))
        ops.append(op)
    return attrs.evolve(step, ops=ops)


def _live_rows(op: Any, step: int, trf: dict[int, _Tensor], rows: dict[int, int],
               target: Any) -> tuple[tuple[int, int], ...]:
    """Rows (in this load's lane units) held by the other TRF tensors live at its step."""
    unit = target.constants.FLIT_BYTES * op.lanes
    out = []
    for o in trf.values():
        if o.ref == op.result.id or not o.live_at(step):
            continue
        a = rows[o.ref] * target.constants.FLIT_BYTES * o.lanes
        b = a + o.size * target.constants.FLIT_BYTES * o.lanes
        out.append((a // unit, -(-b // unit)))
    return tuple(out)


def _rewrite_dma(op: DmaOp, dm: dict[int, _Tensor], dm_base: dict[int, int]) -> DmaOp:
    src_dm, dst_dm = op.input_type.kind == "dm", op.output_type.kind == "dm"
    src_off = dm_base[op.src.id] if src_dm else 0
    dst_off = dm_base[op.result.id] if dst_dm else 0
    commands = moved(op.commands, src_off, dst_off)
    src_alloc = Alloc(src_off, dm[op.src.id].size) if src_dm else op.src_alloc
    dst_alloc = Alloc(dst_off, dm[op.result.id].size) if dst_dm else op.dst_alloc
    out = attrs.evolve(op, commands=commands, src_alloc=src_alloc, dst_alloc=dst_alloc)
    index = getattr(op, "index", None)
    if index is not None and index.id in dm_base:   # a gather's DM index, read by its index_commands
        out = attrs.evolve(out, index_commands=moved(op.index_commands, dm_base[index.id]))
    return out
