"""`feed_buffer` records: DM read plan, Fetch Adapter conversions, Collect (docs/machine/fetch.md).

Per live slice, time step `t` and packet position `p` of its read shape, the feed reads
the source element `offset + sum(t_i * time_stride_i) + sum(p_j * packet_stride_j)` of the
DM tensor (strides in source elements, 0 = broadcast) at byte
`slice * DM_SLICE_BYTES + base + element * bits / 8`. Positions that the fetch stream's
type marks as padding read zero (docs/machine/index.md, over-reads past the live data). The
conversions run in list order (ir/convert.py). Collect pads each packet with zeros to
`flits_per_packet` flits and moves the flits into time; `beats * collect_flits` must be
the flit count delivered.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ir.fetch_lift import lift_offsets, lifted_axes
from ir.fetch_mask import mask_keep
from ir.runtime_types import checked_start
from visa.interp.dma import DmTensor, walk
from visa.interp.errors import check
from visa.interp.fast import lanes
from visa.interp.fast.lanes import Front, pad_front
from visa.interp.fast.copies import first_equal
from visa.interp.fast.lazy import gather_groups
from visa.interp.shortcuts import per_record
from visa.interp.memory import Memory, gather
from visa.interp.rows import Rows
from visa.interp.steps import ProgramState, executes
from visa.interp.switch import run_switch
from visa.interp.strided import flat_walk, view
from visa.interp.fast.repeated import Repeated
from visa.interp import shortcuts
from visa.interp.values import convert_chain, from_raw, padded, raw_dtype, value_dtype, zero_pad, zero_padding

__all__ = ["feed_rows", "read_plan", "convert_chain"]


def read_plan(op: Any) -> tuple[int, int, list[int], list[int]]:
    """(time steps, packet elements, loop sizes, element strides) of the read shape, time
    loops then packet loops, outer to inner."""
    check(len(op.shapes) == 1, f"{len(op.shapes)} read shapes; interleaved feeds are later scope", op)
    shape = op.shapes[0]
    tsz = [e.size for e in shape.time]
    psz = [e.size for e in shape.packet]
    check(all(n >= 1 for n in tsz + psz) and all(e.stride >= 0 for e in shape.entries()),
          "a read loop has size 0 or a negative stride", op)
    steps, elems = math.prod(tsz), math.prod(psz)
    check(elems == shape.packet_elems, f"packet entries cover {elems} elements, packet_elems is {shape.packet_elems}", op)
    r = shape.read_elems
    n, s = (shape.packet[-1].size, shape.packet[-1].stride) if shape.packet else (1, 0)
    check(r >= 1 and (r == 1 or (s in (0, 1) and n % r == 0)),
          f"the innermost packet entry {n}:{s} cannot be read {r} elements per access", op)
    return steps, elems, tsz + psz, [e.stride for e in shape.entries()]


@per_record
def _plan(op: Any, target: Any) -> tuple[int, tuple[int, int, list[int], list[int]], np.ndarray]:
    """(source bits, `read_plan`, element index of every (step, packet position)) of a
    feed, its fields checked: what the record alone fixes, once per record."""
    sd = op.source.dtype
    bits = target.bits_of(sd) or 0
    check(bits in (4, 8, 16, 32), f"source dtype {sd} has no byte layout", op)
    plan = read_plan(op)
    steps, elems, sizes, strides = plan
    fin = op.fetched_type()  # the fetch's stream after its lifts (docs/machine/fetch-lift.md)
    fetch_shape = (fin.time.size, fin.packet.size)
    check(fetch_shape == (steps, elems),
          f"the read plan gives {steps} x {elems} elements, the fetch stream is {fetch_shape}", op)
    et = op.element_type.dtype
    ebits = target.bits_of(et) or 0
    check(ebits in (4, 8, 16, 32), f"element type {op.element_type} has no byte layout", op)
    flit = 8 * target.constants.FLIT_BYTES // ebits
    check(op.flits_per_packet >= 1 and op.flits_per_packet * flit >= elems,
          f"{elems} x {op.element_type} do not fit {op.flits_per_packet} flit(s) of {flit} elements", op)
    return bits, plan, walk(op.source.offset, sizes, strides).reshape(1, steps, elems)


@per_record
def _mask_pad(op: Any) -> np.ndarray:
    """The positions the Fetch Adapter's mask drops (ir.fetch_mask)."""
    fin = op.fetched_type()
    return ~mask_keep(fin.time, fin.packet, op.mask)


