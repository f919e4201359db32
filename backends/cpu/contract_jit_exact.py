"""The exact kernel of the compiled float core (`backends.cpu.contract_jit`): the float
contraction when nothing can be flushed, padded or skipped (`contract_float.exact_f32`,
no padding leaf, no skipped time step), bit for bit the numpy core.

Each distinct stored row of an operand (one per row class: a broadcast DMA records
which spatial rows hold copies, backends/cpu/row_classes.py) is widened to float32 once,
its adder-tree leaves in natural order (the inverse of the layouts' bit reversal, so
that the tree adds adjacent leaves): A as (class, NA, I padded to `TI`, R, g), NA = 1
when every batch position reads the same cells (the usual GEMM: A does not depend on
the TRF's column group), W as (class, N, column block, R, g, vw), the last column
repeated into the padding; when NA = 1, W's batch positions are folded into its columns
(class, 1, column block, R, g, vw), so that a lane count of 8 and 4 batch positions fill
two 16-wide vectors. The rows of results are then the register tiles of
`ir.exact_kernels.tiles` (8 rows x 8 columns or 4 x 16, `width`, the tree written as
vector IR; `tiles` here is the loop that drives them), the spatial rows grouped by W's
class (its blocks stay in cache) and split between threads (each row written by one).
Leaves that read consecutive cells (the usual case) are copied as runs.

`ORDER` is compiled by `contract_jit._compiled` (`ir.exact_kernels.compile`); this
module imports nothing from numba.
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from ir.exact_kernels import sums
from ir.exact_kernels import tiles as kt
from ir.exact_kernels.tiles import TREES, leaf_order

__all__ = ["INLINE", "ORDER", "TI", "TREES", "Layout", "gather", "layout", "tiles", "tiles_widening", "width"]

_LOW = 0 if sys.byteorder == "little" else 1
_U2 = np.uint64(2)
_ULOW, _UHIGH = np.uint64(_LOW), np.uint64(1 - _LOW)

TI = 8
"""Rows of A per tile at most: A's rows are padded to a multiple of it."""


def _bits(cells, c, wide):
    """The float32 bits of the cell at unsigned index `c` of a row of 16-bit halves: a
    bf16 pattern shifted by 16, or (`wide`) its two halves (uint64 indices throughout:
    numba then emits no negative-index wraparound, and the copy loops vectorize)."""
    if wide:
        return np.uint32(cells[_U2 * c + _ULOW]) | (np.uint32(cells[_U2 * c + _UHIGH]) << np.uint32(16))
    return np.uint32(cells[c]) << np.uint32(16)


def gather(raw, index, starts, base, stride, wide, out):
    """out[c, base[p] + q * stride] = the bits of leaf q of position p of stored row c:
    cell starts[p] + q when `starts` is given (runs of consecutive cells), else
    index[p, q]."""
    npos, g = index.shape
    ug, us = np.uint64(g), np.uint64(stride)
    for c in range(raw.shape[0]):
        cells, dst = raw[c], out[c]
        for p in range(np.uint64(npos)):
            o = np.uint64(base[p])
            if starts.size == 0:
                for q in range(ug):
                    dst[o + q * us] = _bits(cells, np.uint64(index[p, q]), wide)
            elif wide:
                s = np.uint64(starts[p])
                for q in range(ug):
                    dst[o + q * us] = _bits(cells, s + q, True)
            else:
                s = np.uint64(starts[p])
                for q in range(ug):
                    dst[o + q * us] = _bits(cells, s + q, False)


class Layout:
    """One operand's gather for `gather`: index (positions, g), starts (positions,) or
    empty, base (positions,), stride, and the float32 elements per stored row."""

    def __init__(self, index: np.ndarray, base: np.ndarray, stride: int, size: int, na: int = 1) -> None:
        g = index.shape[1]
        self.index = np.ascontiguousarray(index)
        runs = bool(index.size) and bool(np.array_equal(index, index[:, :1] + np.arange(g)))
        self.starts = np.ascontiguousarray(index[:, 0]) if runs else np.zeros(0, np.int64)
        self.base = np.ascontiguousarray(base, np.int64)
        self.stride = stride
        self.size = size
        self.na = na


