"""The general kernel of the compiled float core (`backends.cpu.contract_jit`): every
float contraction the exact register tiles (`backends.cpu.contract_jit_exact`) do not
take (a product or sum that may be flushed, padding leaves, skipped time steps), bit for
bit the numpy core of `backends.cpu.contract_float`; and `_range`, the scan of an
operand's magnitudes that decides whether a contraction is exact.

Per spatial row, the operand cells are gathered as float32 bits (`_gather`), then every
(row, column) pair's products of a time step are summed by the adder tree (`_tree`,
leaves in the layout's bit-reversed order: each level adds its second half to its first)
and accumulated in stream order (`_accumulate`), each result flushed unless `exact`.

`ORDER` is compiled by `contract_jit._compiled` (`ir.exact_kernels.compile`); this
module imports nothing from numba.
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["INLINE", "ORDER"]

_TINY = np.float32(2.0 ** -126)
_ZERO = np.float32(0.0)
_LOW = 0 if sys.byteorder == "little" else 1
"""Which 16-bit half of a float32 comes first in memory: the low one on little-endian."""



def _pattern(cells, c, wide):
    """Cell `c` of a row of 16-bit halves: a bf16 pattern, or (`wide`) the float32 bits
    of its two halves."""
    if wide:
        return np.uint32(cells[2 * c + _LOW]) | (np.uint32(cells[2 * c + 1 - _LOW]) << np.uint32(16))
    return np.uint32(cells[c])


def _range(raw, starts, ends, wide):
    """(largest magnitude pattern, smallest magnitude pattern less one) of the cells
    [starts[k], ends[k]) of every row, the sign bit masked off; the subtraction wraps
    around the unsigned width, so that a zero pattern counts as the largest value and the
    second is all ones when every pattern is zero (`_range_of` reads it). Unsigned
    indices, constant masks, branch-free min / max over runs of cells and the results
    returned as found: the loops vectorize."""
    u2, ulow, uhigh = np.uint64(2), np.uint64(_LOW), np.uint64(1 - _LOW)
    if wide:
        top, low = np.uint32(0), np.uint32(0xFFFFFFFF)
        for row in range(raw.shape[0]):
            cells = raw[row]
            for k in range(starts.size):
                lo, hi = np.uint64(starts[k]), np.uint64(ends[k])
                for c in range(lo, hi):
                    b = np.uint32(cells[u2 * c + ulow]) | (np.uint32(cells[u2 * c + uhigh]) << np.uint32(16))
                    m = b & np.uint32(0x7FFFFFFF)
                    top = max(top, m)
                    low = min(low, np.uint32(m - np.uint32(1)))
        return np.int64(top), np.int64(low)
    top16, low16 = np.uint16(0), np.uint16(0xFFFF)
    for row in range(raw.shape[0]):
        cells = raw[row]
        for k in range(starts.size):
            lo, hi = np.uint64(starts[k]), np.uint64(ends[k])
            for c in range(lo, hi):
                m = cells[c] & np.uint16(0x7FFF)
                top16 = max(top16, m)
                low16 = min(low16, np.uint16(m - np.uint16(1)))
    return np.int64(top16), np.int64(low16)


def _ftz(x, qnan):
    """contract_float.ftz of one value."""
    if x != x:
        return qnan
    if abs(x) < _TINY:
        return x * _ZERO
    return x


def _gather(cells, index, wide, out):
    """out[p] = the float32 bits of cell index[p] (a bf16 pattern shifted by 16, unless `wide`)."""
    if wide:
        for p in range(index.size):
            out[p] = _pattern(cells, index[p], True)
    else:
        for p in range(index.size):
            out[p] = np.uint32(cells[index[p]]) << np.uint32(16)


def _tree(a, w, pad, i, r, n, exact, qnan, prod, y):
    """y[j] = the adder tree of a[l] * w[l, j] over the leaves l (padding leaves +0)."""
    g, nj = w.shape
    for l in range(g):
        x = a[l]
        for j in range(nj):
            prod[l, j] = x * w[l, j]
        if not exact:
            for j in range(nj):
                prod[l, j] = _ftz(prod[l, j], qnan[0])
        if pad.size:
            pi, pl, pr, pn = min(i, pad.shape[0] - 1), min(l, pad.shape[2] - 1), \
                min(r, pad.shape[3] - 1), min(n, pad.shape[4] - 1)
            for j in range(nj):
                if pad[pi, min(j, pad.shape[1] - 1), pl, pr, pn]:
                    prod[l, j] = _ZERO
    k = g
    while k > 1:
        k //= 2
        for l in range(k):
            for j in range(nj):
                prod[l, j] = prod[l, j] + prod[l + k, j]
            if not exact:
                for j in range(nj):
                    prod[l, j] = _ftz(prod[l, j], qnan[0])
    for j in range(nj):
        y[j] = prod[0, j]


def _accumulate(acc, y, skip, i, r, n, exact, qnan):
    """acc ⊕= y, except where the time step `r` is padding for the column."""
    nj = acc.size
    if skip.size == 0:
        for j in range(nj):
            acc[j] = acc[j] + y[j]
        if not exact:
            for j in range(nj):
                acc[j] = _ftz(acc[j], qnan[0])
        return
    si, sr, sn = min(i, skip.shape[0] - 1), min(r, skip.shape[2] - 1), min(n, skip.shape[3] - 1)
    for j in range(nj):
        if not skip[si, min(j, skip.shape[1] - 1), sr, sn]:
            s = acc[j] + y[j]
            acc[j] = s if exact else _ftz(s, qnan[0])


def _rows(raw_a, raw_w, ca, cw, ia, iw, wide_a, wide_w, pad, skip, exact, qnan, out, r0, r1):
    """out[row, i, j, n] for the spatial rows [r0, r1): A's cells `ia` (I, R, N, g) and W's
    `iw` (R, N, g, J) gathered per row from its stored row (class) ca[row] / cw[row],
    then every (i, n) row of results at once."""
    ni, nr, nn, g = ia.shape
    nj = iw.shape[3]
    ua = np.empty(ia.size, np.uint32)
    uw = np.empty(iw.size, np.uint32)
    fa = ua.view(np.float32).reshape((ni, nr, nn, g))
    fw = uw.view(np.float32).reshape((nr, nn, g, nj))
    prod = np.empty((g, nj), np.float32)
    acc = np.empty(nj, np.float32)
    y = np.empty(nj, np.float32)
    for row in range(r0, r1):
        _gather(raw_a[ca[row]], ia.ravel(), wide_a, ua)
        _gather(raw_w[cw[row]], iw.ravel(), wide_w, uw)
        for n in range(nn):
            for i in range(ni):
                acc[:] = _ZERO
                for r in range(nr):
                    _tree(fa[i, r, n], fw[r, n], pad, i, r, n, exact, qnan, prod, y)
                    _accumulate(acc, y, skip, i, r, n, exact, qnan)
                for j in range(nj):
                    out[row, i, j, n] = acc[j]


ORDER = ("_pattern", "_range", "_ftz", "_gather", "_tree", "_accumulate", "_rows")
"""Compiled in this order (`ir.exact_kernels.compile`): a kernel calls only those before it."""
INLINE = ("_pattern", "_ftz")
"""Inlined into their callers (numba's `inline="always"`): the innermost loops."""
