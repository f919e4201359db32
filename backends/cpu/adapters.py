"""Element-wise stages of the cpu backend: the Fetch Adapter, the Cast Engine and the
Commit Adapter conversions (docs/machine/fetch-adapter.md; docs/numerics.md), the Fetch
Adapter's mask, and the widening of contraction operands (docs/numerics.md).

Every conversion is `ir.convert`'s, on bit patterns for floats and host values for
integers; numpy/ml_dtypes `astype` never touches a float.
"""

from __future__ import annotations

import functools

import numpy as np

from ir import convert as cv
from ir.errors import MappingError
from ir.dtypes import DType, bf16, f8e4m3, f8e5m2
from ir.fetch_mask_ops import FetchMask
from ir.mapping.nodes import Broadcast, Mapping, Pad, Pair, PaddingKind, Resize, tree_nodes
from ir.ops import Cast, CommitCast, FetchCast, FetchTableLookup, FetchZeroPointSub
from ir.types import StreamType

from backends.cpu import arena, compact, compact_moves, layout, moves
from backends.cpu.compact import Compact
from backends.cpu.options import DEFAULT, CpuOptions
from backends.cpu.handlers import handles
from backends.cpu.wide_copy import wide_runs

__all__ = [
    "fetch_table_lookup", "fetch_cast", "fetch_zero_point_sub", "fetch_mask", "cast", "commit_cast", "widen",
]


_BLOCK = 1 << 15
"""Cells a conversion takes at a time: its temporaries (several of the buffer's size in
int64/uint32, ir/float_bits.py) stay about 1 MiB on a buffer of any size (issue 61,
first-run memory: a padded 16 MiB buffer took 16 MiB temporaries; 2^18 cells still made
6 MiB of them when a bf16 kernel's 4 MiB result was cast; blocks of 2^15 cells convert as
fast, the temporaries in cache)."""


def _convert(buf: np.ndarray, src: DType, dst: DType, stage: str, **kw: int) -> np.ndarray:
    """One stage's conversion on a whole buffer, in the destination's storage dtype, a block
    of `_BLOCK` cells at a time (every conversion is element-wise)."""
    if buf.size <= _BLOCK:
        return _converted(buf, src, dst, stage, **kw)
    flat = buf.reshape(-1)
    out = np.empty(buf.size, layout.storage_dtype(dst))
    for lo in range(0, buf.size, _BLOCK):
        out[lo:lo + _BLOCK] = _converted(flat[lo:lo + _BLOCK], src, dst, stage, **kw)
    return out.reshape(buf.shape)


def _converted(buf: np.ndarray, src: DType, dst: DType, stage: str, **kw: int) -> np.ndarray:
    out = cv.convert(buf, src, dst, stage, **kw)
    return np.asarray(out).astype(layout.storage_dtype(dst), copy=False).reshape(buf.shape)


@handles(FetchTableLookup)
def fetch_table_lookup(op: FetchTableLookup, buf: np.ndarray) -> np.ndarray:
    """Decode every element through the fixed table (docs/numerics.md); zero stays zero."""
    return _convert(buf, op.input.type.dtype, op.dtype, "table_lookup")


@handles(FetchCast, lazy=lambda op: op.input.type.dtype == op.dtype)  # the identity passes it on
def fetch_cast(op: FetchCast, buf: np.ndarray) -> np.ndarray:
    """docs/numerics.md; the identity cast returns the buffer unchanged, bits included."""
    src = op.input.type.dtype
    if src == op.dtype:
        return buf
    return _convert(buf, src, op.dtype, "fetch_cast")


@handles(FetchZeroPointSub)
def fetch_zero_point_sub(op: FetchZeroPointSub, buf: np.ndarray) -> np.ndarray:
    """`x - zero_point` into i5/i9 (docs/numerics.md); padding cells are set back to zero."""
    t: StreamType = op.result.type
    out = _convert(buf, op.input.type.dtype, op.dtype, "zero_point_sub", zero_point=op.zero_point)
    return layout.zero_padding(out, t)


@handles(FetchMask)
def fetch_mask(op: FetchMask, buf: np.ndarray) -> np.ndarray:
    """Zero every `#{0}` cell of the result's (time; packet). It reads them from the mapping's
    cells; the VISA interpreter zeroes by the record's mask configuration instead."""
    t = op.result.type
    both = Pair(t.time, t.packet)
    zero = (both.cells(np.arange(both.size)).status == PaddingKind.ZERO).reshape(t.time.size, t.packet.size)
    return np.where(zero, np.zeros((), buf.dtype), buf)


