"""What a VISA text does not spell out but fixes: canonical value numbering and allocation facts.

`renumber` gives the parameters `%0, %1, ...` in signature order and every record's result
the next number in body order (visa/visa.lark rule 6). `with_facts` re-derives the
unprinted [L] facts (DM and TRF allocations with their step liveness, a feed's
`source_base`, a TRF load's `live_rows`, a DMA's `src_alloc` / `dst_alloc`) from the
records, by the addresses and liveness rules of visa/visa.lark.
"""

from __future__ import annotations

import functools
import weakref
from typing import TYPE_CHECKING, Any

import attrs

from ir.regions import extend_reads, loops
from tu_ops.base import Alloc, Ref
from tu_ops.dma import DmaOp
from tu_ops.dma_view import dm_roots
from tu_ops.rf_reshape import rf_aliases
from tu_ops.program import DmAllocation, LoweredKernel, TrfAllocation, TuProgram, resident_ranges
from tu_ops.trf_new import trf_maker
from tu_ops.trf_place import TrfRequest, place_trf

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["renumber", "canonical_numbering", "with_facts", "tensor_bytes", "step_reads", "last_uses", "lowest",
           "trf_rows", "resident_allocations"]


# --- numbering -------------------------------------------------------------------------------

def canonical_numbering(kernel: LoweredKernel) -> dict[int, int]:
    """Old value id -> canonical id: parameters first, then results in body order."""
    order = [p.ref.id for p in kernel.params] + [op.result.id for op in kernel.ops()]
    table: dict[int, int] = {}
    for old in order:
        if old in table:
            raise ValueError(f"%{old} is defined twice")
        table[old] = len(table)
    return table


def renumber(kernel: LoweredKernel) -> LoweredKernel:
    """The same kernel with canonical value numbers (programs renumbered from 0 as well).
    A kernel this function made is returned as it is (renumbering is idempotent; the
    printer renumbers the artifact `artifact_of` just made canonical).

    Raises ValueError for a value defined twice or a reference to an undefined value."""
    if _RENUMBERED.get(id(kernel)) is kernel:
        return kernel
    table = canonical_numbering(kernel)
    steps, index = [], 0
    for step in kernel.steps:
        if isinstance(step, TuProgram):
            step = attrs.evolve(step, index=index, ops=tuple(_remap(op, table) for op in step.ops))
            index += 1
        else:
            step = _remap(step, table)
        steps.append(step)
    refs = ("params", "results", "finals", "dm_allocations", "trf_allocations")  # the fields holding references
    out = attrs.evolve(kernel, steps=tuple(steps), **{name: _remap(getattr(kernel, name), table) for name in refs})
    _RENUMBERED[id(out)] = out
    return out


# The kernels `renumber` made, by id (weakly held: an id is only trusted while its kernel lives).
_RENUMBERED: weakref.WeakValueDictionary[int, LoweredKernel] = weakref.WeakValueDictionary()


def _remap(obj: Any, table: dict[int, int]) -> Any:
    """`obj` with every Ref inside it (records of tu_ops, tuples) renumbered by `table`; `obj`
    itself when none changes."""
    if isinstance(obj, Ref):
        if obj.id not in table:
            raise ValueError(f"%{obj.id} is not defined")
        new_id = table[obj.id]
        return obj if new_id == obj.id else Ref(new_id)
    if isinstance(obj, (tuple, list)):
        items = [_remap(x, table) for x in obj]
        if isinstance(obj, tuple) and all(a is b for a, b in zip(items, obj)):
            return obj
        return tuple(items)
    cls = type(obj)
    if not cls.__module__.startswith("tu_ops") or not attrs.has(cls) or not getattr(cls, "HOLDS_REFS", True):
        return obj
    changes = {}
    for name, key in _init_fields(cls):
        value = getattr(obj, name)
        new = _remap(value, table)
        if new is not value and new != value:  # an object equal to the old one is kept (eq=False fields)
            changes[key] = new
    return attrs.evolve(obj, **changes) if changes else obj


