"""The TRF operand of the interpreter's compiled float contraction (`visa.interp.contract_jit`):
each row's TRF elements read as (element, lane) float32 bits, lanes innermost, the layout
the kernels take as their vector.

A row's operand is the first `n` elements of every lane of its slice's TRF tensor; lane
`l`'s element `e` sits at element `l * lane_elems + base + e` of the slice's TRF rows
(`cells`: (TRF rows, slices, elements per TRF row) codes). Many rows read the same codes
(a GEMM's weights are the same for every slice along M), so the driver widens one copy per
distinct slice: `digest` sums every slice's words of the TRF rows the operand touches with
position weights (equal rows, equal digests), `same` compares those rows word for word (a
digest only proposes; a row's bytes outside the operand can only keep two slices apart),
and `widen_slice` widens one slice, a TRF row's run of elements at a time.

`ORDER` is compiled by `contract_jit._compiled` (the same disk cache); this module imports
nothing from numba.
"""

from __future__ import annotations

import numpy as np

__all__ = ["INLINE", "ORDER"]


def digest(words, slices, rows, out):
    """out[i] = the sum over slice slices[i]'s words of the TRF rows `rows` of word x (an
    odd weight by its position), in uint64 (wrapping: a digest only proposes). `words`:
    (TRF rows, slices, words a row), the slices of a TRF row side by side, walked in
    memory order."""
    n_words = words.shape[2]
    out[:] = 0
    for r in range(rows.size):
        row = rows[r]
        k = np.uint64(2 * r * n_words + 1)
        for i in range(slices.size):
            src, h = words[row, slices[i]], out[i]
            for c in range(n_words):
                h += src[c] * (k + np.uint64(2 * c))
            out[i] = h


def same(words, slices, other, rows, out):
    """out[i] = whether slices slices[i] and other[i] hold the same words in the TRF rows
    `rows` (walked as `digest` walks them; a slice is its own match without a read)."""
    n_words = words.shape[2]
    out[:] = True
    for r in range(rows.size):
        row = rows[r]
        for i in range(slices.size):
            if slices[i] == other[i] or not out[i]:
                continue
            a, b, diff = words[row, slices[i]], words[row, other[i]], np.uint64(0)
            for c in range(n_words):
                diff |= a[c] ^ b[c]
            if diff:
                out[i] = False


def operand_rows(lane_elems, base, n, lanes, per_row):
    """The TRF rows holding some of the first `n` elements of a lane (lane `l`'s element `e`
    at element `l * lane_elems + base + e` of a slice's rows of `per_row` elements), sorted:
    the rows `digest` and `same` read whole (a row's other elements only make two slices
    less alike, never more)."""
    firsts = np.arange(lanes, dtype=np.int64) * lane_elems + base
    lo, hi = firsts // per_row, (firsts + n - 1) // per_row + 1
    return np.unique(np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in zip(lo.tolist(), hi.tolist())]))


def words_of(cells):
    """The slices' TRF rows as (TRF rows, slices, words) of the widest unsigned type that
    divides a slice's row (the same bytes, fewer compares)."""
    if cells.strides[2] != cells.itemsize:
        cells = np.ascontiguousarray(cells)
    row_bytes = cells.shape[2] * cells.itemsize
    for dtype in (np.uint64, np.uint32, np.uint16):
        if row_bytes % np.dtype(dtype).itemsize == 0 and np.dtype(dtype).itemsize >= cells.itemsize:
            return cells.view(dtype)
    return cells


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