@per_record
def _lift_bytes(op: Any, target: Any) -> np.ndarray | None:
    """The byte offset each (chip, cluster, slice) position of a lifted feed reads from, flat
    (ir.fetch_lift.lift_offsets); None without lifts."""
    if not op.lift:
        return None

    fin = op.fetched_type()
    lifted = frozenset().union(*(lifted_axes(a, b) for a, b in zip(op.input_type.spatial(), fin.spatial())))
    offsets = lift_offsets(fin.spatial(), lifted, op.source.element)
    bits = target.bits_of(op.source.dtype) or 0
    check(offsets is not None and bool(np.all(offsets * bits % 8 == 0)), "a lift base is not a whole byte", op)
    return offsets * bits // 8


def _read(dm: Any, slices: np.ndarray, base: Any, op: Any, plan: tuple[int, int, list[int], list[int]],
          bits: int, index: np.ndarray, grid: list[tuple[int, int]] | None, mem: Memory,
          into: np.ndarray | None = None) -> np.ndarray:
    """The read plan's elements of `slices` (a strided view when they are a `grid`,
    `Rows.slice_grids`): when one strided walk reads them, written into `into` (their rows of the
    stream, `value_dtype` values) and returned, or without `into` into a scratch array of
    the run's `mem`; else a gathered array. `base` is one byte offset, or one per slice (a
    lifted feed's)."""
    steps, elems, sizes, strides = plan
    sd = op.source.dtype
    if bits >= 8 and grid and np.ndim(base) == 0:
        w = bits // 8
        start = int(slices[0]) * dm.slice_bytes + base + op.source.offset * w
        counts = [n for n, _ in grid]
        walk_ = flat_walk(dm, start, [*counts, *sizes],
                          [*(k * dm.slice_bytes for _, k in grid), *(st * w for st in strides)], w)
        v = None if walk_ is None else view(walk_, [*counts, *sizes], raw_dtype(bits))
        if v is not None:
            if into is None:
                into = mem.scratch((len(slices), steps, elems), value_dtype(sd))
            if into.dtype.itemsize == w:    # the raw bits straight into the stream's rows
                np.copyto(into.view(v.dtype).reshape(v.shape), v)
                values = from_raw(into.view(v.dtype), sd, bits)
            else:
                values = from_raw(v.reshape(len(slices), steps, elems), sd, bits)
            if not np.may_share_memory(values, into):
                into[...] = values
            return into
    row_base = (slices * dm.slice_bytes + np.asarray(base)).reshape(-1, 1, 1)
    return gather(dm, row_base, index, sd, bits, op, "the read plan")