@functools.cache
def _init_fields(cls: type) -> tuple[tuple[str, str], ...]:
    """(attribute, init keyword) of every init field of an attrs class, looked up once."""
    return tuple((f.name, getattr(f, "alias", None) or f.name) for f in attrs.fields(cls) if f.init)


# --- allocation facts ------------------------------------------------------------------------

def tensor_bytes(t: Any, target: Any) -> int:
    """Bytes of one copy of a DM or HBM tensor's element (its per-slice / per-chip size)."""
    return -(-t.element.size * (target.bits_of(t.dtype) or 0) // 8)


def step_reads(step: Any) -> list[Ref]:
    """The tensors a body step reads: a DMA's source, a program's feed sources and TRF weights."""
    if isinstance(step, DmaOp):
        return list(step.reads())
    if not isinstance(step, TuProgram):  # tensor_new reads nothing, memset its tensor
        return [step.into] if getattr(step, "into", None) is not None else []
    refs: list[Ref] = []
    for op in step.ops:
        if op.MNEMONIC == "feed_buffer":
            refs.extend(op.operands())  # the source, and an interleaved begin's second tensor
        elif op.MNEMONIC == "contract_outer":
            refs.append(op.weights)
        elif op.MNEMONIC == "commit" and op.into is not None:  # a commit into a tensor keeps its other cells
            refs.extend(r for r in (op.into, op.start) if r is not None)   # (and its window's runtime start)
    return refs


def last_uses(kernel: LoweredKernel) -> dict[int, int]:
    """The last body step using each tensor (by value id): reading it (a read of a write into
    DM, or of a TRF or VRF relabel, reads the tensor it names), or writing into it in DM."""
    last: dict[int, int] = {}
    roots, relabels = dm_roots(kernel.ops()), rf_aliases(kernel.ops())
    for i, step in enumerate(kernel.steps):
        wrote = [] if isinstance(step, TuProgram) or step.result.id not in roots else [step.result.id]
        for ref in [r.id for r in step_reads(step)] + wrote:
            last[roots.get(ref, relabels.get(ref, ref))] = i
    made_at = {op.result.id: i for i, step in enumerate(kernel.steps)
               for op in (step.ops if isinstance(step, TuProgram) else (step,))}
    return extend_reads(last, made_at, loops(kernel.steps))   # a rolled loop's body reads them again


def lowest(busy: list[tuple[int, int]], size: int, align: int) -> int:
    """The lowest multiple of `align` where `[x, x + size)` overlaps none of `busy`."""
    x = 0
    for start, end in sorted(busy):
        if x + size <= start:
            break
        if end > x:
            x = -(-end // align) * align
    return x


def trf_rows(kernel: LoweredKernel, target: "Target") -> dict[int, int]:
    """The first row of every TRF tensor (a `trf_load`'s or a TRF `new()`'s), by value id, by
    the one TRF placement rule the lowering also follows (tu_ops/trf_place.py)."""
    last, flit = last_uses(kernel), target.constants.FLIT_BYTES
    requests = []
    for i, step in enumerate(kernel.steps):
        for op in (step.ops if isinstance(step, TuProgram) else (step,)):
            if (shape := trf_maker(op, target)) is not None:
                requests.append(TrfRequest.of(op.result.id, i, max(i, last.get(op.result.id, i)), shape, flit))
    return place_trf(requests, target.constants.TRF_BYTES, [(r.begin, r.end) for r in loops(kernel.steps)])[0]


def _allocations(kernel: LoweredKernel, target: Any) -> tuple[list[DmAllocation], list[TrfAllocation]]:
    """The DM allocation of every DM tensor a dma or commit makes, the TRF allocation of every
    trf_load, each live from its creating step through its last reading step."""
    c, last, roots = target.constants, last_uses(kernel), dm_roots(kernel.ops())
    dm: list[DmAllocation] = []
    trf: list[TrfAllocation] = []
    made = None  # the rows of the TRF tensors made by new(), which no field holds
    for i, step in enumerate(kernel.steps):
        for op in (step.ops if isinstance(step, TuProgram) else (step,)):
            end = max(i, last.get(op.result.id, i))
            if op.result.id in roots:
                continue
            base = None  # the DM byte address of a DM tensor the op creates
            if op.MNEMONIC == "tensor_new" and op.output_type.kind == "dm":  # no command holds its address
                busy = [(a.base, a.base + a.size) for a in dm if a.last_step >= i] + resident_ranges(kernel.params)
                base = lowest(busy, tensor_bytes(op.output_type, target), 8)
            elif op.NEW_DM_TENSOR and op.output_type.kind == "dm" and op.commands:
                base = min(cmd.dst_base % c.DM_SLICE_BYTES for cmd in op.commands)
            elif op.MNEMONIC == "commit":
                base = op.dest
            if base is not None:
                dm.append(DmAllocation(tensor=op.result, base=base, size=tensor_bytes(op.output_type, target),
                                       first_step=i, last_step=end))
            elif op.MNEMONIC == "trf_load":
                first = op.occupied_rows(target)[0]
                trf.append(TrfAllocation(tensor=op.result, lanes=op.lanes, base_row=first, rows=op.rows(target),
                                         first_step=i, last_step=end, region=op.region))
            elif (shape := trf_maker(op, target)) is not None:  # TRF `new()`: no field holds its row
                made = trf_rows(kernel, target) if made is None else made
                trf.append(TrfAllocation(tensor=op.result, lanes=shape.lanes, first_step=i, last_step=end,
                                         rows=shape.rows(target), base_row=made[op.result.id]))
    return dm, trf


def resident_allocations(kernel: LoweredKernel) -> list[DmAllocation]:
    """The DM range of every resident DM parameter (its signature's `at`), live throughout;
    not among `dm_allocations`, which hold the tensors the body places."""
    params = [p for p in kernel.params if p.at is not None]
    return [DmAllocation(tensor=p.ref, base=a, size=b - a, first_step=0, last_step=len(kernel.steps))
            for p, (a, b) in zip(params, resident_ranges(params))]


def with_facts(kernel: LoweredKernel, target: Any) -> LoweredKernel:
    """`kernel` with every allocation fact re-derived from its records (visa/visa.lark)."""
    dm, trf = _allocations(kernel, target)
    dm_by = {a.tensor.id: a for a in dm} | {a.tensor.id: a for a in resident_allocations(kernel)}
    dm_by.update({a: dm_by[r] for a, r in dm_roots(kernel.ops()).items() if r in dm_by})
    steps = []
    for i, step in enumerate(kernel.steps):
        if isinstance(step, DmaOp):
            steps.append(attrs.evolve(step, src_alloc=_side_alloc(step.src, step.input_type, dm_by, target),
                                      dst_alloc=_side_alloc(step.result, step.output_type, dm_by, target)))
            continue
        if not isinstance(step, TuProgram):  # tensor_new carries no fact
            steps.append(step)
            continue
        ops = []
        for op in step.ops:
            if op.MNEMONIC == "feed_buffer":
                alloc = dm_by.get(op.source.tensor.id)
                op = attrs.evolve(op, source_base=None if alloc is None else alloc.base)
            elif op.MNEMONIC == "trf_load":
                live = tuple((a.base_row, a.base_row + a.rows) for a in trf
                             if a.tensor != op.result and a.live_at(i))
                op = attrs.evolve(op, live_rows=live)
            ops.append(op)
        steps.append(attrs.evolve(step, ops=tuple(ops)))
    return attrs.evolve(kernel, steps=tuple(steps), dm_allocations=tuple(dm), trf_allocations=tuple(trf))


def _side_alloc(ref: Ref, t: Any, dm_by: dict[int, DmAllocation], target: Any) -> Alloc | None:
    if getattr(t, "kind", None) == "hbm":   # every chip's copy: HBM addresses count them (DMAOP-5)
        return Alloc(0, t.chip.size * tensor_bytes(t, target))
    alloc = dm_by.get(ref.id)
    return None if alloc is None else Alloc(alloc.base, alloc.size)
