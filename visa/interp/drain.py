"""The back half of a TU program: `lane_fold`, `cast_op` and the `commit` sink (docs/machine/contraction.md).

- `lane_fold` drains the accumulator into 8-wide packets: `INTERLEAVED` emits column `j`
  of slot `s` as cycle `s * cols + j` with lane `l` at packet position `l`; `SEQUENTIAL`
  emits slot `s`, lane `l`, eight columns per cycle.
- `cast_op` narrows the first `valid_elems` cells of every flit (docs/numerics.md) into a
  packet of `flit_elems(out_type)` cells, zero past them.
- `commit` keeps the first `valid_bytes` of every packet, converts them (docs/numerics.md)
  and writes element `p` of time step `t` to destination element
  `sum(t_i * time_stride_i) + sum(p_j * packet_stride_j)` at byte
  `slice * DM_SLICE_BYTES + dest + element * bits / 8`; the new tensor's bytes (at its
  visa/visa.lark address, where readers look for it) start zero.
- a packed `commit` (`pack=`) is the Commit Adapter's valid-count packing in the sub context
  (docs/machine/valid-count.md): every time step t of every slice s keeps its first
  `valid_size(s, t)` cells, counted by the record's time filters and packet clipper; the kept
  cells are written back to back, in stream order, from `dest` (a slice that keeps fewer
  leaves the rest of its element zero). The tensor's bytes start zero.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ir import convert as cv
from ir.runtime_types import checked_start
from ir.valid_count import packed_rows, slice_counts
from tu_ops.enums import CommitConversion, LaneMode
from tu_ops.target import Target
from tu_ops.valid_count import pack_to_vcg
from visa.interp.dma import DmTensor, live_parts, tensor_bytes, walk
from visa.interp.errors import check
from visa.interp.fast.lanes import Front
from visa.interp.shortcuts import Held, per_record, shortcut
from visa.interp.memory import Memory, scatter
from visa.interp.rows import Rows
from visa.interp.steps import ProgramState, runs
from visa.interp.strided import flat_walk, injective, runs_as_items, view
from visa.interp.values import padded, pads_from, raw_dtype, to_raw, value_dtype, zero_cells, zero_pad
from ir.words import a_an

__all__ = ["run_lane_fold", "run_cast", "run_commit"]


def _padded(op: Any, values: np.ndarray) -> np.ndarray:
    """Zero the positions the record's output stream type marks as padding."""
    shape = (op.output_type.time.size, op.output_type.packet.size)
    check(shape == values.shape[1:], f"the record produces {values.shape[1:]} steps x cells, its output "
          f"stream is {shape}", op)
    return zero_pad(values, op.output_type.time, op.output_type.packet)