@per_record
def _tensor_loop(op: Any) -> tuple[int, list[int], list[int]] | None:
    """(k, sizes, strides): an interleaved feed's read loops with loop k picking the tensor,
    of size 2 and stride n (the element's size) while the offset and the other loops stay
    in [0, n), so element `v` lies in the second tensor exactly when loop k's index is 1.
    A loop of 2q steps of stride s with q * s = n (the tensor loop merged with the one
    inside it) is split into that pair; None when no loop is such a one."""
    n = op.source.element.size
    _, _, sizes, strides = read_plan(op)
    for k, (size, stride) in enumerate(zip(sizes, strides)):
        if size % 2 or size // 2 * stride != n:
            continue
        split_sizes = [*sizes[:k], 2, size // 2, *sizes[k + 1:]]
        split_strides = [*strides[:k], n, stride, *strides[k + 1:]]
        rest = sum((m - 1) * st for j, (m, st) in enumerate(zip(split_sizes, split_strides)) if j != k)
        if 0 <= op.source.offset and op.source.offset + rest < n:
            return k, split_sizes, split_strides
    return None


def _read_both(dm: Any, slices: np.ndarray, bases: tuple[int, int], op: Any,
               plan: tuple[int, int, list[int], list[int]], bits: int, mem: Memory) -> np.ndarray | None:
    """An interleaved read as one strided walk (None when it is not one): the tensor loop
    (`_tensor_loop`) steps from the first tensor's base to the second's, the others as the
    plan says; a second tensor below the first is walked from it and the loop reversed."""
    found = _tensor_loop(op)
    if found is None or bits < 8:
        return None
    k, sizes, strides = found
    steps, elems = plan[:2]
    w, low = bits // 8, min(bases)
    byte_strides = [abs(bases[1] - bases[0]) if j == k else st * w for j, st in enumerate(strides)]
    start = int(slices[0]) * dm.slice_bytes + low + op.source.offset * w
    walk_ = flat_walk(dm, start, [len(slices), *sizes], [dm.slice_bytes, *byte_strides], w)
    v = None if walk_ is None else view(walk_, [len(slices), *sizes], raw_dtype(bits))
    if v is None:
        return None
    if bases[1] < bases[0]:
        v = v[(slice(None),) * (k + 1) + (slice(None, None, -1),)]
    out = mem.scratch(v.shape, v.dtype)
    np.copyto(out, v)
    return from_raw(out.reshape(len(slices), steps, elems), op.source.dtype, bits)


def _read_interleaved(dm: Any, slices: np.ndarray, bases: tuple[Any, Any], op: Any,
                      plan: tuple[int, int, list[int], list[int]], bits: int, index: np.ndarray,
                      run: bool, mem: Memory) -> np.ndarray:
    """An interleaved feed's plan walks the virtual tensor `axis, element`: element `v` of the
    source for `v < n`, element `v - n` of the second tensor above (n = the element's size).
    Consecutive slices (`run`) at one base per tensor read as one strided walk when they can
    (`_read_both`, a shortcut: `visa.interp.fast.speed`)."""
    n = op.source.element.size
    check(bool(np.all(index < 2 * n)), "the read plan walks past the two interleaved tensors", op)
    if run and shortcuts.on() and np.ndim(bases[0]) == 0 and np.ndim(bases[1]) == 0:
        both = _read_both(dm, slices, (int(bases[0]), int(bases[1])), op, plan, bits, mem)
        if both is not None:
            return both
    first = index < n
    out = []
    for base, part in ((bases[0], np.where(first, index, 0)), (bases[1], np.where(first, 0, index - n))):
        row_base = (slices * dm.slice_bytes + np.asarray(base)).reshape(-1, 1, 1)
        out.append(gather(dm, row_base, part, op.source.dtype, bits, op, "the read plan"))
    return np.where(first, out[0], out[1])


@per_record
def _repeats(op: Any, target: Any) -> tuple[bool, bool]:
    """(whether the feed can deliver a `Repeated` stream, whether it reads the DM in place).
    It can when its read is a plain one: whole bytes, no second tensor, mask or switch,
    nothing padded, and packets that fill their flits; and then either a time loop has
    zero stride (the packets repeat), or the stream goes to a `trf_load`. The stream is a
    view of the DM bytes (in place, one copy fewer) when it goes to a `trf_load` (the
    program's sink, which copies it into the TRF at once) or goes to a
    `contract_outer` (which multiplies them at once): only a program's sink, a commit
    after every reader, writes the DM."""
    steps, elems, sizes, strides = read_plan(op)
    ntime = len(op.shapes[0].time)
    flit = 8 * target.constants.FLIT_BYTES // (target.bits_of(op.element_type.dtype) or 1)
    plain = ((target.bits_of(op.source.dtype) or 0) >= 8 and op.interleave is None and op.mask is None
             and op.switch is None and op.lift is None and op.flits_per_packet * flit == elems
             and not padded(op.input_type.time, op.input_type.packet)
             and not padded(op.output_type.time, op.output_type.packet))
    in_place = op.dest.kind.op_class.FEED_PACKING is not None  # TRF_LOAD, CONTRACT_OUTER: they read the flits
    return plain and (in_place or any(n > 1 and s == 0 for n, s in zip(sizes[:ntime], strides[:ntime]))), in_place


def _repeated(op: Any, rows: Rows, mem: Memory, src: DmTensor, in_place: bool) -> Repeated | None:
    """The feed's stream as its distinct packets and a broadcast view (`_repeats`), when the
    rows of each (chip, cluster) are its slices in order, consecutive or a `slice_grid` of
    them; None otherwise (and when a read is not one strided walk), which leaves the feed to
    write every packet. With one (chip, cluster) and `in_place` the packets are a view of
    the DM bytes; with several each one's are copied into their rows of one array. A read of
    a lazy broadcast (`Dm.lazy_view`) writes its distinct rows only (`sparse`) for a
    contraction or a TRF load (`in_place`), else every row."""
    groups = rows.slice_groups()
    bits, (steps, elems, sizes, strides), _ = _plan(op, mem.target)
    w, ntime = bits // 8, len(op.shapes[0].time)
    once = [1 if k < ntime and s == 0 else n for k, (n, s) in enumerate(zip(sizes, strides))]
    views: list = []
    helds: list = []
    for ((chip, cluster), sel, slices, _), grid in zip(groups, rows.slice_grids()):
        dm = mem.dm(chip, cluster)
        start = int(slices[0]) * dm.slice_bytes + src.base + op.source.offset * w
        off = start - int(slices[0]) * dm.slice_bytes
        end = off + sum((n - 1) * st * w for n, st in zip(once, strides)) + w
        lazy = dm.lazy_view(off, end, np.asarray(slices, np.int64), once, [st * w for st in strides],
                            raw_dtype(bits)) if dm.lazy else None
        if lazy is not None:   # a broadcast held lazily (`Dm.hold`): each distinct row once
            views.append(lazy)      # (the distinct rows, each slice's row among them)
            helds.append(first_equal(lazy[1]) + int(sel[0]))
            continue
        if grid is None:   # (consecutive, every n-th, runs n apart: a grid)
            return None
        walk_ = flat_walk(dm, start, [*(n for n, _ in grid), *once],
                          [*(k * dm.slice_bytes for _, k in grid), *(st * w for st in strides)], w)
        v = None if walk_ is None else view(walk_, [*(n for n, _ in grid), *once], raw_dtype(bits))
        if v is None:
            return None
        views.append(v.reshape(len(slices), *once) if len(grid) > 1 else v)  # runs of slices: one rows axis
        if in_place:
            found = mem.copies.held((chip, cluster), off, end, np.asarray(slices, np.int64))
            helds.append(None if found is None else found + int(sel[0]))   # the group's rows from sel[0] on
        else:
            helds.append(None)
    lazies = any(isinstance(v, tuple) for v in views)
    held = None if (not in_place and not lazies) or any(h is None for h in helds) else np.concatenate(helds)
    # only `held`'s rows: a TRF load and a contraction (float: its exact kernel; integer: its
    # distinct pairs, `visa.interp.contract._pair_sum`) read each row's held row
    sparse = lazies and held is not None and not op.conversions and in_place
    if in_place and len(views) == 1 and not lazies:
        distinct = views[0]
    else:
        distinct = mem.scratch((rows.count, *once), raw_dtype(bits))
        gather_groups(distinct, groups, views, helds, sparse)
    values = convert_chain(from_raw(distinct, op.source.dtype, bits), op, mem.target)
    flit = 8 * mem.target.constants.FLIT_BYTES // mem.target.bits_of(op.element_type.dtype)
    packets = values.reshape(rows.count, *once[:ntime], op.flits_per_packet, flit)
    _check_collect(op, steps, flit)
    full = np.broadcast_to(packets, (rows.count, *sizes[:ntime], op.flits_per_packet, flit))
    return Repeated(full, (rows.count, steps * op.flits_per_packet, flit), held, sparse)


def _check_collect(op: Any, steps: int, flit: int) -> None:
    """Refuse a collect whose flit count or stream shape disagrees with the record."""
    nflits = op.flits_per_packet
    check(steps * nflits == op.beats * op.collect_flits.value,
          f"{steps} packets x {nflits} flits != beats {op.beats} x {op.collect_flits}", op)
    out_shape = (op.output_type.time.size, op.output_type.packet.size)
    check(out_shape == (steps * nflits, flit),
          f"collect gives {(steps * nflits, flit)} flits x elements, the collect stream is {out_shape}", op)


def _read_groups(op: Any, rows: Rows, mem: Memory, tensors: tuple[DmTensor, DmTensor | None],
                 how: tuple[Any, int, Any], dtype: np.dtype) -> np.ndarray:
    """The feed's read, (chip, cluster) group by group: `Rows` orders its rows by (chip,
    cluster, slice), so each group's rows are consecutive and its read goes into them (or is
    the stream, when one group holds every row). An interleaved second view reads
    `rhs_offset - offset` elements further into its tensor than the first."""
    (src, second), (plan, bits, index), target = tensors, how, mem.target
    apart = 0 if op.rhs_offset is None else (op.rhs_offset - op.source.offset) * bits // 8
    lifted, groups = _lift_bytes(op, target), rows.slice_groups()
    values = mem.scratch((rows.count, plan[0], plan[1]), dtype) if len(groups) != 1 else None
    for ((chip, cluster), sel, slices, run), grid in zip(groups, rows.slice_grids()):
        extra = 0 if lifted is None else lifted[np.ravel_multi_index((rows.chip[sel], rows.cluster[sel], slices),
                                                                     rows.shape)]
        into = None if values is None else values[int(sel[0]):int(sel[0]) + len(sel)]
        if second is None:
            part = _read(mem.dm(chip, cluster), slices, src.base + extra, op, plan, bits, index, grid, mem, into)
        else:
            part = _read_interleaved(mem.dm(chip, cluster), slices, (src.base + extra, second.base + extra + apart),
                                     op, plan, bits, index, run, mem)
        if into is None:
            values = part.astype(dtype, copy=False)
        elif part is not into:
            into[...] = part
    return values


def feed_rows(op: Any, rows: Rows, mem: Memory, env: dict[int, Any]) -> tuple[np.ndarray | Repeated | Front, Rows]:
    """The collected stream (`Repeated` when `_repeats` or made of a broadcast's distinct rows
    (fast/transpose_rows.py), `Front` when its packets fill at most the front four lanes of
    one 8-cell flit) and the rows it lives on (those of a switch's out_slice)."""
    target = mem.target
    src = env.get(op.source.tensor.id)
    if not isinstance(src, DmTensor):  # (the message formatted only when it is raised)
        check(False, f"source {op.source.tensor} is not a DM tensor", op)
    sd = op.source.dtype
    bits, plan, index = _plan(op, target)
    steps, elems = plan[0], plan[1]
    repeats, in_place = _repeats(op, target)
    if repeats and shortcuts.on():   # a Repeated stream: a shortcut (visa.interp.fast.speed)
        held = _repeated(op, rows, mem, src, in_place)
        if held is not None:
            return held, rows
    distinct = (lazy := shortcuts.shortcut("feed_lazy_rows")) and lazy(op, rows, mem, src.base, plan, bits)
    second = None if op.interleave is None else env.get(op.interleave.tensor.id)
    check(op.interleave is None or isinstance(second, DmTensor), "the interleaved tensor is not a DM tensor", op)
    values = distinct[0] if distinct else _read_groups(op, rows, mem, (src, second), (plan, bits, index), value_dtype(sd))
    fin = op.fetched_type()
    zero_pad(values, fin.time, fin.packet)
    if op.mask is not None:  # the Fetch Adapter's mask (ir.fetch_mask)
        zero_padding(values, _mask_pad(op))
    values = convert_chain(values, op, target)
    flit = 8 * target.constants.FLIT_BYTES // target.bits_of(op.element_type.dtype)
    nflits = op.flits_per_packet
    if op.switch is not None:
        held = _switch_rows(op, values, rows, mem, nflits * flit == elems)
        if held is not None:
            return held
        values, rows = run_switch(op, values, rows)
        steps = values.shape[1]
    _check_collect(op, steps, flit)
    if nflits * flit == elems:   # the packets fill their flits: collect is a reshape
        collected = np.ascontiguousarray(values).reshape(len(values), steps * nflits, flit)
    elif nflits == 1 and flit == 8 and elems <= 4 and lanes.held() and distinct is None:  # in the front lanes
        front = np.ascontiguousarray(values)
        if elems < 4:
            front = np.zeros((rows.count, steps, 4), values.dtype)
            front[..., :elems] = values
        return Front(pad_front(front, op.output_type.time, op.output_type.packet)), rows
    else:
        collected = np.zeros((len(values), steps, nflits * flit), values.dtype)   # rows.count or the distinct
        collected[:, :, :elems] = values
        collected = collected.reshape(len(values), steps * nflits, flit)
    collected = zero_pad(collected, op.output_type.time, op.output_type.packet)
    return collected if not distinct else distinct[1](collected), rows


def _switch_rows(op: Any, values: np.ndarray, rows: Rows, mem: Memory,
                 whole: bool) -> tuple[Repeated, Rows] | None:
    """The switched, collected stream held as its distinct rows (a sparse `Repeated`: the
    other rows name the one they repeat) and its rows, when a shortcut holds the switch so
    (visa/interp/fast/switch_rows.py) and the packets fill their flits (`whole`: collect is
    a reshape); None otherwise (the switch is written out)."""
    lazy = shortcuts.shortcut("switch_rows") if whole else None
    found = None if lazy is None else lazy(op, values, rows, mem.scratch)
    if found is None:
        return None
    cells, held, alias, out_rows = found
    if padded(op.output_type.time, op.output_type.packet):   # padding zeroed after the switch: steps may differ
        alias = None
    steps = cells.shape[1]
    flit = 8 * mem.target.constants.FLIT_BYTES // mem.target.bits_of(op.element_type.dtype)
    _check_collect(op, steps, flit)
    shape = (out_rows.count, steps * op.flits_per_packet, flit)
    zero_pad(cells.reshape(shape), op.output_type.time, op.output_type.packet)
    held_ = Repeated(cells.reshape(out_rows.count, steps, op.flits_per_packet, flit), shape, held, True, alias)
    return held_, out_rows


@executes("feed_buffer")
def _feed_step(ops: list[Any], i: int, state: ProgramState) -> int:
    op = ops[i]
    if op.start is not None:  # a view tiled at a runtime start: the source offset moves by start * start_elems
        check(op.start.id in state.env, f"start {op.start} has no value", op)
        moved = checked_start(state.env[op.start.id], op.start_limit, f"{op.result} = feed_buffer") * op.start_elems
        op = attrs.evolve(op, source=attrs.evolve(op.source, offset=op.source.offset + moved),
                          rhs_offset=None if op.rhs_offset is None else op.rhs_offset + moved)   # both views move
    state.local[op.result.id], state.rows = feed_rows(op, state.rows, state.mem, state.env)
    return 1
