"""The Contraction Engine on the cpu backend (docs/machine/contraction.md).

`contract_outer` keeps both operands and the cell -> operand plan (`Outer`, lazy);
`contract_packet` returns the packet reduction still lazy (`Packed`); `contract_time`
evaluates the whole contraction at once with `backends.cpu.contract_fast` (integers as an
exact float BLAS matmul, floats as the adjacent-pair tree and the serial time sum over
contiguous blocks of products), bit for bit the semantics below; `contract_lane` is a
relayout.

The dense path, kept as the reference (`CpuOptions(fast_contract=False)` selects it, and
the fast path falls back to it whenever a structure does not fit): `Outer.products` gathers both operands
for every `(lane, out_time, out_packet)` cell, a block of time steps at a time (peak
memory stays bounded); the packet groups are summed with the adjacent-pair tree; the
reduced time positions are accumulated from +0 in stream order, one reduced step after
the other. `f32` arithmetic is `ir.contract_arith.fmul`/`fadd` (IEEE RNE, then flush-to-zero and
canonical NaN on every result). Integer sums do not depend on the order, so they are
computed exactly in int64 and wrapped to i32.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np

from ir import contract_arith as ca
from ir import convert as cv
from ir.dtypes import DType, i32
from ir.errors import InternalError
from ir.mapping.nodes import Mapping
from ir.ops import ContractLane, ContractOuter, ContractPacket, ContractTime, LaneMode
from ir.rules.contract_geometry import outer_geometry, packet_depth
from ir.rules.time_reduction import time_reduction
from ir.types import CStreamType, StreamType, TrfType

from backends.cpu import adapters, contract_fast, layout, lazy_rows, moves
from backends.cpu import compact as compact_values
from backends.cpu.compact import Compact
from backends.cpu.lru import ByObject
from backends.cpu.contract_plan import OuterPlan, _outer_plan
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.options import DEFAULT, CpuOptions
from backends.cpu.handlers import handles

__all__ = ["Outer", "Packed", "contract_outer", "contract_packet", "contract_time", "contract_lane"]

CHUNK_CELLS = 1 << 18
"""Products evaluated at once by `contract_packet`: 1 MiB of f32 per temporary, small
enough to stay in cache through the dozen passes of a multiply and its adder tree."""


class Outer:
    """The products X of one `contract_outer`, over the live spatial rows, made on demand.

    `stream_rows` (rows, T*P) and `trf_rows` (rows, Lane*Element) hold the operands as
    stored (bit patterns for floats, host values for integers); `stream` (T*P, rows) and
    `trf` (Lane*Element, rows) are them widened (float32 or int32) with the spatial rows
    innermost, so every gather of the dense path copies whole rows. `key` is the argument
    tuple of `_outer_plan` (it also keys the fast path's plans)."""

    def __init__(self, stream_rows: np.ndarray | LazyRows, trf_rows: np.ndarray | LazyRows,
                 stream_dtype: DType, trf_dtype: DType, plan: OuterPlan, type: CStreamType, key: tuple) -> None:
        self.stream_src, self.trf_src = stream_rows, trf_rows  # (rows, cells), or a move not copied yet
        self.stream_dtype, self.trf_dtype = stream_dtype, trf_dtype
        self.plan, self.type, self.key = plan, type, key

    @property
    def is_float(self) -> bool:
        return self.type.acc.is_float

    @property
    def rows(self) -> int:
        src = self.stream_src
        return src.n_rows if isinstance(src, LazyRows) else src.shape[0]

    @functools.cached_property
    def stream_rows(self) -> np.ndarray:
        return _copied(self.stream_src)

    @functools.cached_property
    def trf_rows(self) -> np.ndarray:
        return _copied(self.trf_src)

    @functools.cached_property
    def tidx(self) -> np.ndarray:
        """The plan's TRF cell of every (lane, out_time, out_packet) cell, made once per run
        by the paths that read it per cell (the plan holds it per digit)."""
        return self.plan.tidx

    @functools.cached_property
    def sidx(self) -> np.ndarray:
        """The plan's stream cell of every (out_time, out_packet) cell, made once per run."""
        return self.plan.sidx

    @functools.cached_property
    def live(self) -> np.ndarray | None:
        return self.plan.live

    @functools.cached_property
    def stream(self) -> np.ndarray:
        return _widened(self.stream_rows, self.stream_dtype)

    @functools.cached_property
    def trf(self) -> np.ndarray:
        return _widened(self.trf_rows, self.trf_dtype)

    def products(self, lo: int, hi: int) -> np.ndarray:
        """X[packet, lane, lo:hi, rows]; padding cells are +0 (they contribute nothing)."""
        a = self.stream[self.sidx[lo:hi].T][:, None]  # (Q, 1, steps, rows)
        b = self.trf[self.tidx[:, lo:hi].transpose(2, 0, 1)]  # (Q, L, steps, rows)
        x = ca.fmul(a, b) if self.is_float else a * b
        if self.live is not None:
            live = self.live[:, lo:hi].transpose(2, 0, 1)[..., None]
            x = np.where(live, x, np.zeros((), x.dtype))
        return x


@attrs.frozen
class Packed:
    """The result of `contract_packet`, not evaluated yet: `contract_time` computes the
    packet tree and the time sum together (`depth` d of docs/machine/contraction.md, `n2` columns)."""

    outer: Outer
    depth: int
    n2: int
    type: CStreamType


def _rows2d(buf: np.ndarray, t: StreamType | TrfType) -> np.ndarray:
    """The per-slice operand as stored, (rows, cells): `layout.rows_view`, a view when the
    live spatial rows are evenly spaced."""
    rows = layout.rows_view(buf, t)
    return rows.reshape(len(rows), math.prod(rows.shape[1:]))


def _copied(src: np.ndarray | LazyRows) -> np.ndarray:
    """An operand as stored, (rows, cells), a `LazyRows` copied out."""
    if isinstance(src, LazyRows):
        return lazy_rows.materialize(src).reshape(src.n_rows, -1)
    return src


def _operand_rows(buf: np.ndarray | LazyRows, t: StreamType | TrfType) -> np.ndarray | LazyRows:
    """`_rows2d`, a `LazyRows` kept lazy: its live rows picked (a slice of them when evenly
    spaced)."""
    if not isinstance(buf, LazyRows):
        return _rows2d(buf, t)
    buf = lazy_rows.filled(buf)  # padding cells held as none (a turned stream): its rows copied out
    live = layout.live_rows(t)
    if len(live) == buf.n_rows:
        return buf
    even = layout.even_rows(t)
    if even is not None:
        return buf.rows(even)
    # any live rows: the map picks them (a DMA's copies), or their base rows are copied (a
    # row's input cells: never a buffer of every spatial row written, issue 61 first-run memory)
    return buf.rows(live)


def _widened(rows2d: np.ndarray, dtype: DType) -> np.ndarray:
    """The widened per-slice operand as (cells, rows)."""
    return np.ascontiguousarray(adapters.widen(rows2d, dtype).T)


@handles(ContractOuter, lazy=True)  # the contraction reads its operands in place
def contract_outer(op: ContractOuter, stream: np.ndarray, trf: np.ndarray) -> Outer:
    """docs/machine/contraction.md: widen both operands; X = widen(xs) * widen(xw), evaluated lazily."""
    s_t: StreamType = op.input.type
    w_t: TrfType = op.trf.type
    key = _outer_key(op)
    plan = _outer_plan(*key)
    return Outer(_operand_rows(stream, s_t), _operand_rows(trf, w_t), s_t.dtype, w_t.dtype, plan,
                 op.result.type, key)


_KEYS: ByObject[tuple] = ByObject()


def _outer_key(op: ContractOuter) -> tuple:
    """The `_outer_plan` arguments of `op`, found once per op object (a kept trace runs
    its ops again; the geometry is a pure function of the op)."""
    found = _KEYS.get(op)
    if found is not None:
        return found
    s_t, w_t = op.input.type, op.trf.type
    geo = outer_geometry(s_t, w_t, op.time, op.packet)
    key = (s_t.time.size, s_t.packet.size, geo.tiling, geo.pack, geo.flit_elems,
           w_t.lane, w_t.element, op.time, op.packet)
    return _KEYS.put(op, key)


@handles(ContractPacket, options=True)
def contract_packet(op: ContractPacket, outer: Outer, options: CpuOptions = DEFAULT) -> np.ndarray | Packed:
    """docs/machine/contraction.md: Y[..., j] = tree(X[..., j*g:(j+1)*g]) for j < size(P) / g, zero for
    the padding columns up to size(out_packet)."""
    t_in: CStreamType = op.input.type
    d = packet_depth(t_in.packet, op.packet)
    if d is None:
        raise InternalError(f"contract_packet: no tree depth reduces `{t_in.packet}` to `{op.packet}`")
    if options.fast_contract or (options.numerics == "reference" and outer.is_float):
        return Packed(outer, d, op.packet.size, op.result.type)
    return layout.from_rows(_packet_dense(outer, d, op.packet.size), op.result.type)


def _packet_dense(outer: Outer, d: int, n2: int) -> np.ndarray:
    """The dense packet reduction: Y as (rows, lane, T, n2)."""
    t_in = outer.type
    g = 2 ** d
    cols = min(n2, t_in.packet.size // g)
    rows, lanes, steps = outer.rows, t_in.lane.size, t_in.time.size
    y = np.zeros((rows, lanes, steps, n2), np.float32 if outer.is_float else np.int32)
    block = max(1, CHUNK_CELLS // max(1, rows * lanes * t_in.packet.size))
    for lo in range(0, steps, block):
        hi = min(steps, lo + block)
        x = outer.products(lo, hi)[:cols * g].reshape(cols, g, lanes, hi - lo, rows)
        if outer.is_float:
            part = ca.tree_sum_f32(x, axis=1)
        else:
            part = cv.wrap(x.sum(axis=1, dtype=np.int64), i32)
        y[:, :, lo:hi, :cols] = part.transpose(3, 1, 2, 0)
    return y


@functools.lru_cache(maxsize=64)
def _time_order(pre: Mapping, out: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """(order, skip): order[r, s] is the pre-reduce time step added into slot s at reduced
    step r (stream order within every slot); skip[r, s] is True where that step is padding."""
    red = time_reduction(pre, out)
    o = np.arange(pre.size, dtype=np.int64)
    slot = np.zeros_like(o)
    rank = np.zeros_like(o)
    for lp in red.loops:
        digit = (o // lp.stride_t) % lp.size
        if lp.keep:
            slot += digit * lp.stride_ot
        else:
            rank = rank * lp.size + digit
    n_red = math.prod(lp.size for lp in red.reduced)
    if n_red * out.size != pre.size:
        raise InternalError(f"contract_time: `{out}` does not tile the reduction of `{pre}`")
    order = np.full((n_red, out.size), -1, np.int64)
    order[rank, slot] = o
    if (order < 0).any():
        raise InternalError(f"contract_time: some slot of `{out}` receives no time step of `{pre}`")
    skip = moves.logical_pad((pre,))[order]
    return order, skip


def serial_fold(packed: Packed, order: np.ndarray, skip: np.ndarray, result: CStreamType) -> np.ndarray:
    """The `contract_time` result of a float contraction folded serially per output cell, in
    furiosa-opt's host order (`CpuOptions(numerics="reference")`).

    The chip sums a float contraction in two steps (docs/machine/contraction.md): an
    adjacent-pair tree over each packet group, then a serial sum over the reduced time steps,
    with flush-to-zero and a canonical NaN on every result. furiosa-opt's cpu backend instead
    folds every output cell in one serial pass: starting from +0.0, it adds each product in
    the order of the contracted factors as they stand in the pre-reduce mapping (the reduced
    time factors outer, the reduced packet factors inner), with plain IEEE binary32
    arithmetic: products and sums rounded to nearest, subnormal products and sums kept, the
    host's NaN. Its operands are widened as the chip widens them (`Cast<f32> for bf16`,
    furiosa-opt-std/src/cast.rs, calls float/bf16.rs `bf16_to_f32`): a bf16 subnormal reads
    as a zero of its sign and a NaN as 0x7FC00000 (`adapters.widen`). A test ported from
    furiosa-opt compares against that fold, so this reproduces it bit for bit. Integer
    sums do not depend on the order; they keep the exact path.

    `packed` is the lazy `contract_packet` result (`Packed`), `order` / `skip` the time order
    of `contract_time` (`order[r, s]`: the pre-reduce time step added into slot `s` at reduced
    step `r`; `skip`: that step is padding)."""
    outer = packed.outer
    sidx, tidx, live_cells = outer.sidx, outer.tidx, outer.live
    group = 2 ** packed.depth
    t_in = outer.type
    cols = min(packed.n2, t_in.packet.size // group)
    stream = adapters.widen(outer.stream_rows, outer.stream_dtype)  # (rows, T * P)
    trf = adapters.widen(outer.trf_rows, outer.trf_dtype)  # (rows, Lane * Element)
    n_red, slots = order.shape
    acc = np.zeros((outer.rows, t_in.lane.size, slots, packed.n2), np.float32)
    with np.errstate(all="ignore"):  # overflow and invalid results are values here, as on the host
        for r in range(n_red):
            steps, keep = order[r], ~skip[r]
            for q in range(cols * group):
                a = stream[:, sidx[steps, q]]  # (rows, slots)
                b = trf[:, tidx[:, steps, q]]  # (rows, lane, slots)
                x = a[:, None, :] * b
                live = keep[None, :] if live_cells is None else keep[None, :] & live_cells[:, steps, q]
                column = acc[..., q // group]
                column[...] = np.where(live[None], column + x, column)
    return layout.from_rows(acc, result)


@handles(ContractTime, options=True, makes_compact=True, memo=True)  # widened operands kept
def contract_time(op: ContractTime, y: np.ndarray | Packed, options: CpuOptions = DEFAULT,
                  compact: bool = False) -> np.ndarray | Compact:
    """docs/machine/contraction.md: acc = +0; acc ⊕= Y[o] for every live o in stream order.
    `compact`: the result may hold its live rows only (backends/cpu/compact.py)."""
    t_in: CStreamType = op.input.type
    if isinstance(y, Packed) and options.numerics == "reference" and y.outer.is_float:
        order, skip = _time_order(t_in.time, op.time)
        return serial_fold(y, order, skip, op.result.type)
    if isinstance(y, Packed):
        acc = contract_fast.contract(y, t_in.time, op.time, options, op.result.type, fresh=compact and options.fast_moves)
        if acc is not None:
            return acc
        y = layout.from_rows(_packet_dense(y.outer, y.depth, y.n2), t_in)
    order, skip = _time_order(t_in.time, op.time)
    rows = layout.rows_view(y, t_in)  # (rows, lane, T, P)
    if y.dtype != np.float32:
        picked = rows[:, :, order, :]  # (rows, lane, reduced, slots, P)
        picked = np.where(skip[:, :, None], 0, picked.astype(np.int64))
        return layout.from_rows(cv.wrap(picked.sum(axis=2), i32), op.result.type)
    acc = np.zeros((*rows.shape[:2], order.shape[1], rows.shape[3]), np.float32)
    for r in range(order.shape[0]):
        added = ca.fadd(acc, rows[:, :, order[r], :])
        acc = np.where(skip[r][:, None], acc, added) if skip[r].any() else added
    return layout.from_rows(acc, op.result.type)


def _lane_in_place(op: ContractLane, acc: np.ndarray) -> np.ndarray | None:
    """INTERLEAVED with as many lanes as the bus carries, on an accumulator stored lane
    innermost (backends/cpu/contract_fast.py lays integer results out so): the result is
    that memory as it is, a view; None otherwise."""
    lanes, steps, cols = acc.shape[-3:]
    shape = layout.shape_of(op.result.type)
    if op.mode is not LaneMode.INTERLEAVED or op.packet.size != lanes or shape != (*acc.shape[:-3], steps * cols, lanes):
        return None
    cells = np.moveaxis(acc, -3, -1)
    if not cells.flags.c_contiguous:
        return None
    out = cells.reshape(shape)
    return out.view(np.uint32) if out.dtype == np.float32 else out


def _lane_live(op: ContractLane, acc: Compact) -> Compact | None:
    """`contract_lane` INTERLEAVED of an accumulator of live rows only, (rows, L, T, P), as
    those rows of the result: a view when the lanes fill the bus and are stored innermost
    (backends/cpu/contract_fast.py stores them so), else written once; None for another
    mode or other rows."""
    t_in: CStreamType = op.input.type
    a = acc.base
    rows, lanes, steps, cols = a.shape
    bus = op.packet.size
    if op.mode is not LaneMode.INTERLEAVED or steps * cols != op.time.size or bus < lanes \
            or layout.spatial_levels(t_in) != layout.spatial_levels(op.result.type):
        return None
    cells = np.moveaxis(a, 1, -1)  # (rows, T, P, L)
    if bus == lanes and cells.flags.c_contiguous:
        out = cells.reshape(rows, steps * cols, bus)
    else:
        out = np.empty((rows, steps * cols, bus), a.dtype)
        out[..., lanes:] = 0
        out.reshape(rows, steps, cols, bus)[..., :lanes] = cells
    return compact_values.make(out.view(np.uint32) if out.dtype == np.float32 else out, op.result.type)


@handles(ContractLane, compact=True)
def contract_lane(op: ContractLane, acc: np.ndarray | Compact) -> np.ndarray | Compact:
    """docs/machine/contraction.md: move Lane into the stream (INTERLEAVED: one column of every lane
    per cycle; SEQUENTIAL: one lane at a time, eight columns per cycle); no value changes. An
    accumulator of live rows only (backends/cpu/compact.py) gives the result's live rows."""
    t_in: CStreamType = op.input.type
    if isinstance(acc, Compact):
        live = _lane_live(op, acc)
        if live is not None:
            return live
        acc = acc.full()
    moved = _lane_in_place(op, acc)
    if moved is not None:
        return moved
    a = layout.rows_view(acc, t_in)  # (rows, L, T, P)
    rows, lanes, steps, cols = a.shape
    bus = op.packet.size
    if op.mode is LaneMode.INTERLEAVED and steps * cols == op.time.size and bus >= lanes:
        full, live = layout.new_rows(op.result.type, (steps * cols, bus), a.dtype)
        cells = live.reshape(rows, steps, cols, bus)  # written in place: one pass, no zeroed copy
        cells[..., lanes:] = 0
        cells[..., :lanes] = a.transpose(0, 2, 3, 1)
        if live is full:
            full = layout.from_rows(live, op.result.type)
        return full.view(np.uint32) if a.dtype == np.float32 else full
    if op.mode is LaneMode.INTERLEAVED:
        z = np.zeros((rows, steps * cols, bus), a.dtype)
        z[:, :, :lanes] = a.transpose(0, 2, 3, 1).reshape(rows, steps * cols, lanes)
    else:
        hi = -(-cols // bus)
        padded = np.zeros((rows, lanes, steps, hi * bus), a.dtype)
        padded[..., :cols] = a
        z = padded.reshape(rows, lanes, steps, hi, bus).transpose(0, 2, 1, 3, 4)
        z = z.reshape(rows, steps * lanes * hi, bus)
    if z.shape[1] != op.time.size:
        raise InternalError(f"contract_lane: {z.shape[1]} output cycles for out_time `{op.time}`")
    if a.dtype == np.float32:
        z = z.view(np.uint32)
    return layout.from_rows(np.ascontiguousarray(z), op.result.type)