def run_lane_fold(op: Any, acc: np.ndarray, mem: Memory) -> np.ndarray:
    """(rows, lanes, slots, cols) accumulator -> (rows, cycles, LANE_BUS) stream values."""
    bus = mem.target.constants.LANE_BUS
    rows, lanes, slots, cols = acc.shape
    check(op.lanes == lanes and op.cols == cols, f"lanes {op.lanes} x cols {op.cols}, the accumulator holds "
          f"{lanes} x {cols}", op)
    if op.mode is LaneMode.INTERLEAVED:
        check(lanes <= bus, f"{lanes} lanes do not fit {a_an(bus)}-cell packet", op)
        drained = acc.transpose(0, 2, 3, 1)
        if lanes == bus and drained.flags.c_contiguous and not padded(op.output_type.time, op.output_type.packet):
            out = drained           # held lanes innermost already: the packets are the accumulator
        else:
            out = mem.scratch((rows, slots, cols, bus), acc.dtype)
            out[..., lanes:] = 0        # the unused lanes zero
            for lane in range(lanes):   # lane by lane: long runs of each, not lanes-long inner loops
                out[..., lane] = acc[:, lane]
    else:
        hi = -(-cols // bus)
        wide = mem.scratch((rows, lanes, slots, hi * bus), acc.dtype)
        wide[..., cols:] = 0
        wide[..., :cols] = acc
        drained = wide.reshape(rows, lanes, slots, hi, bus).transpose(0, 2, 1, 3, 4)
        out = mem.scratch(drained.shape, acc.dtype)
        np.copyto(out, drained)
    out = out.reshape(rows, -1, bus)
    check(out.shape[1] == op.cycles, f"the drain takes {out.shape[1]} cycles, the record says {op.cycles}", op)
    values = out.view(np.uint32) if acc.dtype == np.float32 else out.astype(np.int32, copy=False)
    return _padded(op, values)


@per_record
def _drains_whole(op: Any, bus: int) -> bool:
    """Is `op` an `INTERLEAVED` drain of `bus` lanes, its output stream one packet of them
    a cycle with nothing padded?"""
    t = op.output_type
    return (op.mode is LaneMode.INTERLEAVED and op.lanes == bus and (t.time.size, t.packet.size) == (op.cycles, bus)
            and not padded(t.time, t.packet))


def _viewed(op: Any, acc: np.ndarray, mem: Memory) -> Held | None:
    """An `INTERLEAVED` drain of every lane, nothing padded, whose packets are a transposed
    view of the accumulator `acc` (rows, lanes, slots, cols): that view held for a reader
    that takes any strides (a commit writes it into the DM in one strided copy, instead of
    `run_lane_fold` copying it lane by lane first), by the shortcut; None without it, or
    when the record is not such a drain (`run_lane_fold` runs it, and reports any fault)."""
    hold = shortcut("lane_fold_view")
    rows, lanes, slots, cols = acc.shape
    if (hold is None or acc.dtype not in (np.float32, np.int32)
            or (op.lanes, op.cols, op.cycles) != (lanes, cols, slots * cols)
            or not _drains_whole(op, mem.target.constants.LANE_BUS)):
        return None
    drained = acc.transpose(0, 2, 3, 1)
    if drained.flags.c_contiguous:   # the plain drain's packets are the accumulator already
        return None
    drained = drained.reshape(rows, -1, lanes)   # (slots and cols merge: a view)
    return hold(drained.view(np.uint32) if acc.dtype == np.float32 else drained,
                lambda: run_lane_fold(op, acc, mem))


def run_cast(op: Any, stream: np.ndarray, mem: Memory) -> np.ndarray:
    """Cast Engine: (rows, T, P) of in_type -> (rows, T, flit_elems(out_type)) of out_type."""
    src, dst = op.in_type.dtype, op.out_type.dtype
    check(stream.dtype == value_dtype(src), f"the stream does not hold {op.in_type} values", op)
    n = op.valid_elems
    bits = mem.target.bits_of(dst) or 0
    check(bits in (4, 8, 16), f"out_type {op.out_type} is not a Cast Engine result", op)
    flit = 8 * mem.target.constants.FLIT_BYTES // bits
    check(1 <= n <= min(stream.shape[-1], flit), f"valid_elems {n} of {a_an(stream.shape[-1])}-cell packet", op)
    cells = stream[..., :n].reshape(-1, n)
    out = mem.scratch((*stream.shape[:2], flit), value_dtype(dst))
    if not pads_from(op.output_type.packet, n):   # else `_padded` zeroes the tail: once is enough
        zero_cells(out, n, flit)
    rows = out.reshape(-1, flit)
    narrow = shortcut("narrow_bf16") if (src.value, dst.value) == ("f32", "bf16") else None
    if narrow is not None and narrow(cells, rows):   # visa/interp/fast/narrow_jit.py: one compiled pass
        return _padded(op, out)
    step = max(1, _CAST_BLOCK // n)   # a block of cells at a time: its temporaries stay in cache
    try:
        for lo in range(0, max(len(cells), 1), step):
            part, into = cv.convert(cells[lo:lo + step], src, dst, "cast"), rows[lo:lo + step, :n]
            if part.dtype == into.dtype and part.shape == into.shape:   # a packet's cells moved as one item
                np.copyto(*runs_as_items(into, np.ascontiguousarray(part)))
            else:
                into[...] = part
    except ValueError as e:
        check(False, str(e), op)
    return _padded(op, out)


_CAST_BLOCK = 1 << 16
"""Cells a cast converts at once (the whole of a 1 Mi-cell f32 -> bf16 stream took 2.5x as long)."""


_COMMIT = {
    CommitConversion.F32_TO_BF16: cv.narrow_bf16,
    CommitConversion.F32_TO_BF16_RELU: cv.commit_cast_relu,
}


def _converted(conversion: Any, values: np.ndarray) -> np.ndarray:
    """A commit's `conversion` of f32 bits `values` (`ir.float_bits`' rule, which both backends use)."""
    return _COMMIT[conversion](values)


@per_record
def _write_plan(op: Any, target: Any, steps: int, cells: int) -> tuple[Any, int, int, np.ndarray, int]:
    """(written dtype, bits, cells kept per packet, destination element of every (step,
    kept cell), tensor bytes) of a commit whose stream has `steps` x `cells`, its fields
    checked: what the record alone fixes, once per record."""
    d = op.input_type.dtype
    if op.conversion is not CommitConversion.NONE:
        check(d.value == "f32", f"{op.conversion} converts f32, not {d}", op)
        d = op.output_type.dtype
        check(d.value == "bf16", f"{op.conversion} writes bf16, not {d}", op)
    check(d == op.output_type.dtype, f"the commit writes {d} into {a_an(op.output_type.dtype)} tensor", op)
    bits = target.bits_of(d) or 0
    check(bits in (4, 8, 16, 32) and op.valid_bytes * 8 % bits == 0, f"valid_bytes {op.valid_bytes} of {d}", op)
    n = op.valid_bytes * 8 // bits
    check(1 <= n <= cells, f"valid_bytes {op.valid_bytes} is {n} cells of {a_an(cells)}-cell packet", op)
    check(op.write_bytes > 0 and op.valid_bytes % op.write_bytes == 0,
          f"write_bytes {op.write_bytes} does not split valid_bytes {op.valid_bytes}", op)
    tsz, psz = [e.size for e in op.write.time], [e.size for e in op.write.packet]
    check(math.prod(tsz) == steps and math.prod(psz) == n,
          f"the write plan covers {math.prod(tsz)} x {math.prod(psz)} cells, the stream has {steps} x {n}", op)
    index = (walk(0, tsz, [e.stride for e in op.write.time]).reshape(-1, 1)
             + walk(0, psz, [e.stride for e in op.write.packet]).reshape(1, -1))
    size = tensor_bytes(op.output_type, target)
    limit = -(-size // 8) * 8 - (op.offset or 0)   # a commit into a tensor: from its window on
    check(op.dest >= 0 and op.dest % 8 == 0, f"dest {op.dest} is not an 8-byte aligned DM address", op)
    if index.size:
        low, high = int(index.min()), int(index.max())
        check(low >= 0 and -(-(high + 1) * bits // 8) <= limit,
              f"the write plan reaches element {high if low >= 0 else low} of {a_an(limit)}-byte tensor", op)
    return d, bits, n, index, size


@per_record
def _fills(op: Any, target: Target, steps: int, cells: int) -> bool:
    """Does the write plan write every element of the tensor, each once (so zeroing the
    tensor's bytes before is wasted, when it writes them in every slice of it)?"""
    _, bits, _, index, size = _write_plan(op, target, steps, cells)
    if bits < 8 or size * 8 % bits or index.size != size * 8 // bits:
        return False
    return bool(np.array_equal(np.sort(index, axis=None), np.arange(index.size)))


@per_record
def _every_slice(rows: Rows, t: Any) -> bool:
    """Do the rows hold every slice, in order, of every live (chip, cluster) of DM type `t`?"""
    groups = rows.slice_groups()
    return (len(groups) == len(live_parts(t)) and {key for key, *_ in groups} == set(live_parts(t))
            and all(len(sl) == t.slice.size and run and sl[0] == 0 for _, _, sl, run in groups))


@per_record
def _row_slices(rows: Rows, t: Any) -> dict[tuple[int, int], np.ndarray]:
    """Per (chip, cluster) of the rows, which of the `t.slice.size` slices they run."""
    out = {}
    for key, _, slices, _ in rows.slice_groups():
        mask = np.zeros(t.slice.size, np.bool_)
        mask[slices] = True
        out[key] = mask
    return out


def _write_strided(op: Any, dm: Any, slices: np.ndarray, values: np.ndarray, d: Any, bits: int,
                   grid: list[tuple[int, int]]) -> bool:
    """Write the stream of `slices`, a `grid` of them in order ((count, step) per level:
    consecutive, every n-th, runs n apart), through one strided view of the DM when the
    write plan is an in-bounds affine walk touching each byte once; False leaves it to
    `scatter`, which writes (or refuses) the same bytes by index."""
    if bits < 8:
        return False
    w = bits // 8
    entries = [*op.write.time, *op.write.packet]
    sizes = [*(n for n, _ in grid), *(e.size for e in entries)]
    strides = [*(k * dm.slice_bytes for _, k in grid), *(e.stride * w for e in entries)]
    walk_ = flat_walk(dm, int(slices[0]) * dm.slice_bytes + op.dest, sizes, strides, w)
    if walk_ is None or not injective(sizes, walk_[2], w):
        return False
    target = view(walk_, sizes, raw_dtype(bits))
    if target is None:
        return False
    np.copyto(*runs_as_items(target, to_raw(values, d, bits).reshape(sizes)))   # packets as whole items
    return True


def run_packed_commit(op: Any, stream: np.ndarray, rows: Rows, mem: Memory) -> DmTensor:
    """Count, pack and write the stream `(rows, T, P)` into a new DM tensor at `dest`."""
    target = mem.target
    d = op.input_type.dtype
    check(stream.dtype == value_dtype(d) and d == op.output_type.dtype,
          f"a packed commit writes its {d} stream unconverted", op)
    bits = target.bits_of(d) or 0
    cells = op.valid_bytes * 8 // max(bits, 1)
    check(1 <= cells <= stream.shape[-1], f"valid_bytes {op.valid_bytes} of {a_an(stream.shape[-1])}-cell packet", op)
    counts = slice_counts(pack_to_vcg(op.pack), rows.slice, stream.shape[1])   # (rows, T): per row's slice id
    check(int(counts.max(initial=0)) <= cells, f"the clipper counts {int(counts.max())} cells of {a_an(cells)}-cell "
          f"trimmed packet", op)
    keep = (np.arange(stream.shape[-1])[None, None, :] < counts[:, :, None]).reshape(len(counts), -1)
    values = packed_rows(stream.reshape(len(counts), -1), keep)
    size = tensor_bytes(op.output_type, target)
    check(values.shape[1] * bits <= 8 * size, f"the packer keeps {values.shape[1]} cells for {a_an(size)}-byte "
          f"tensor", op)
    check(op.dest >= 0 and op.dest % 8 == 0, f"dest {op.dest} is not an 8-byte aligned DM address", op)
    address = mem.dm_address[op.result.id]
    mem.zero_dm(live_parts(op.output_type), op.output_type.slice.size, address, size, op)
    index = np.arange(values.shape[1], dtype=np.int64)
    for (chip, cluster), sel in rows.groups():
        base = (rows.slice[sel] * mem.dm_slice + op.dest).reshape(-1, 1)
        scatter(mem.dm(chip, cluster), base, index[None], values[sel], d, bits, op, "the packed write")
    return DmTensor(address, op.output_type)


def _commit_held(op: Any, stream: Held, rows: Rows, mem: Memory, plan: tuple[Any, int, int, int]) -> bool:
    """Commit a stream a shortcut holds as its distinct rows by holding those rows in the DM
    (visa/interp/fast/transpose_rows.py), when the commit writes every byte of its new tensor
    in each slice; False leaves the stream to be written out."""
    d, bits, n, size = plan
    hold, address, t = shortcut("commit_rows"), mem.dm_address[op.result.id], op.output_type
    if hold is None or op.into is not None or op.dest != address or not _fills(op, mem.target, *stream.shape[1:]):
        return False
    convert = _COMMIT.get(op.conversion)
    regions = hold(op, stream, rows, mem.slices, size, bits,
                   lambda v: to_raw(v[..., :n] if convert is None else _converted(op.conversion, v[..., :n]), d, bits))
    if regions is None:
        return False
    mem.zero_dm(live_parts(t), t.slice.size, address, size, op, _row_slices(rows, t),   # the other slices,
                shortcut("dm_zero_lazy"))   # held as zeros when many
    for (chip, cluster), region in regions:
        mem.dm(chip, cluster).hold(region)
    return True


def run_commit(op: Any, stream: np.ndarray | Held, rows: Rows, mem: Memory) -> DmTensor:
    """Trim, convert and write the stream into a new DM tensor at `dest` (a `Front` stream
    read on its front lanes when they hold the cells kept)."""
    if isinstance(stream, Front) and op.pack is not None:
        stream = stream.materialize()
    if op.pack is not None:  # the sub context's valid-count packing
        return run_packed_commit(op, stream, rows, mem)
    if stream.dtype != value_dtype(op.input_type.dtype):  # (the message formatted only when it is raised)
        check(False, f"the stream does not hold {op.input_type.dtype} values", op)
    shape = (stream.shape[1], stream.shape[-1])
    d, bits, n, index, size = _write_plan(op, mem.target, *shape)
    if isinstance(stream, Held) and stream.KIND == "strided":   # a drain's view of its accumulator
        stream = stream.strided()
    if isinstance(stream, Held) and stream.KIND != "front":   # a broadcast's distinct rows
        if _commit_held(op, stream, rows, mem, (d, bits, n, size)):
            return DmTensor(mem.dm_address[op.result.id], op.output_type)
        stream = stream.materialize()
    if isinstance(stream, Front):
        stream = stream.values if n <= 4 else stream.materialize()
    values = stream[..., :n]
    if op.conversion is not CommitConversion.NONE:
        values = _converted(op.conversion, values)
    address, t = mem.dm_address[op.result.id], op.output_type
    if op.into is None:  # (a commit into a tensor keeps its other cells)
        fills = op.dest == address and _fills(op, mem.target, *shape)
        if fills and _every_slice(rows, t):
            mem.overwrite_dm(live_parts(t), t.slice.size, address, size)     # every byte written below
        else:   # the slices of the rows are written whole below when the plan fills the tensor
            mem.zero_dm(live_parts(t), t.slice.size, address, size, op, _row_slices(rows, t) if fills else None)
    for ((chip, cluster), sel, slices, _), grid in zip(rows.slice_groups(), rows.slice_grids()):
        dm = mem.dm(chip, cluster)
        part = values if len(sel) == len(values) else values[sel]   # sel: increasing row numbers
        if grid is not None and _write_strided(op, dm, slices, part, d, bits, grid):
            continue
        base = (slices * mem.dm_slice + op.dest).reshape(-1, 1, 1)
        scatter(dm, base, index[None], part, d, bits, op, "the write plan")
    return DmTensor(address, op.output_type)


@runs("lane_fold")
def _lane_fold_step(op: Any, state: ProgramState) -> Any:
    acc = state.input(op.input, op)
    viewed = _viewed(op, acc, state.mem)
    return viewed if viewed is not None else run_lane_fold(op, acc, state.mem)


@runs("cast_op")
def _cast_step(op: Any, state: ProgramState) -> Any:
    return run_cast(op, state.input(op.input, op), state.mem)


@runs("commit", env=True)
def _commit_step(op: Any, state: ProgramState) -> Any:
    if op.start is not None:   # a window at a runtime start: its dest and offset move by the start's bytes
        check(op.start.id in state.env, f"start {op.start} has no value", op)
        moved = checked_start(state.env[op.start.id], op.start_limit, f"{op.result} = commit") * op.start_bytes
        op = attrs.evolve(op, dest=op.dest + moved, offset=op.offset + moved)
    plain = op.pack is None
    return run_commit(op, state.input(op.input, op, repeated=plain, front=plain, strided=plain), state.rows, state.mem)
