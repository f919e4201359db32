"""The float32 arithmetic of both general float kernels (`backends.cpu.contract_jit_rows`,
`visa.interp.fast.contract_jit`): the engine's products, adder tree, accumulation and flush;
and the scan of bf16 magnitudes that decides whether a contraction is exact (`bf16_bounds`).

A step's products sit in a (g, n) float32 buffer `buf` (`bits` its uint32 view), row k the
leaf leaf[k] (stored bit-reversed, so each tree level adds the buffer's second half to its
first: the adjacent-pair tree of docs/numerics.md), the n columns the vector; leaf l is sv[l]
times row wb + wofs[l] of `w`, in each caller's own layout. Unless `exact` (no product or
sum can be subnormal, infinite or NaN), every result is flushed (`flush`, `ir.contract_arith`).
A caller zeroes its padded products between `leaves` and `fold`. Imports nothing from numba.
"""

from __future__ import annotations

import numpy as np

__all__ = ["INLINE", "ORDER", "add", "bf16_bounds", "flush", "fold", "leaves"]

_ABS = np.uint32(0x7FFFFFFF)
_SIGN = np.uint32(0x80000000)
_MIN_NORMAL = np.uint32(0x00800000)
_INF = np.uint32(0x7F800000)
_QNAN = np.uint32(0x7FC00000)


def flush(bits, k, n):
    """Flush bits[k, :n]: subnormals to a zero of their sign, every NaN to the canonical one
    (docs/numerics.md); a flushed value flushes to itself."""
    for i in range(n):
        u = bits[k, i]
        m = u & _ABS
        if m < _MIN_NORMAL:
            bits[k, i] = u & _SIGN
        elif m > _INF:
            bits[k, i] = _QNAN


def quads(sv, w, wb, wofs, leaf, buf):
    """buf[k, :] for k < g/4: the tree's first two levels over the four adjacent leaves
    leaf[k], leaf[k + g/2], leaf[k + g/4], leaf[k + 3g/4]; no flush and no padding."""
    h, q = leaf.size // 2, leaf.size // 4
    for k in range(q):
        a, b, c, d = leaf[k], leaf[k + h], leaf[k + q], leaf[k + q + h]
        sa, sb, sc, sd = sv[a], sv[b], sv[c], sv[d]
        wa, wb_, wc, wd = w[wb + wofs[a]], w[wb + wofs[b]], w[wb + wofs[c]], w[wb + wofs[d]]
        o = buf[k]
        if o.size == 8:       # eight lanes: one vector
            for i in range(8):
                o[i] = (sa * wa[i] + sb * wb_[i]) + (sc * wc[i] + sd * wd[i])
        else:
            for i in range(o.size):
                o[i] = (sa * wa[i] + sb * wb_[i]) + (sc * wc[i] + sd * wd[i])


def leaves(sv, w, wb, wofs, leaf, buf, bits, exact, quad):
    """The step's products into buf, flushed unless `exact`, and how many rows `fold` has
    left: g, or with `quad` (exact, no padded product, g >= 4) g/4 (`quads`)."""
    g, n = leaf.size, buf.shape[1]
    if quad:
        quads(sv, w, wb, wofs, leaf, buf)
        return g // 4
    for k in range(g):
        s, wr = sv[leaf[k]], w[wb + wofs[leaf[k]]]
        for i in range(n):
            buf[k, i] = s * wr[i]
        if not exact:
            flush(bits, k, n)
    return g


def fold(buf, bits, m, exact):
    """The adder tree of buf's first `m` rows into buf[0], each sum flushed unless `exact`."""
    n = buf.shape[1]
    while m > 1:
        m //= 2
        for k in range(m):
            for i in range(n):
                buf[k, i] = buf[k, i] + buf[k + m, i]
            if not exact:
                flush(bits, k, n)


def add(acc, acc_bits, buf, exact):
    """acc[0] += buf[0] (a step's tree sums joining the accumulators), flushed unless `exact`."""
    n = acc.shape[1]
    for i in range(n):
        acc[0, i] = acc[0, i] + buf[0, i]
    if not exact:
        flush(acc_bits, 0, n)


def bf16_bounds(cells, lo, hi, shift, top, low):
    """(top, low), uint16, raised / lowered by the bf16 magnitudes of cells[lo:hi] (patterns
    cells[c] >> shift: 16 for float32 bits): the largest, and the smallest less one (a zero
    wraps past every other: all ones when every one is zero). Branch-free: it vectorizes."""
    for c in range(lo, hi):
        m = np.uint16(np.uint32(cells[c]) >> np.uint32(shift)) & np.uint16(0x7FFF)
        top = max(top, m)
        low = min(low, np.uint16(m - np.uint16(1)))
    return top, low


ORDER = ("flush", "quads", "leaves", "fold", "add", "bf16_bounds")
"""Compiled in this order (`ir.exact_kernels.compile`): a kernel calls only those before it."""
INLINE = ("quads", "leaves", "fold", "add", "bf16_bounds")
"""Inlined into their callers (numba's `inline="always"`): the innermost loops."""
