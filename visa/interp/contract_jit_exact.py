"""The interpreter's compiled float contraction when nothing can be flushed, padded or
skipped but whole time steps (`visa.interp.contract_jit`: `exact` holds, no padded product,
no padded `packet_reduce` column, eight lanes, every column's TRF elements consecutive),
bit for bit its general kernel.

One step of one output column of one row is an adder tree over its `g` leaves for each of
the eight lanes. Here the leaves are in natural order (leaf l reads stream element
`base + l` and TRF element `base + l`), and the tree is written out for the leaf count
(`_x1` .. `_x64`: each sum's left operand is the lower half of its leaves, as the engine
adds them), one loop over sixteen lanes around it: two time slots that read the same
stream values and TRF reads a constant distance apart (a GEMM's slots along N) go
together, the TRF operand laid out (element, 16): the first slot's eight lanes, then
the second's, those `shift` TRF reads further on (`paired_weights`). LLVM makes that loop
one vector of sixteen float32 (an AVX-512 register; eight lanes alone it left scalar). A
slot without a partner is computed in both halves and written once. Each step's TRF
block is passed as its own slice and the indices are unsigned, so that numba emits no
negative-index wraparound and LLVM needs few run-time alias checks. Without fast-math
nothing is regrouped or fused; the steps join each accumulator from +0 in time order, as
in the general kernel.

`ORDER` is compiled by `contract_jit._compiled` (the same disk cache); this module imports
nothing from numba and nothing of the cpu backend.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["INLINE", "LANES", "MAX_SHIFTS", "ORDER", "TREES", "paired_weights", "slot_pairs"]

LANES = 8
"""The lane count of the vectorized kernel (every other count takes the general one)."""
TREES = (1, 2, 4, 8, 16, 32, 64)
"""Leaf counts with a written-out tree."""
MAX_SHIFTS = 4
"""Distinct distances between paired slots' TRF reads (one laid-out TRF copy each)."""

_W = np.uint64(2 * LANES)
_U0, _U1, _U2, _U4, _U8, _U16, _U32 = (np.uint64(k) for k in (0, 1, 2, 4, 8, 16, 32))
_ZERO = np.float32(0.0)


def _x1(s, w, l, v):
    """Leaf l's product for vector lane v: stream value s[l] times element l of lane v of
    the step's (leaf, 16) TRF block `w`."""
    return s[l] * w[l * _W + v]


def _x2(s, w, l, v):
    """The tree over the leaves [l, l + 2), and so on: the lower half is the left operand."""
    return s[l] * w[l * _W + v] + s[l + _U1] * w[(l + _U1) * _W + v]


def _x4(s, w, l, v):
    return _x2(s, w, l, v) + _x2(s, w, l + _U2, v)


def _x8(s, w, l, v):
    return _x4(s, w, l, v) + _x4(s, w, l + _U4, v)


def _x16(s, w, l, v):
    return _x8(s, w, l, v) + _x8(s, w, l + _U8, v)


def _x32(s, w, l, v):
    return _x16(s, w, l, v) + _x16(s, w, l + _U16, v)


def _x64(s, w, l, v):
    return _x32(s, w, l, v) + _x32(s, w, l + _U32, v)


def _tree_add(s, w, g, acc):
    """acc[v] += the tree of the g leaves of the step (stream values `s`, the TRF block `w`)
    for every vector lane v < 16: one loop around the tree written out for g."""
    if g == 32:
        for v in range(_W):
            acc[v] = acc[v] + _x32(s, w, _U0, v)
    elif g == 16:
        for v in range(_W):
            acc[v] = acc[v] + _x16(s, w, _U0, v)
    elif g == 64:
        for v in range(_W):
            acc[v] = acc[v] + _x64(s, w, _U0, v)
    elif g == 8:
        for v in range(_W):
            acc[v] = acc[v] + _x8(s, w, _U0, v)
    elif g == 4:
        for v in range(_W):
            acc[v] = acc[v] + _x4(s, w, _U0, v)
    elif g == 2:
        for v in range(_W):
            acc[v] = acc[v] + _x2(s, w, _U0, v)
    else:
        for v in range(_W):
            acc[v] = acc[v] + _x1(s, w, _U0, v)


