"""The exact kernel of the compiled float core (`backends.cpu.contract_jit`): the float
contraction when nothing can be flushed, padded or skipped (`contract_float.exact_f32`,
no padding leaf, no skipped time step), bit for bit the numpy core.

Each spatial row's operands are widened to float32 once (W once per distinct W row: the
rows come grouped by W's row classes), with the adder tree's leaves
in natural order (the inverse of the layouts' bit reversal, so that the tree adds
adjacent leaves): A (pairs of rows, N, R, 2, g), W (N, column block, R, g, 16). One
block of 16 output columns is then one float32 vector (AVX-512; two on AVX2): the tree
of every column, unrolled for its leaf count (`_t1` to `_t64`: each sum's left operand
is the lower leaves), runs across the block's columns in one vectorized loop, two rows
of A against each W block read once; the time steps are added from +0 in stream order.
Each step's A pair and W block are passed as their own slices and every index is
unsigned: otherwise LLVM keeps the loop scalar (too many run-time alias checks, or
numba's negative-index wraparound). No fast-math: nothing is regrouped or fused.
Leaves that read consecutive cells (the usual case) are copied as runs.

`ORDER` is compiled by `contract_jit._compiled` like its own kernels (the same disk
cache); this module imports nothing from numba.
"""

from __future__ import annotations

import functools
import sys

import numpy as np

__all__ = ["ORDER", "INLINE", "TREES", "layout", "rows"]

_ZERO = np.float32(0.0)
_LOW = 0 if sys.byteorder == "little" else 1


_V = np.uint64(16)
"""Output columns per vector block of the exact kernel (one AVX-512 register of float32):
W is laid out (R, N, column block, leaf, _V), so that every load of a block lies at a
constant distance from the others and LLVM vectorizes the column loop."""
_U0, _U1, _U2, _U3, _U4, _U8, _U12, _U16, _U32, _U48, _U64 = (
    np.uint64(k) for k in (0, 1, 2, 3, 4, 8, 12, 16, 32, 48, 64))
_ULOW, _UHIGH = np.uint64(_LOW), np.uint64(1 - _LOW)
TREES = (1, 2, 4, 8, 16, 32, 64)
"""Leaf counts with an unrolled adder tree; other counts take `contract_jit._rows`."""


def _t1(a, oa, w, ow, l, v):
    """The product of leaf `l` (natural order) of the A leaves at `oa` and column `v` of
    the W block at `ow` (leaf-major, _V columns a leaf)."""
    return a[oa + l] * w[ow + l * _V + v]


def _t2(a, oa, w, ow, l, v):
    """The adder tree over the leaves [l, l + 2): each sum's left operand is the lower
    leaves, as the engine adds them (and as `contract_jit._tree` does, in bit-reversed
    positions). The trees are written flat a few levels at a time: numba's inlining of
    nested calls is what the kernel's compile time is made of."""
    return a[oa + l] * w[ow + l * _V + v] + a[oa + l + _U1] * w[ow + (l + _U1) * _V + v]


def _t4(a, oa, w, ow, l, v):
    return ((a[oa + l] * w[ow + l * _V + v] + a[oa + l + _U1] * w[ow + (l + _U1) * _V + v])
            + (a[oa + l + _U2] * w[ow + (l + _U2) * _V + v] + a[oa + l + _U3] * w[ow + (l + _U3) * _V + v]))


def _t8(a, oa, w, ow, l, v):
    return _t4(a, oa, w, ow, l, v) + _t4(a, oa, w, ow, l + _U4, v)


def _t16(a, oa, w, ow, l, v):
    return ((_t4(a, oa, w, ow, l, v) + _t4(a, oa, w, ow, l + _U4, v))
            + (_t4(a, oa, w, ow, l + _U8, v) + _t4(a, oa, w, ow, l + _U12, v)))


def _t32(a, oa, w, ow, l, v):
    return _t16(a, oa, w, ow, l, v) + _t16(a, oa, w, ow, l + _U16, v)


def _t64(a, oa, w, ow, l, v):
    return ((_t16(a, oa, w, ow, l, v) + _t16(a, oa, w, ow, l + _U16, v))
            + (_t16(a, oa, w, ow, l + _U32, v) + _t16(a, oa, w, ow, l + _U48, v)))


