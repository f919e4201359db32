"""The Contraction Engine on the cpu backend (pipeline.md 9.1-9.5).

`contract_outer` gathers both operands for every `(lane, out_time, out_packet)` cell and
returns the product lazily (`Outer`); `contract_packet` evaluates it a block of time
steps at a time (peak memory stays bounded) and sums each packet group with the
adjacent-pair tree; `contract_time` accumulates the reduced time positions from +0 in
stream order, one reduced step after the other; `contract_lane` is a relayout.
`f32` arithmetic is `ir.convert.fmul`/`fadd` (IEEE RNE, then flush-to-zero and canonical
NaN on every result). Integer sums do not depend on the order, so they are computed
exactly in int64 and wrapped to i32.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np

from ir import convert as cv
from ir.dtypes import i32
from ir.errors import InternalError
from ir.mapping import ops as mops
from ir.mapping.nodes import Mapping, pair_all
from ir.ops import ContractLane, ContractOuter, ContractPacket, ContractTime, LaneMode
from ir.rules.contract_geometry import outer_geometry, packet_depth, time_reduction
from ir.types import CStreamType, StreamType, TrfType

from backends.cpu import adapters, layout, moves

__all__ = ["Outer", "contract_outer", "contract_packet", "contract_time", "contract_lane"]

CHUNK_CELLS = 1 << 18
"""Products evaluated at once by `contract_packet`: 1 MiB of f32 per temporary, small
enough to stay in cache through the dozen passes of a multiply and its adder tree."""


@attrs.frozen
class OuterPlan:
    """Where every cell of `[Lane, out_time, out_packet]` reads its operands: `sidx`
    (out_time, out_packet) into the per-slice stream `(T, P)`, `tidx` (lane, out_time,
    out_packet) into the per-slice TRF `(Lane, Element)`, `live` False on padding."""

    sidx: np.ndarray
    tidx: np.ndarray
    live: np.ndarray | None


@functools.lru_cache(maxsize=64)
def _outer_plan(t_size: int, p_size: int, tiling: int, pack: int, flit: int,
                lane: Mapping, element: Mapping, out_time: Mapping, out_packet: Mapping) -> OuterPlan:
    o = np.arange(out_time.size, dtype=np.int64)[:, None]
    q = np.arange(out_packet.size, dtype=np.int64)[None, :]
    t = (o // tiling) * pack + q // flit  # pipeline.md 9.1: the stream time step
    if t.max() >= t_size or flit > p_size:
        raise InternalError("contract_outer: the stream adapter reads past the stream")
    sidx = t * p_size + q % flit
    trf_levels, pre_levels = (lane, element), (lane, out_time, out_packet)
    space = moves.key_space(mops.frag(pair_all(list(trf_levels))))
    plan = moves.match_keys(space, trf_levels, pre_levels, "contract_outer")
    shape = (lane.size, out_time.size, out_packet.size)
    live = None if plan.live is None else plan.live.reshape(shape)
    return OuterPlan(sidx, plan.index.reshape(shape), live)


@attrs.frozen
class Outer:
    """The products X of one `contract_outer`, over the live spatial rows, made on demand.

    `stream` (T*P, rows) and `trf` (Lane*Element, rows) hold the widened operands (float32
    or int32) with the spatial rows innermost, so every gather copies whole rows."""

    stream: np.ndarray
    trf: np.ndarray
    plan: OuterPlan
    type: CStreamType

    @property
    def is_float(self) -> bool:
        return self.type.acc.is_float

    @property
    def rows(self) -> int:
        return self.stream.shape[1]

    def products(self, lo: int, hi: int) -> np.ndarray:
        """X[packet, lane, lo:hi, rows]; padding cells are +0 (they contribute nothing)."""
        a = self.stream[self.plan.sidx[lo:hi].T][:, None]  # (Q, 1, steps, rows)
        b = self.trf[self.plan.tidx[:, lo:hi].transpose(2, 0, 1)]  # (Q, L, steps, rows)
        x = cv.fmul(a, b) if self.is_float else a * b
        if self.plan.live is not None:
            live = self.plan.live[:, lo:hi].transpose(2, 0, 1)[..., None]
            x = np.where(live, x, np.zeros((), x.dtype))
        return x


def _operand(buf: np.ndarray, t: StreamType | TrfType) -> np.ndarray:
    """The widened per-slice operand as (cells, rows)."""
    rows = layout.rows_view(buf, t)
    return np.ascontiguousarray(adapters.widen(rows.reshape(len(rows), -1), t.dtype).T)


def contract_outer(op: ContractOuter, stream: np.ndarray, trf: np.ndarray) -> Outer:
    """pipeline.md 9.1: widen both operands; X = widen(xs) * widen(xw), evaluated lazily."""
    s_t: StreamType = op.input.type
    w_t: TrfType = op.trf.type
    geo = outer_geometry(s_t, w_t, op.time, op.packet)
    plan = _outer_plan(s_t.time.size, s_t.packet.size, geo.tiling, geo.pack, geo.flit_elems,
                       w_t.lane, w_t.element, op.time, op.packet)
    return Outer(_operand(stream, s_t), _operand(trf, w_t), plan, op.result.type)


def contract_packet(op: ContractPacket, outer: Outer) -> np.ndarray:
    """pipeline.md 9.2: Y[..., j] = tree(X[..., j*g:(j+1)*g]) for j < size(P) / g, zero for
    the padding columns up to size(out_packet)."""
    t_in: CStreamType = op.input.type
    d = packet_depth(t_in.packet, op.packet)
    if d is None:
        raise InternalError(f"contract_packet: no tree depth reduces `{t_in.packet}` to `{op.packet}`")
    g, n2 = 2 ** d, op.packet.size
    cols = min(n2, t_in.packet.size // g)
    rows, lanes, steps = outer.rows, t_in.lane.size, t_in.time.size
    y = np.zeros((rows, lanes, steps, n2), np.float32 if outer.is_float else np.int32)
    block = max(1, CHUNK_CELLS // max(1, rows * lanes * t_in.packet.size))
    for lo in range(0, steps, block):
        hi = min(steps, lo + block)
        x = outer.products(lo, hi)[:cols * g].reshape(cols, g, lanes, hi - lo, rows)
        if outer.is_float:
            part = cv.tree_sum_f32(x, axis=1)
        else:
            part = cv.wrap(x.sum(axis=1, dtype=np.int64), i32)
        y[:, :, lo:hi, :cols] = part.transpose(3, 1, 2, 0)
    return layout.from_rows(y, op.result.type)


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


def contract_time(op: ContractTime, y: np.ndarray) -> np.ndarray:
    """pipeline.md 9.3: acc = +0; acc ⊕= Y[o] for every live o in stream order."""
    t_in: CStreamType = op.input.type
    order, skip = _time_order(t_in.time, op.time)
    rows = layout.rows_view(y, t_in)  # (rows, lane, T, P)
    if y.dtype != np.float32:
        picked = rows[:, :, order, :]  # (rows, lane, reduced, slots, P)
        picked = np.where(skip[:, :, None], 0, picked.astype(np.int64))
        return layout.from_rows(cv.wrap(picked.sum(axis=2), i32), op.result.type)
    acc = np.zeros((*rows.shape[:2], order.shape[1], rows.shape[3]), np.float32)
    for r in range(order.shape[0]):
        added = cv.fadd(acc, rows[:, :, order[r], :])
        acc = np.where(skip[r][:, None], acc, added) if skip[r].any() else added
    return layout.from_rows(acc, op.result.type)


def contract_lane(op: ContractLane, acc: np.ndarray) -> np.ndarray:
    """pipeline.md 9.4: move Lane into the stream (INTERLEAVED: one column of every lane
    per cycle; SEQUENTIAL: one lane at a time, eight columns per cycle); no value changes."""
    t_in: CStreamType = op.input.type
    a = layout.rows_view(acc, t_in)  # (rows, L, T, P)
    rows, lanes, steps, cols = a.shape
    bus = op.packet.size
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
