"""The general kernel of the compiled float core (`backends.cpu.contract_jit`): every
float contraction the exact register tiles (`backends.cpu.contract_jit_exact`) do not
take (a product or sum that may be flushed, padding leaves, skipped time steps), bit for
bit the numpy core of `backends.cpu.contract_float`; and `_range`, the scan of an
operand's magnitudes that decides whether a contraction is exact (`_bounds` the same of
widened patterns, for the BLAS path's guard).

Per spatial row, the operand cells are gathered as float32 bits (`_gather`), then every
(row, column) pair's products of a time step are summed by the adder tree (leaves in the
layout's bit-reversed order: each level adds its second half to its first) and
accumulated in stream order (`_accumulate`), each result flushed unless `exact`: the
arithmetic of the interpreter's general kernel too (`ir.exact_kernels.sums`), this module
adding the gathered layout, its padding leaves (`_pad`) and skipped steps.

`ORDER` is compiled by `contract_jit._compiled` (`ir.exact_kernels.compile`), after the
shared sums; this module imports nothing from numba.
"""

from __future__ import annotations

import numpy as np

from ir.exact_kernels import sums

from backends.cpu import contract_jit_exact as jit_exact

__all__ = ["INLINE", "ORDER"]

_ZERO = np.float32(0.0)


def _range(raw, starts, ends, wide):
    """(largest magnitude pattern, smallest magnitude pattern less one) of the cells
    [starts[k], ends[k]) of every row, the sign bit masked off; the subtraction wraps
    around the unsigned width, so that a zero pattern counts as the largest value and the
    second is all ones when every pattern is zero (`_range_of` reads it). Unsigned
    indices, constant masks, branch-free min / max over runs of cells (bf16 patterns:
    `ir.exact_kernels.sums.bf16_bounds`) and the results as found: the loops vectorize."""
    if wide:
        top, low = np.uint32(0), np.uint32(0xFFFFFFFF)
        for row in range(raw.shape[0]):
            cells = raw[row]
            for k in range(starts.size):
                for c in range(np.uint64(starts[k]), np.uint64(ends[k])):
                    m = jit_exact._bits(cells, c, True) & np.uint32(0x7FFFFFFF)
                    top = max(top, m)
                    low = min(low, np.uint32(m - np.uint32(1)))
        return np.int64(top), np.int64(low)
    top16, low16 = np.uint16(0), np.uint16(0xFFFF)
    for row in range(raw.shape[0]):
        for k in range(starts.size):
            top16, low16 = sums.bf16_bounds(raw[row], np.uint64(starts[k]), np.uint64(ends[k]), 0, top16, low16)
    return np.int64(top16), np.int64(low16)


def _bounds(bits):
    """(largest magnitude, smallest magnitude less one, OR of the magnitudes) of float32
    patterns `bits` (1-D uint32), the sign bit masked off; the subtraction wraps as in
    `_range` (all ones when every pattern is zero). One pass, no branch: it vectorizes."""
    top, low, ors = np.uint32(0), np.uint32(0xFFFFFFFF), np.uint32(0)
    for c in range(bits.size):
        m = bits[c] & np.uint32(0x7FFFFFFF)
        top = max(top, m)
        low = min(low, np.uint32(m - np.uint32(1)))
        ors |= m
    return np.int64(top), np.int64(low), np.int64(ors)


def _gather(cells, index, wide, out):
    """out[p] = the float32 bits of cell index[p] (`contract_jit_exact._bits`)."""
    if wide:
        for p in range(index.size):
            out[p] = jit_exact._bits(cells, np.uint64(index[p]), True)
    else:
        for p in range(index.size):
            out[p] = jit_exact._bits(cells, np.uint64(index[p]), False)


def _pad(prod, pad, i, r, n):
    """prod[l, j] = +0 where leaf l of column j is padding at (i, r, n) (`pad`'s axes of
    length one broadcast)."""
    pi, pr, pn = min(i, pad.shape[0] - 1), min(r, pad.shape[3] - 1), min(n, pad.shape[4] - 1)
    for l in range(prod.shape[0]):
        pl = min(l, pad.shape[2] - 1)
        for j in range(prod.shape[1]):
            if pad[pi, min(j, pad.shape[1] - 1), pl, pr, pn]:
                prod[l, j] = _ZERO


def _accumulate(acc, acc_bits, prod, skip, i, r, n, exact):
    """acc[0] ⊕= prod[0], except where the time step `r` is padding for the column."""
    if skip.size == 0:
        sums.add(acc, acc_bits, prod, exact)
        return
    nj = acc.shape[1]
    si, sr, sn = min(i, skip.shape[0] - 1), min(r, skip.shape[2] - 1), min(n, skip.shape[3] - 1)
    for j in range(nj):
        if not skip[si, min(j, skip.shape[1] - 1), sr, sn]:
            acc[0, j] = acc[0, j] + prod[0, j]
    if not exact:  # a skipped column's value was flushed already: flushing is idempotent
        sums.flush(acc_bits, 0, nj)


def _rows(raw_a, raw_w, ca, cw, ia, iw, wide_a, wide_w, pad, skip, exact, out, r0, r1):
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
    bits = prod.view(np.uint32)
    acc = np.empty((1, nj), np.float32)
    acc_bits = acc.view(np.uint32)
    ident = np.arange(g)                    # the gathered leaves are in the tree's (bit-reversed) order
    quad = exact and pad.size == 0 and g >= 4    # `sums.leaves` sums the first two levels
    for row in range(r0, r1):
        _gather(raw_a[ca[row]], ia.ravel(), wide_a, ua)
        _gather(raw_w[cw[row]], iw.ravel(), wide_w, uw)
        for n in range(nn):
            for i in range(ni):
                acc[0, :] = _ZERO
                for r in range(nr):
                    m = sums.leaves(fa[i, r, n], fw[r, n], 0, ident, ident, prod, bits, exact, quad)
                    if pad.size:                                # padding leaves are +0
                        _pad(prod, pad, i, r, n)
                    sums.fold(prod, bits, m, exact)
                    _accumulate(acc, acc_bits, prod, skip, i, r, n, exact)
                for j in range(nj):
                    out[row, i, j, n] = acc[0, j]


ORDER = ("_range", "_bounds", "_gather", "_pad", "_accumulate", "_rows")
"""Compiled in this order, after `ir.exact_kernels.sums` and `contract_jit_exact` (`ir.exact_kernels.compile`):
a kernel calls only those before it."""
INLINE = ()
"""None inlined here: the shared sums and `_bits` inline themselves."""