def _block(ab, w, g, acc):
    """acc[v] += the adder tree of the first g leaves of `ab` (one step's A pair) against
    column v of the W block `w`, acc[_V + v] += that of its next g leaves (the pair's
    second row): one vectorized loop over the block's columns, the tree unrolled for g
    (straight-line float32 code, nothing regrouped). Three arrays read at constant
    distances: LLVM's run-time alias checks stay few enough to vectorize."""
    if g == 32:
        for v in range(_V):
            acc[v] = acc[v] + _t32(ab, _U0, w, _U0, _U0, v)
            acc[_V + v] = acc[_V + v] + _t32(ab, _U32, w, _U0, _U0, v)
    elif g == 16:
        for v in range(_V):
            acc[v] = acc[v] + _t16(ab, _U0, w, _U0, _U0, v)
            acc[_V + v] = acc[_V + v] + _t16(ab, _U16, w, _U0, _U0, v)
    elif g == 64:
        for v in range(_V):
            acc[v] = acc[v] + _t64(ab, _U0, w, _U0, _U0, v)
            acc[_V + v] = acc[_V + v] + _t64(ab, _U64, w, _U0, _U0, v)
    elif g == 8:
        for v in range(_V):
            acc[v] = acc[v] + _t8(ab, _U0, w, _U0, _U0, v)
            acc[_V + v] = acc[_V + v] + _t8(ab, _U8, w, _U0, _U0, v)
    elif g == 4:
        for v in range(_V):
            acc[v] = acc[v] + _t4(ab, _U0, w, _U0, _U0, v)
            acc[_V + v] = acc[_V + v] + _t4(ab, _U4, w, _U0, _U0, v)
    elif g == 2:
        for v in range(_V):
            acc[v] = acc[v] + _t2(ab, _U0, w, _U0, _U0, v)
            acc[_V + v] = acc[_V + v] + _t2(ab, _U2, w, _U0, _U0, v)
    else:
        for v in range(_V):
            acc[v] = acc[v] + _t1(ab, _U0, w, _U0, _U0, v)
            acc[_V + v] = acc[_V + v] + _t1(ab, _U1, w, _U0, _U0, v)


def _bits(cells, c, wide):
    """`_pattern` at an unsigned cell index (uint64 throughout: numba then emits no
    negative-index wraparound, and the copy loops vectorize)."""
    if wide:
        return np.uint32(cells[_U2 * c + _ULOW]) | (np.uint32(cells[_U2 * c + _UHIGH]) << np.uint32(16))
    return np.uint32(cells[c]) << np.uint32(16)


def _gather_runs(cells, index, starts, g, wide, out):
    """out[p * g + q] = the float32 bits of A's cell for position p, leaf q: cell
    starts[p] + q when `starts` is given (runs of consecutive cells, a vectorized copy),
    else index[p * g + q]."""
    if starts.size == 0:
        for p in range(np.uint64(index.size)):
            out[p] = _bits(cells, np.uint64(index[p]), wide)
        return
    ug = np.uint64(g)
    for p in range(np.uint64(starts.size)):
        s, o = np.uint64(starts[p]), p * ug
        if wide:
            for q in range(ug):
                out[o + q] = _bits(cells, s + q, True)
        else:
            for q in range(ug):
                out[o + q] = _bits(cells, s + q, False)