def width(cols: int) -> int:
    """The tile's columns for `cols` output columns: 16 (a 512-bit vector) unless that
    pads more columns than 8 does."""
    return 16 if cols > 8 and -(-cols // 16) * 16 == -(-cols // 8) * 8 else 8


@functools.lru_cache(maxsize=64)
def layout(gather_, side: str, vw: int = 8, fold: bool = False) -> Layout:
    """The `Layout` of A (`side` "a": (NA, I padded to TI, R, g), the last row repeated)
    or W ("w": (N, column block, R, g, vw), the last column repeated; with `fold`,
    (1, column block, R, g, vw) over the columns c = n * J + j), from a
    contract_plan.Gather of groups A (I, g, R, N) / W (J, g, R, N)."""
    idx = gather_.index.reshape(gather_.groups).astype(np.int64)
    ni, g, nr, nn = idx.shape
    idx = idx[:, leaf_order(g)]
    if side == "a":
        idx = idx.transpose(3, 0, 2, 1)  # (N, I, R, g)
        na = 1 if all(np.array_equal(idx[0], idx[n]) for n in range(1, nn)) else nn
        ip = -(-ni // TI) * TI
        idx = idx[:na, np.minimum(np.arange(ip), ni - 1)]
        flat = idx.reshape(-1, g)
        return Layout(flat, np.arange(flat.shape[0]) * g, 1, flat.size, na)
    if fold:  # (1, n * J + j, g, R)
        idx = idx.transpose(3, 0, 1, 2).reshape(1, nn * ni, g, nr)
    else:  # (N, J, g, R)
        idx = idx.transpose(3, 0, 1, 2)
    nw, cols = idx.shape[:2]
    nb = -(-cols // vw)
    idx = idx[:, np.minimum(np.arange(nb * vw), cols - 1)]  # columns padded
    idx = idx.reshape(nw, nb, vw, g, nr).transpose(0, 1, 4, 2, 3)  # (N, block, R, vw, g)
    n, b, r, v = np.meshgrid(np.arange(nw), np.arange(nb), np.arange(nr), np.arange(vw), indexing="ij")
    base = (((n * nb + b) * nr + r) * g * vw + v).reshape(-1)
    return Layout(idx.reshape(-1, g), base, vw, nw * nb * nr * g * vw)


def tiles(fa, fw, ca, cw, na, nr, ni, nj, g, vw, fold, out, order, k0, k1):
    """out[row, i, j, n] for the spatial rows order[k0:k1], by the shared tiles: A gathered per class as
    (class, NA, I padded to TI, R, g) and W as (class, N, column block, R, g, vw) (with
    `fold`: (class, 1, column block, R, g, vw), the columns c = n * J + j), both float32
    with the leaves in natural order (R = nr steps); ca / cw each row's class. NA is 1
    when A reads the same cells at every batch position n (always so with `fold`). Per
    row, batch position and column block, the tiles each sum the time steps from +0 in
    stream order."""
    nn = out.shape[3]
    nw, cols = (1, nn * nj) if fold else (nn, nj)
    nb = (cols + vw - 1) // vw
    ip = (ni + TI - 1) // TI * TI
    ti = 8 if vw == 8 else 4  # the tile's rows (tiles.SHAPES)
    acc = np.empty(ti * vw, np.float32)
    ug, unr, uvw = np.uint64(g), np.uint64(nr), np.uint64(vw)
    sa = unr * ug
    for k in range(k0, k1):
        row = order[k]
        for n in range(nw):
            an = n if na > 1 else 0
            for jb in range(nb):
                ow0 = np.uint64(((cw[row] * nw + n) * nb + jb) * nr) * ug * uvw
                for i in range(0, ip, ti):
                    acc[:] = np.float32(0.0)
                    oa0 = np.uint64(((ca[row] * na + an) * ip + i) * nr) * ug
                    for r in range(unr):
                        if vw == 8:
                            kt.tile_8x8(g, fa, oa0 + r * ug, sa, fw, ow0 + r * ug * uvw, acc)
                        else:
                            kt.tile_4x16(g, fa, oa0 + r * ug, sa, fw, ow0 + r * ug * uvw, acc)
                    for t in range(min(ti, ni - i)):
                        for v in range(min(vw, cols - jb * vw)):
                            c = jb * vw + v
                            if fold:
                                out[row, i + t, c % nj, c // nj] = acc[t * vw + v]
                            else:
                                out[row, i + t, c, n] = acc[t * vw + v]


def tiles_widening(raw_a, a_index, a_starts, a_base, a_stride, wide_a, a_size,
                   raw_w, w_index, w_starts, w_base, w_stride, wide_w, w_size,
                   ca, cw, zeros, na, nr, ni, nj, g, vw, fold, out, order, k0, k1):
    """`tiles` over the stored 16-bit rows themselves: each row's A and W classes widened
    by `gather` into a scratch row of their own just before its tiles (a class the row
    before used is not widened again), so that the widened operands stay in cache instead
    of going through memory. For operands whose rows are mostly distinct (a batched GEMM:
    a stored row per slice); a broadcast operand is widened once per class by `gather`.
    Returns `ir.exact_kernels.sums.bf16_bounds` of the top halves of every widened A row
    and of every W row, combined: the range of the bf16 patterns read (`contract_jit.scanned`;
    meaningless for a `wide` operand)."""
    fa = np.empty(a_size, np.float32)
    fw = np.empty(w_size, np.float32)
    ua = fa.view(np.uint32).reshape((1, a_size))
    uw = fw.view(np.uint32).reshape((1, w_size))
    last_a, last_w = -1, -1
    top_a, low_a, top_w, low_w = np.uint16(0), np.uint16(0xFFFF), np.uint16(0), np.uint16(0xFFFF)
    for k in range(k0, k1):
        row = order[k]
        if ca[row] != last_a:
            last_a = ca[row]
            gather(raw_a[last_a:last_a + 1], a_index, a_starts, a_base, a_stride, wide_a, ua)
            top_a, low_a = sums.bf16_bounds(ua[0], 0, a_size, 16, top_a, low_a)
        if cw[row] != last_w:
            last_w = cw[row]
            gather(raw_w[last_w:last_w + 1], w_index, w_starts, w_base, w_stride, wide_w, uw)
            top_w, low_w = sums.bf16_bounds(uw[0], 0, w_size, 16, top_w, low_w)
        tiles(fa, fw, zeros, zeros, na, nr, ni, nj, g, vw, fold, out, order, k, k + 1)
    return np.int64(top_a), np.int64(low_a), np.int64(top_w), np.int64(low_w)


ORDER = ("_bits", "gather", "tiles", "tiles_widening")
"""Compiled in this order, after `ir.exact_kernels.tiles` and `sums`: a kernel calls only those before it."""
INLINE = ("_bits",)
"""Inlined into their callers."""
