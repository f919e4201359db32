"""The TRF operand of the interpreter's compiled float contraction (`visa.interp.contract_jit`):
each row's TRF elements read as (element, lane) float32 bits, lanes innermost, the layout
the kernels take as their vector.

A row's operand is the first `n` elements of every lane of its slice's TRF tensor; lane
`l`'s element `e` sits at element `l * lane_elems + base + e` of the slice's TRF rows
(`cells`: (TRF rows, slices, elements per TRF row) codes). Many rows read the same codes
(a GEMM's weights are the same for every slice along M), so the driver widens one copy per
distinct slice: `digest` sums every slice's codes with position weights (equal codes, equal
digests), `same` compares slices code for code (a digest only proposes), and `widen_slice`
widens one slice. Every walk goes a TRF row's run of elements at a time.

`ORDER` is compiled by `contract_jit._compiled` (the same disk cache); this module imports
nothing from numba.
"""

from __future__ import annotations

import numpy as np

__all__ = ["INLINE", "ORDER"]


def digest(cells, slices, lane_elems, base, n, lanes, out):
    """out[i] = the sum over slice slices[i]'s operand codes of code x (its position + 1),
    in uint32 (wrapping: a digest only proposes). Every slice at once, a TRF row at a time:
    the slices of a TRF row lie side by side."""
    per_row = cells.shape[2]
    out[:] = 0
    k = np.uint32(1)
    for lane in range(lanes):
        x = lane * lane_elems + base
        row = x // per_row
        col = x - row * per_row
        e = 0
        while e < n:
            run = min(per_row - col, n - e)
            for i in range(slices.size):
                src, h = cells[row, slices[i]], out[i]
                for c in range(run):
                    h += np.uint32(src[col + c]) * (k + np.uint32(c))
                out[i] = h
            k += np.uint32(run)
            e += run
            row, col = row + 1, 0


def same(cells, slices, other, lane_elems, base, n, lanes, out):
    """out[i] = whether slices slices[i] and other[i] hold the same operand codes (walked as
    `digest` walks them)."""
    per_row = cells.shape[2]
    out[:] = True
    for lane in range(lanes):
        x = lane * lane_elems + base
        row = x // per_row
        col = x - row * per_row
        e = 0
        while e < n:
            run = min(per_row - col, n - e)
            for i in range(slices.size):
                a, b, diff = cells[row, slices[i]], cells[row, other[i]], 0
                for c in range(run):
                    diff |= a[col + c] ^ b[col + c]
                if diff:
                    out[i] = False
            e += run
            row, col = row + 1, 0


def widen_slice(cells, sl, lane_elems, base, n, lanes, mag, table, dst):
    """dst[e * lanes + lane] = the f32 bits of element e of lane `lane` of slice sl (a bf16
    code with an exponent neither all zeros nor all ones by a shift, which is its table
    entry; every other code through `table`); returns the largest `mag`-masked code read
    and the smallest nonzero one minus one (`mag` when every code is a zero)."""
    top, low = 0, mag
    per_row = cells.shape[2]
    for lane in range(lanes):
        x = lane * lane_elems + base
        row = x // per_row
        col = x - row * per_row
        e = 0
        while e < n:
            run = min(per_row - col, n - e)
            src = cells[row, sl]
            for c in range(run):
                code = src[col + c]
                u = np.uint32(code)
                f = u & np.uint32(0x7F80)
                if cells.itemsize == 2 and f != 0 and f != np.uint32(0x7F80):
                    dst[(e + c) * lanes + lane] = u << np.uint32(16)
                else:
                    dst[(e + c) * lanes + lane] = table[code]
                m = np.int64(code) & mag
                top = max(top, m)
                low = min(low, (m + mag) & mag)
            e += run
            row, col = row + 1, 0
    return top, low


ORDER = ("digest", "same", "widen_slice")
"""Compiled in this order."""
INLINE = ()
"""None is inlined: each is called from Python."""