def _gather_blocks(cells, index, starts, g, nr, wide, out):
    """W's cells into (N, column block, R, leaf, _V): `index` / `starts` (N x R, padded
    columns, leaf) / (N x R, padded columns) as in `_gather_runs`, read a column's run of
    leaves at a time, written _V apart."""
    nnr, njp, _ = index.shape
    ug, unr, nb = np.uint64(g), np.uint64(nr), np.uint64(njp) // _V
    for nrr in range(np.uint64(nnr)):
        n, r = nrr // unr, nrr % unr
        for jp in range(np.uint64(njp)):
            base = ((n * nb + jp // _V) * unr + r) * ug * _V + jp % _V
            if starts.size == 0:
                for q in range(ug):
                    out[base + q * _V] = _bits(cells, np.uint64(index[nrr, jp, q]), wide)
                continue
            s = np.uint64(starts[nrr, jp])
            if wide:
                for q in range(ug):
                    out[base + q * _V] = _bits(cells, s + q, True)
            else:
                for q in range(ug):
                    out[base + q * _V] = _bits(cells, s + q, False)


def rows(raw_a, raw_w, ia, sa, iw, sw, wide_a, wide_w, out, order, same_w):
    """`contract_jit._rows` when nothing is flushed, padded or skipped, for a leaf count of
    `TREES`: A (row pairs, N, R, 2, g) and W blocks (N, column block, R, g, _V) gathered
    per spatial row with their leaves in natural order, then each pair of rows of A (the
    last row twice when their count is odd) against one W block of _V columns at a time,
    its adder tree vectorized across them, the steps added from +0 in order. The spatial
    rows are taken in `order`; W is gathered again only where `same_w` is False (the
    row's stored W differs from the previous row's: the first row always gathers)."""
    nn, nr, g = ia.shape[1], ia.shape[2], ia.shape[4]
    ni, nj = out.shape[1], out.shape[2]
    nb = iw.shape[1] // np.int64(_V)
    ua = np.empty(ia.size, np.uint32)
    uw = np.empty(iw.size, np.uint32)
    fa, fw = ua.view(np.float32), uw.view(np.float32)
    acc = np.empty(2 * _V, np.float32)
    pair, blk = np.uint64(2 * g), np.uint64(g) * _V
    for k in range(order.size):
        row = order[k]
        _gather_runs(raw_a[row], ia.ravel(), sa, g, wide_a, ua)
        if k == 0 or not same_w[k]:
            _gather_blocks(raw_w[row], iw, sw, g, nr, wide_w, uw)
        for n in range(nn):
            for i in range(0, ni, 2):
                i2 = min(i + 1, ni - 1)
                for jb in range(nb):
                    acc[:] = _ZERO
                    for r in range(nr):
                        oa = np.uint64(((i // 2) * nn + n) * nr + r) * pair
                        ow = np.uint64((n * nb + jb) * nr + r) * blk
                        _block(fa[oa:oa + pair], fw[ow:ow + blk], g, acc)
                    for v in range(min(np.int64(_V), nj - jb * np.int64(_V))):
                        out[row, i, jb * np.int64(_V) + v, n] = acc[v]
                        out[row, i2, jb * np.int64(_V) + v, n] = acc[np.int64(_V) + v]


@functools.lru_cache(maxsize=64)
def layout(gather, side: str) -> tuple[np.ndarray, np.ndarray]:
    """(index, starts) of a layout as `rows` reads it, the leaves in natural order
    (the inverse of the layout's bit reversal): A (pairs of rows, N, R, 2, g), the last
    row twice when I is odd, and W (N x R, J padded to a multiple of _V with copies of
    the last column, g); `starts` the first cell of every run of leaves when each run
    reads consecutive cells, else empty."""
    idx = gather.index.reshape(gather.groups).astype(np.int64)  # A (I, g, R, N), W (J, g, R, N)
    idx = idx.transpose((0, 2, 3, 1) if side == "a" else (2, 3, 1, 0))  # A (I, R, N, g), W (R, N, g, J)
    g = idx.shape[3] if side == "a" else idx.shape[2]
    bits = g.bit_length() - 1
    natural = np.array([int(format(q, f"0{bits}b")[::-1], 2) if bits else 0 for q in range(g)])
    if side == "a":
        ni, nr, nn, _ = idx.shape
        pairs = np.minimum(np.arange(ni + ni % 2), ni - 1).reshape(-1, 2)  # the last row twice when odd
        idx = idx[..., natural][pairs].transpose(0, 3, 2, 1, 4)  # (I / 2, N, R, 2, g)
    else:
        nr, nn, _, nj = idx.shape
        idx = idx[:, :, natural, :].transpose(1, 0, 3, 2).reshape(nn * nr, nj, g)  # (N x R, J, g)
        pad = -nj % int(_V)
        if pad:
            idx = np.concatenate([idx, np.repeat(idx[:, -1:], pad, axis=1)], axis=1)
    idx = np.ascontiguousarray(idx)
    first = idx[..., :1]
    runs = bool(np.array_equal(idx, first + np.arange(g)))
    starts = np.ascontiguousarray(first[..., 0]) if runs and idx.size else np.zeros((0,) * (idx.ndim - 1), np.int64)
    return idx, starts.reshape(-1) if side == "a" else starts


ORDER = ("_t1", "_t2", "_t4", "_t8", "_t16", "_t32", "_t64", "_block", "_bits", "_gather_runs", "_gather_blocks",
         "rows")
"""Compiled in this order: a kernel calls only those before it."""
INLINE = ("_t1", "_t2", "_t4", "_t8", "_t16", "_t32", "_t64", "_block", "_bits")
"""Inlined into their callers: the unrolled trees and the vectorized loops."""
