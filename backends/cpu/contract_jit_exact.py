"""The exact kernel of the compiled float core (`backends.cpu.contract_jit`): the float
contraction when nothing can be flushed, padded or skipped (`contract_float.exact_f32`,
no padding leaf, no skipped time step), bit for bit the numpy core.

Each spatial row's operands are widened to float32 once, with the adder tree's leaves
in natural order (the inverse of the layouts' bit reversal, so that the tree adds
adjacent leaves): A (I, R, N, g), W (R, N, column block, g, 16). One block of 16 output
columns is then one float32 vector (AVX-512) or two: the tree of every column, unrolled
for its leaf count (`_t1` to `_t64`: each level adds its lower half to its upper, left
operand first), runs across the block's columns in one vectorized loop, two rows of A
against each W block read once; the time steps are added from +0 in stream order. The
loads of one block lie at constant distances (the block layout) and every index is
unsigned: without either, LLVM keeps the loop scalar (too many run-time alias checks,
or numba's negative-index wraparound). No fast-math: nothing is regrouped or fused.
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
_U0, _U1, _U2, _U4, _U8, _U16, _U32 = (np.uint64(k) for k in (0, 1, 2, 4, 8, 16, 32))
_ULOW, _UHIGH = np.uint64(_LOW), np.uint64(1 - _LOW)
TREES = (1, 2, 4, 8, 16, 32, 64)
"""Leaf counts with an unrolled adder tree; other counts take `contract_jit._rows`."""


def _t1(a, oa, w, ow, l, v):
    """The product of leaf `l` (natural order) in column `v` of a W block at `ow`."""
    return a[oa + l] * w[ow + l * _V + v]


def _t2(a, oa, w, ow, l, v):
    """The adder tree over the leaves [l, l + 2): the two sums' left operand is the lower
    leaves, as the engine adds them (and as `_tree` does, in bit-reversed positions)."""
    return _t1(a, oa, w, ow, l, v) + _t1(a, oa, w, ow, l + _U1, v)


def _t4(a, oa, w, ow, l, v):
    return _t2(a, oa, w, ow, l, v) + _t2(a, oa, w, ow, l + _U2, v)


def _t8(a, oa, w, ow, l, v):
    return _t4(a, oa, w, ow, l, v) + _t4(a, oa, w, ow, l + _U4, v)


def _t16(a, oa, w, ow, l, v):
    return _t8(a, oa, w, ow, l, v) + _t8(a, oa, w, ow, l + _U8, v)


def _t32(a, oa, w, ow, l, v):
    return _t16(a, oa, w, ow, l, v) + _t16(a, oa, w, ow, l + _U16, v)


def _t64(a, oa, w, ow, l, v):
    return _t32(a, oa, w, ow, l, v) + _t32(a, oa, w, ow, l + _U32, v)


def _block(fa, oa, ob, fw, ow, g, acc, bcc):
    """acc[v] += the adder tree of A's leaves at `oa` against column v of the W block at
    `ow`, bcc[v] that of the leaves at `ob`: one vectorized loop over the block's columns,
    the tree unrolled (straight-line float32 code, nothing regrouped)."""
    if g == 32:
        for v in range(_V):
            acc[v] = acc[v] + _t32(fa, oa, fw, ow, _U0, v)
            bcc[v] = bcc[v] + _t32(fa, ob, fw, ow, _U0, v)
    elif g == 16:
        for v in range(_V):
            acc[v] = acc[v] + _t16(fa, oa, fw, ow, _U0, v)
            bcc[v] = bcc[v] + _t16(fa, ob, fw, ow, _U0, v)
    elif g == 64:
        for v in range(_V):
            acc[v] = acc[v] + _t64(fa, oa, fw, ow, _U0, v)
            bcc[v] = bcc[v] + _t64(fa, ob, fw, ow, _U0, v)
    elif g == 8:
        for v in range(_V):
            acc[v] = acc[v] + _t8(fa, oa, fw, ow, _U0, v)
            bcc[v] = bcc[v] + _t8(fa, ob, fw, ow, _U0, v)
    elif g == 4:
        for v in range(_V):
            acc[v] = acc[v] + _t4(fa, oa, fw, ow, _U0, v)
            bcc[v] = bcc[v] + _t4(fa, ob, fw, ow, _U0, v)
    elif g == 2:
        for v in range(_V):
            acc[v] = acc[v] + _t2(fa, oa, fw, ow, _U0, v)
            bcc[v] = bcc[v] + _t2(fa, ob, fw, ow, _U0, v)
    else:
        for v in range(_V):
            acc[v] = acc[v] + _t1(fa, oa, fw, ow, _U0, v)
            bcc[v] = bcc[v] + _t1(fa, ob, fw, ow, _U0, v)


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


def _gather_blocks(cells, index, starts, g, wide, out):
    """W's cells into (R x N, column block, leaf, _V): `index` / `starts` (R x N, padded
    columns, leaf) / (R x N, padded columns) as in `_gather_runs`, read a column's run of
    leaves at a time, written _V apart."""
    nrn, njp, _ = index.shape
    ug = np.uint64(g)
    for rn in range(np.uint64(nrn)):
        for jp in range(np.uint64(njp)):
            base = (rn * np.uint64(njp) + (jp // _V) * _V) * ug + jp % _V
            if starts.size == 0:
                for q in range(ug):
                    out[base + q * _V] = _bits(cells, np.uint64(index[rn, jp, q]), wide)
                continue
            s = np.uint64(starts[rn, jp])
            if wide:
                for q in range(ug):
                    out[base + q * _V] = _bits(cells, s + q, True)
            else:
                for q in range(ug):
                    out[base + q * _V] = _bits(cells, s + q, False)


def rows(raw_a, raw_w, ia, sa, iw, sw, wide_a, wide_w, out, r0, r1):
    """`contract_jit._rows` when nothing is flushed, padded or skipped, for a leaf count of `TREES`:
    A (I, R, N, g) and W blocks (R, N, column block, g, _V) gathered per row with their
    leaves in natural order, then two rows of A (the last one twice when their count is
    odd) against one W block of _V columns, its adder tree vectorized across them."""
    ni, nr, nn, g = ia.shape
    nj = out.shape[2]
    njp = iw.shape[1]
    nb = njp // np.int64(_V)
    ua = np.empty(ia.size, np.uint32)
    uw = np.empty(iw.size, np.uint32)
    fa, fw = ua.view(np.float32), uw.view(np.float32)
    acc, bcc = np.empty(_V, np.float32), np.empty(_V, np.float32)
    ug, blk = np.uint64(g), np.uint64(g) * _V
    for row in range(r0, r1):
        _gather_runs(raw_a[row], ia.ravel(), sa, g, wide_a, ua)
        _gather_blocks(raw_w[row], iw, sw, g, wide_w, uw)
        for n in range(nn):
            for i in range(0, ni, 2):
                i2 = min(i + 1, ni - 1)
                for jb in range(nb):
                    acc[:] = _ZERO
                    bcc[:] = _ZERO
                    for r in range(nr):
                        oa = np.uint64((i * nr + r) * nn + n) * ug
                        ob = np.uint64((i2 * nr + r) * nn + n) * ug
                        ow = np.uint64((r * nn + n) * nb + jb) * blk
                        _block(fa, oa, ob, fw, ow, g, acc, bcc)
                    for v in range(min(np.int64(_V), nj - jb * np.int64(_V))):
                        out[row, i, jb * np.int64(_V) + v, n] = acc[v]
                        out[row, i2, jb * np.int64(_V) + v, n] = bcc[v]


@functools.lru_cache(maxsize=64)
def layout(gather, side: str) -> tuple[np.ndarray, np.ndarray]:
    """(index, starts) of a layout as `rows` reads it, the leaves in natural order
    (the inverse of the layout's bit reversal): A (I, R, N, g) and W (R x N, J padded to
    a multiple of _V with copies of the last column, g); `starts` the first cell of every
    run of leaves when each run reads consecutive cells, else empty."""
    idx = gather.index.reshape(gather.groups).astype(np.int64)  # A (I, g, R, N), W (J, g, R, N)
    idx = idx.transpose((0, 2, 3, 1) if side == "a" else (2, 3, 1, 0))  # A (I, R, N, g), W (R, N, g, J)
    g = idx.shape[3] if side == "a" else idx.shape[2]
    bits = g.bit_length() - 1
    natural = np.array([int(format(q, f"0{bits}b")[::-1], 2) if bits else 0 for q in range(g)])
    if side == "a":
        idx = idx[..., natural]
    else:
        nr, nn, _, nj = idx.shape
        idx = idx[:, :, natural, :].transpose(0, 1, 3, 2).reshape(nr * nn, nj, g)
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