def exact_kernel(codes, table, shift, wt, which, sstep, tread, q, rr, wofs0, g, tpad, out, pairs):
    """out[row, lane, slot, column]: codes (rows, stream elements) the fed packets, `table`
    their f32 bits (or `shift`: every code widens as code << 16, a bf16 without zero-exponent
    or all-ones-exponent codes), wt (shifts, TRF operands, elements x 16) float32 (see
    `paired_weights`) of which row r reads wt[., which[r]], wofs0[j] column j's first TRF
    element within a read; pairs[p] = (slot, its partner or -1, the index of their shift)."""
    n_steps = sstep.shape[1]
    ug = np.uint64(g)
    blk = ug * _W
    sv_bits = np.empty(g, np.uint32)
    sv = sv_bits.view(np.float32)
    acc = np.empty(2 * LANES, np.float32)
    for r in range(codes.shape[0]):
        c_r = codes[r]
        for p in range(pairs.shape[0]):
            kk, k2 = pairs[p, 0], pairs[p, 1]
            w_r = wt[pairs[p, 2], which[r]]
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
                    ow = np.uint64(tread[kk, t] * rr + wofs0[j]) * _W
                    _tree_add(sv, w_r[ow:ow + blk], g, acc)
                for v in range(LANES):
                    out[r, v, kk, j] = acc[v]
                if k2 >= 0:
                    for v in range(LANES):
                        out[r, v, k2, j] = acc[LANES + v]


def slot_pairs(sstep: np.ndarray, tread: np.ndarray, tpad: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """`_slot_pairs`, remembered by the arrays' contents (a kernel's tiles repeat them)."""
    pairs, shifts = _remembered(*((a.dtype.str, a.shape, a.tobytes()) for a in (sstep, tread, tpad)))
    return pairs.copy(), list(shifts)


@functools.lru_cache(maxsize=64)
def _remembered(*arrays: tuple) -> tuple[np.ndarray, tuple[int, ...]]:
    sstep, tread, tpad = (np.frombuffer(data, dtype).reshape(shape) for dtype, shape, data in arrays)
    pairs, shifts = _slot_pairs(sstep, tread, tpad)
    return pairs, tuple(shifts)


def _slot_pairs(sstep: np.ndarray, tread: np.ndarray, tpad: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """(pairs, shifts): every slot once, as (slot, partner, shift index) or (slot, -1, index
    of shift 0). Partners read the same stream steps (`sstep`), skip the same steps (`tpad`,
    empty: none) and TRF reads a constant `shift` apart (the partner's minus the slot's), at
    most `MAX_SHIFTS` distinct shifts (0 included); consecutive slots of a group pair up."""
    keys = sstep if tpad.shape[0] == 0 else np.concatenate([sstep, tpad.astype(sstep.dtype)], axis=1)
    keys = np.ascontiguousarray(keys)
    open_slot: dict[bytes, int] = {}
    shifts: list[int] = [0]
    pairs: list[tuple[int, int, int]] = []
    for kk in range(keys.shape[0]):
        gid = keys[kk].tobytes()
        first = open_slot.pop(gid, None)
        if first is None:
            open_slot[gid] = kk
            continue
        d = tread[kk] - tread[first]
        c = int(d[0])
        if bool((d == c).all()) and (c in shifts or len(shifts) < MAX_SHIFTS):
            if c not in shifts:
                shifts.append(c)
            pairs.append((first, kk, shifts.index(c)))
        else:
            pairs.append((first, -1, 0))
            open_slot[gid] = kk
    pairs += [(kk, -1, 0) for kk in open_slot.values()]
    return np.array(sorted(pairs), np.int64).reshape(-1, 3), shifts


def paired_weights(wt: np.ndarray, shifts: list[int], rr: int) -> np.ndarray:
    """wt (operands, elements, LANES) laid out as (shifts, operands, elements x 16): per
    shift c, element e's eight lanes, then element e + c x rr's (zeros past either end,
    which no paired read reaches). The interpreter writes this layout straight from the
    TRF codes (`contract_jit_weights.lay_paired`); this is its reference."""
    n_ops, n_e, _ = wt.shape
    out = np.empty((len(shifts), n_ops, n_e, 2 * LANES), np.float32)   # every element written below
    out[:, :, :, :LANES] = wt[None]
    for i, c in enumerate(shifts):
        o = min(abs(c * rr), n_e)
        if c * rr >= 0:
            out[i, :, :n_e - o, LANES:] = wt[:, o:]
            out[i, :, n_e - o:, LANES:] = 0
        else:
            out[i, :, o:, LANES:] = wt[:, :n_e - o]
            out[i, :, :o, LANES:] = 0
    return out.reshape(len(shifts), n_ops, -1)


ORDER = ("_x1", "_x2", "_x4", "_x8", "_x16", "_x32", "_x64", "_tree_add", "exact_kernel")
"""Compiled in this order: a kernel calls only those before it."""
INLINE = ("_x1", "_x2", "_x4", "_x8", "_x16", "_x32", "_x64", "_tree_add")
"""Inlined into their callers: the written-out trees and the lane loop."""