@handles(Cast, options=True, compact=True, donate=0)
def cast(op: Cast, buf: np.ndarray | Compact, options: CpuOptions = DEFAULT,
         owned: bool = False) -> np.ndarray | Compact:
    """Cast Engine (docs/machine/cast.md): convert every cell, then move P -> out_packet
    (the live cells keep their positions, the new tail is zero). A `Compact` operand (a
    value of few live slices, backends/cpu/compact.py) is converted and moved by its live
    rows only: the padding slices hold zero, which every cast keeps zero. When the move
    only pads each packet (`_tail_padded`), the cells are converted straight into their
    padded places, over the operand's own memory when the executor hands it over (`owned`:
    a 32-bit packet and its narrowed flit take the same bytes)."""
    src_t: StreamType = op.input.type
    if options.fast_moves and _tail_padded(src_t, op):
        return _cast_padded(op, buf, owned)
    if isinstance(buf, Compact):
        converted = compact.make(_convert(buf.base, src_t.dtype, op.dtype, "cast"), src_t)
        return compact_moves.move_local(converted, src_t, op.result.type, fast=options.fast_moves)
    converted = _convert(buf, src_t.dtype, op.dtype, "cast")
    return moves.move_local(converted, src_t, op.result.type, fast=options.fast_moves)


def _tail_padded(src_t: StreamType, op: Cast) -> bool:
    """Whether the Cast's move only pads each packet at its tail: every time step and packet
    cell of the input is live and distinct (no padding or broadcast in its mappings), and the
    out packet is the input's padded (CAST-4)."""
    return _padding_free(src_t.time) and _padding_free(src_t.packet) and _pads(src_t.packet, op.packet)


@functools.lru_cache(maxsize=256)
def _padding_free(mapping: Mapping) -> bool:
    return not any(isinstance(node, (Pad, Resize, Broadcast)) for node in tree_nodes(mapping))


@functools.lru_cache(maxsize=256)
def _pads(packet: Mapping, out: Mapping) -> bool:
    try:
        return out.size >= packet.size and out.equivalent(Pad(packet, out.size))
    except MappingError:
        return False


def _cast_padded(op: Cast, buf: np.ndarray | Compact, owned: bool) -> np.ndarray | Compact:
    """`cast` when its move only pads the packet (`_tail_padded`): each block of rows converted
    and written into its packets' leading cells, the tail zeroed; into `buf`'s own memory when
    `owned` and the out packet takes the same bytes (each block read before it is written)."""
    src_t, out_t = op.input.type, op.result.type
    dtype = layout.storage_dtype(op.dtype)
    rows = buf.base if isinstance(buf, Compact) else buf
    p, q = src_t.packet.size, out_t.packet.size
    flat = rows.reshape(-1, p)
    if owned and rows.flags.c_contiguous and rows.flags.writeable and rows.itemsize * p == dtype.itemsize * q:
        out = flat.view(dtype).reshape(-1, q)
    else:
        out = arena.empty((flat.shape[0], q), dtype)
    step = max(1, _BLOCK // p)
    for lo in range(0, flat.shape[0], step):
        part = _converted(flat[lo:lo + step], src_t.dtype, op.dtype, "cast")
        if np.may_share_memory(part, flat):  # never a view of what the block writes over
            part = part.copy()
        _place(out[lo:lo + step], np.ascontiguousarray(part))
    if isinstance(buf, Compact):
        return compact.make(out.reshape(rows.shape[0], -1), out_t)
    return out.reshape(layout.shape_of(out_t))


def _place(out: np.ndarray, part: np.ndarray) -> None:
    """`out` (rows, Q), C-contiguous rows, set to the packets `part` (rows, P) padded with
    zero: each packet copied as one item of its bytes (`wide_runs`) and the tail zeroed a
    word column at a time (a 2-D copy of 8-cell rows cost numpy 4 ms on drawn_s1_3's 4 MiB
    result)."""
    p, q, width = part.shape[1], out.shape[1], part.shape[1] * part.itemsize
    np.copyto(*wide_runs(out[:, :p], part))
    if q * out.itemsize % 8 or width % 8 or not out.flags.c_contiguous:
        out[:, p:] = 0
        return
    words = out.view(np.uint64)
    for w in range(width // 8, words.shape[1]):
        words[:, w] = 0


@handles(CommitCast)
def commit_cast(op: CommitCast, buf: np.ndarray) -> np.ndarray:
    """Commit Adapter f32 -> bf16 (docs/numerics.md), with the ReLU clamp when asked."""
    stage = "commit_cast_relu" if op.relu else "commit_cast"
    return _convert(buf, op.input.type.dtype, op.dtype, stage)


_FLOAT_WIDEN = {bf16: cv.widen_bf16, f8e4m3: cv.decode_e4m3, f8e5m2: cv.decode_e5m2}


def widen(values: np.ndarray, dtype: DType) -> np.ndarray:
    """A contraction operand in acc(D) (docs/numerics.md): float32 values (bf16 subnormals
    flushed, NaN canonical; f8 decoded exactly) or int32 integers (sign-extended; products
    of 9-bit values fit in int32 exactly)."""
    if dtype.is_float:
        return _FLOAT_WIDEN[dtype](values).view(np.float32)
    return values.astype(np.int32)
