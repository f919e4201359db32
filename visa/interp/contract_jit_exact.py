"""The interpreter's compiled float contraction when nothing can be flushed, padded or
skipped but whole time steps (`visa.interp.contract_jit`: `exact` holds, no padded product,
no padded `packet_reduce` column, eight lanes, every column's TRF elements consecutive),
bit for bit its general kernel.

One step of one output column of one row is an adder tree over its `g` leaves for each of
the eight lanes. Here the leaves are in natural order (leaf l reads stream element
`base + l` and TRF element `base + l`), and the tree is written out for the leaf count
(`_x1` .. `_x64`: each sum's left operand is the lower half of its leaves, as the engine
adds them), one loop over the eight lanes around it: LLVM makes that loop one vector of
eight float32 (the TRF elements are stored lanes innermost). Each step's stream values
and TRF block are passed as their own slices and the indices are unsigned, so that numba
emits no negative-index wraparound and LLVM needs few run-time alias checks. Without
fast-math nothing is regrouped or fused; the steps join each accumulator from +0 in time
order, as in the general kernel.

`ORDER` is compiled by `contract_jit._compiled` (the same disk cache); this module imports
nothing from numba and nothing of the cpu backend.
"""

from __future__ import annotations

import numpy as np

__all__ = ["INLINE", "LANES", "ORDER", "TREES"]

LANES = 8
"""The lane count of the vectorized kernel (every other count takes the general one)."""
TREES = (1, 2, 4, 8, 16, 32, 64)
"""Leaf counts with a written-out tree."""

_L = np.uint64(LANES)
_U0, _U1, _U2, _U4, _U8, _U16, _U32 = (np.uint64(k) for k in (0, 1, 2, 4, 8, 16, 32))
_ZERO = np.float32(0.0)


def _x1(s, w, ow, l, v):
    """Leaf l's product for lane v: stream value s[l] times TRF element l of lane v (w flat,
    the step's (leaf, lane) block starting at ow)."""
    return s[l] * w[ow + l * _L + v]


def _x2(s, w, ow, l, v):
    """The tree over the leaves [l, l + 2), and so on: the lower half is the left operand."""
    return s[l] * w[ow + l * _L + v] + s[l + _U1] * w[ow + (l + _U1) * _L + v]


def _x4(s, w, ow, l, v):
    return _x2(s, w, ow, l, v) + _x2(s, w, ow, l + _U2, v)


def _x8(s, w, ow, l, v):
    return _x4(s, w, ow, l, v) + _x4(s, w, ow, l + _U4, v)


def _x16(s, w, ow, l, v):
    return _x8(s, w, ow, l, v) + _x8(s, w, ow, l + _U8, v)


def _x32(s, w, ow, l, v):
    return _x16(s, w, ow, l, v) + _x16(s, w, ow, l + _U16, v)


def _x64(s, w, ow, l, v):
    return _x32(s, w, ow, l, v) + _x32(s, w, ow, l + _U32, v)


def _tree_add(s, w, ow, g, nl, acc):
    """acc[v] += the tree of the g leaves of the step (stream values `s`, the TRF block of
    w at ow) for every lane v < nl: one loop over the lanes around the tree written out for
    g (`nl` a run-time count: LLVM vectorizes the loop instead of unrolling it)."""
    if g == 32:
        for v in range(nl):
            acc[v] = acc[v] + _x32(s, w, ow, _U0, v)
    elif g == 16:
        for v in range(nl):
            acc[v] = acc[v] + _x16(s, w, ow, _U0, v)
    elif g == 64:
        for v in range(nl):
            acc[v] = acc[v] + _x64(s, w, ow, _U0, v)
    elif g == 8:
        for v in range(nl):
            acc[v] = acc[v] + _x8(s, w, ow, _U0, v)
    elif g == 4:
        for v in range(nl):
            acc[v] = acc[v] + _x4(s, w, ow, _U0, v)
    elif g == 2:
        for v in range(nl):
            acc[v] = acc[v] + _x2(s, w, ow, _U0, v)
    else:
        for v in range(nl):
            acc[v] = acc[v] + _x1(s, w, ow, _U0, v)


def exact_kernel(codes, table, shift, wt, which, sstep, tread, q, rr, wofs0, g, tpad, out):
    """out[row, lane, slot, column]: codes (rows, stream elements) the fed packets, `table`
    their f32 bits (or `shift`: every code widens as code << 16, a bf16 without zero-exponent
    or all-ones-exponent codes), wt (TRF operands, elements x LANES) float32 of which row r
    reads wt[which[r]], wofs0[j] column j's first TRF element within a read."""
    n_slots, n_steps = sstep.shape
    ug, nl = np.uint64(g), np.uint64(out.shape[1])
    sv_bits = np.empty(g, np.uint32)
    sv = sv_bits.view(np.float32)
    acc = np.empty(LANES, np.float32)
    for r in range(codes.shape[0]):
        c_r, w_r = codes[r], wt[which[r]]
        for kk in range(n_slots):
            for j in range(wofs0.size):
                acc[:] = _ZERO
                for t in range(n_steps):
                    if tpad.shape[0] > 0 and tpad[kk, t]:
                        continue
                    sb = np.uint64(sstep[kk, t] * q + j * g)
                    if shift:
                        for k in range(ug):
                            sv_bits[k] = np.uint32(c_r[sb + k]) << np.uint32(16)
                    else:
                        for k in range(ug):
                            sv_bits[k] = table[np.uint64(c_r[sb + k])]
                    ow = np.uint64(tread[kk, t] * rr + wofs0[j]) * _L
                    _tree_add(sv, w_r, ow, g, nl, acc)
                for v in range(LANES):
                    out[r, v, kk, j] = acc[v]


ORDER = ("_x1", "_x2", "_x4", "_x8", "_x16", "_x32", "_x64", "_tree_add", "exact_kernel")
"""Compiled in this order: a kernel calls only those before it."""
INLINE = ("_x1", "_x2", "_x4", "_x8", "_x16", "_x32", "_x64", "_tree_add")
"""Inlined into their callers: the written-out trees and the lane loop."""
