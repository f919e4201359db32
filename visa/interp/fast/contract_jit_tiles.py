"""The interpreter's exact float contraction (`visa.interp.fast.contract_jit`, when `exact`
holds, no product or `packet_reduce` column is padded, the lanes are eight and every
column's TRF elements are consecutive), computed `ROWS` rows at a time.

Rows that read the same TRF operand (a GEMM's slices along M all read the same weights)
are grouped `ROWS` to a tile; a group whose size is not a multiple of `ROWS` repeats its
last row (computed twice, written twice with the same bits). For one step of one kept
slot pair and output column, a tile is the shared 4 x 16 tile of
`ir.exact_kernels.tiles` (its rows found through their offsets into the widened
stream): per leaf l in natural order, one 16-float vector of the paired TRF operand
(`contract_jit_weights.lay_paired`: the first slot's eight lanes, then its partner's)
times each row's stream value l broadcast, the products summed as the engine's adder
tree and added to the row's accumulator. The accumulators start at +0 and take the
steps in time order. When no slot has a partner, the 4 x 16 tile would compute each slot
in both halves: `octet_kernel` takes `OCTET` rows a tile instead, the shared 8 x 8 tile
against the operand's eight lanes (`contract_jit._by_octets` decides).

`ORDER` is compiled by `contract_jit._compiled` after the shared tiles; loading this
module loads neither numba nor llvmlite. It imports nothing of the cpu backend.
"""

from __future__ import annotations

import functools

import numpy as np

from ir.exact_kernels import tiles as kt
from visa.interp.fast import contract_jit_scan as jit_scan
from visa.interp.fast import contract_jit_weights as jit_weights

__all__ = ["INLINE", "OCTET", "ORDER", "ROWS", "exact_kernel", "octet_kernel", "slot_quads", "tile_order"]

ROWS = 4
"""Rows a tile (the shared 4 x 16 tile, `ir.exact_kernels.tiles`): ROWS accumulators and
ROWS x (tree depth + 1) live vectors fit the 32 vector registers for every leaf count up to 64."""
WIDTH = 16
"""Floats a vector: a slot pair's eight lanes each (the shared 4 x 16 tile)."""
OCTET = 8
"""Rows and lanes of the shared 8 x 8 tile (`octet_kernel`: slots without a partner)."""
_ZERO = np.float32(0.0)


def _slots(held):
    """(each row's row of the widened copies, how many): one copy per stored row (held[r]
    is the row whose codes row r repeats, itself when stored)."""
    slot = np.empty(held.size, np.int64)
    k = 0
    for r in range(held.size):
        if held[r] == r:
            slot[r] = k
            k += 1
    for r in range(held.size):
        slot[r] = slot[held[r]]
    return slot, k


def _by_slots(row, k, n, wide, offs, acc, w_all, operand, sstep, tread, rr, wofs0, g, tpad, out, pairs, quads):
    """The tiles of one row that shares its TRF operand with no other row (a batched GEMM:
    a problem per slice): a tile's ROWS rows are ROWS slot pairs of this row that read the
    same weights at every step (`slot_quads`), each at its own stream offset."""
    n_steps = sstep.shape[1]
    uw = np.uint64(WIDTH)
    for q in range(quads.shape[0]):
        kk0 = pairs[quads[q, 0], 0]
        w = w_all[pairs[quads[q, 0], 2], operand]
        for j in range(wofs0.size):
            acc[:] = _ZERO
            for t in range(n_steps):
                if tpad.shape[0] > 0 and tpad[kk0, t]:
                    continue
                for z in range(ROWS):
                    offs[z] = k * n + sstep[pairs[quads[q, z], 0], t] + j * g
                kt.tile_4x16(g, wide, offs, np.uint64(0), w, np.uint64(tread[kk0, t] * rr + wofs0[j]) * uw, acc)
            for z in range(ROWS):
                kk, k2 = pairs[quads[q, z], 0], pairs[quads[q, z], 1]
                for v in range(WIDTH // 2):
                    out[row, v, kk, j] = acc[z * WIDTH + v]
                if k2 >= 0:
                    for v in range(WIDTH // 2):
                        out[row, v, k2, j] = acc[z * WIDTH + WIDTH // 2 + v]


def _scan_codes(src, scan):
    """With a `scan` of two, scan[0] / scan[1] raised and lowered by the
    `contract_jit_scan._row_range` of src's bf16 codes."""
    if scan.size:
        scan[0], scan[1] = jit_scan._row_range(src, 0x7FFF, scan[0], scan[1])


def _widen_row(src, table, shift, bits, scan):
    """bits[c] = the f32 bits of src[c] (`code_bits`), then `_scan_codes`."""
    for c in range(src.size):
        bits[c] = jit_weights.code_bits(src[c], table, shift)
    _scan_codes(src, scan)


def _by_pairs(rows, wt, operand, wide, offs, acc, sstep, tread, rr, wofs0, g, tpad, out, pairs):
    """The tiles of ROWS widened rows (at `offs` in `wide`) that read one TRF operand: each
    pair of slots (`pairs`) at a time, every column read of `wofs0`, its steps summed in `acc`."""
    n_steps, uw = sstep.shape[1], np.uint64(WIDTH)
    for p in range(pairs.shape[0]):
        kk, k2 = pairs[p, 0], pairs[p, 1]
        w = wt[pairs[p, 2], operand]
        for j in range(wofs0.size):
            acc[:] = _ZERO
            for t in range(n_steps):
                if tpad.shape[0] > 0 and tpad[kk, t]:
                    continue
                kt.tile_4x16(g, wide, offs, np.uint64(sstep[kk, t] + j * g), w, np.uint64(tread[kk, t] * rr + wofs0[j]) * uw, acc)
            for z in range(ROWS):
                for v in range(WIDTH // 2):
                    out[rows[z], v, kk, j] = acc[z * WIDTH + v]
                if k2 >= 0:
                    for v in range(WIDTH // 2):
                        out[rows[z], v, k2, j] = acc[z * WIDTH + WIDTH // 2 + v]


def exact_kernel(codes, table, shift, wt, which, order, held, sstep, tread, rr, wofs0, g, tpad, out, pairs, quads,
                 wcodes, wshifts, wtable, woffs, wn, scan, wscan):
    """out[row, lane, slot, column] for the rows of `order` (`tile_order`: each run of ROWS
    entries reads one TRF operand). codes (rows, stream elements) the fed packets, row r
    the same codes as row held[r] (widened once, by the first tile that reads them, just
    before: a value stored right before its broadcast load would stall the load; a row
    alone in its group into a scratch row of its own, which stays in cache, kept for the
    next such row when it repeats the same codes), `table`
    their f32 bits (or `shift`, `contract_jit_weights.code_bits`); wt (shifts, operands, elements x WIDTH)
    float32 (`lay_paired`'s layout), row r reading wt[., which[r]]; sstep / tread (slots, steps)
    each step's first stream element and TRF read; wofs0[j] column j's first TRF element
    within a read of `rr`; tpad (slots, steps) skipped steps (empty: none); pairs[p] =
    (slot, its partner or -1, the index of their shift); quads (`slot_quads`) the pairs
    ROWS at a time that read the same weights, for a row alone in its group (`_by_slots`).
    With `wcodes` (operands, 8 lanes x wn codes; every row alone), `wt` is not read: a row's
    weights are laid out as `lay_paired` lays them (woffs, wshifts, wtable) just before its
    tiles. `scan` / `wscan`: `_scan_codes` of those stream / weight codes (`contract_jit._scanned`)."""
    n = codes.shape[1]
    slot, n_held = _slots(held)
    wide = np.empty(n_held * n, np.float32)
    bits = wide.view(np.uint32)
    done = np.zeros(n_held, np.bool_)
    offs = np.empty(ROWS, np.int64)
    acc = np.empty(ROWS * WIDTH, np.float32)
    one = np.empty(n, np.float32)      # a row alone, widened in cache just before its tiles
    wrow_bits = np.empty((max(woffs.size, 1), 1, wn * WIDTH if wcodes.shape[0] > 0 else 0), np.uint32)
    widened = -1       # the stored row whose codes `one` holds (rows alone that share their stream widen it once)
    for i in range(0, order.size, ROWS):
        rows = order[i:i + ROWS]
        operand = which[rows[0]]
        if quads.shape[0] > 0 and rows[ROWS - 1] == rows[0]:  # a row alone: its slots make the tiles
            if held[rows[0]] != widened:
                _widen_row(codes[held[rows[0]]], table, shift, one.view(np.uint32), scan)
                widened = held[rows[0]]
            if wcodes.shape[0] > 0:  # its weights laid out (and scanned, with a `wscan`) in cache too
                jit_weights.lay_paired(wcodes[operand:operand + 1], wn, woffs, wtable, wshifts[operand], wrow_bits,
                                       np.int64(0))  # not a literal 0: the signature a host call compiles
                _scan_codes(wcodes[operand], wscan)
            w_all, w_op = (wrow_bits.view(np.float32), 0) if wcodes.shape[0] > 0 else (wt, operand)
            _by_slots(rows[0], 0, n, one, offs, acc, w_all, w_op, sstep, tread, rr, wofs0, g, tpad, out, pairs, quads)
            continue
        _widen_tile(rows, codes, table, shift, held, slot, n, bits, done, offs)
        _by_pairs(rows, wt, operand, wide, offs, acc, sstep, tread, rr, wofs0, g, tpad, out, pairs)


def _widen_tile(rows, codes, table, shift, held, slot, n, bits, done, offs):
    """offs[z] = where row rows[z]'s widened codes start in `bits` (their stored row's slot),
    widening those no tile has widened yet."""
    for z in range(rows.size):
        k = slot[rows[z]]
        offs[z] = k * n
        if not done[k]:
            src, dst = codes[held[rows[z]]], bits[k * n:(k + 1) * n]
            for c in range(n):
                dst[c] = jit_weights.code_bits(src[c], table, shift)
            done[k] = True


def octet_kernel(codes, table, shift, wt, which, order, held, sstep, tread, rr, wofs0, g, tpad, out):
    """`exact_kernel` for slots that have no partner, OCTET rows at a time: the shared 8 x 8
    tile (`ir.exact_kernels.tiles`), eight rows that read one TRF operand (`order`,
    `tile_order(which, OCTET)`) against the operand's eight lanes, so no product is computed
    twice (the 4 x 16 tile computes an unpaired slot in both halves). wt (operands, elements
    x LANES) float32, each element's eight lanes in a row; the rest as `exact_kernel`'s. The
    sums are the same tree in the same order: the same bits."""
    n, n_steps = codes.shape[1], sstep.shape[1]
    slot, n_held = _slots(held)
    wide = np.empty(n_held * n, np.float32)
    done = np.zeros(n_held, np.bool_)
    offs = np.empty(OCTET, np.int64)
    acc = np.empty(OCTET * OCTET, np.float32)
    uo = np.uint64(OCTET)
    for i in range(0, order.size, OCTET):
        rows = order[i:i + OCTET]
        _widen_tile(rows, codes, table, shift, held, slot, n, wide.view(np.uint32), done, offs)
        w = wt[which[rows[0]]]
        for kk in range(sstep.shape[0]):
            for j in range(wofs0.size):
                acc[:] = _ZERO
                for t in range(n_steps):
                    if tpad.shape[0] > 0 and tpad[kk, t]:
                        continue
                    kt.tile_8x8(g, wide, offs, np.uint64(sstep[kk, t] + j * g), w,
                                np.uint64(tread[kk, t] * rr + wofs0[j]) * uo, acc)
                for z in range(OCTET):
                    for v in range(OCTET):
                        out[rows[z], v, kk, j] = acc[z * OCTET + v]


def tile_order(which: np.ndarray, rows: int = ROWS) -> np.ndarray:
    """The rows grouped by the TRF operand they read (`which`), in order of first use and
    row order within a group, each group padded to a multiple of `rows` by repeating its
    last row (remembered by `which`'s contents: a kernel's tiles repeat it)."""
    return _tile_order(np.ascontiguousarray(which, np.int64).tobytes(), rows)


@functools.lru_cache(maxsize=64)
def _tile_order(which: bytes, size: int) -> np.ndarray:
    groups: dict[int, list[int]] = {}
    for r, k in enumerate(np.frombuffer(which, np.int64).tolist()):
        groups.setdefault(k, []).append(r)
    order: list[int] = []
    for rows in groups.values():
        order += rows + rows[-1:] * (-len(rows) % size)
    out = np.array(order, np.int64)
    out.setflags(write=False)
    return out


def slot_quads(pairs: np.ndarray, tread: np.ndarray, tpad: np.ndarray) -> np.ndarray:
    """The slot pairs (indices into `pairs`) ROWS at a time, each ROWS reading the same
    weights (the same TRF reads of the first slot, shift and skipped steps, a partner or
    none), a group's last pair repeated to fill its last tile; (0, ROWS) when no two
    pairs read the same weights (then a row alone gains nothing by them). Remembered by the
    arrays' contents (a contraction's slots are the same every run: 2 ms a run of
    `drawn_s1_3`'s 2048 slots grouped again); a copy (the compiled kernels take writable arrays)."""
    keys = ((a.dtype.str, a.shape, np.ascontiguousarray(a).tobytes()) for a in (pairs, tread, tpad))
    return _slot_quads(*keys).copy()


@functools.lru_cache(maxsize=64)
def _slot_quads(*arrays: tuple) -> np.ndarray:
    pairs, tread, tpad = (np.frombuffer(data, dtype).reshape(shape) for dtype, shape, data in arrays)
    return _grouped(pairs, tread, tpad)


def _grouped(pairs: np.ndarray, tread: np.ndarray, tpad: np.ndarray) -> np.ndarray:
    """`slot_quads`, computed."""
    groups: dict[tuple, list[int]] = {}
    for p, (kk, k2, sh) in enumerate(pairs.tolist()):
        key = (tread[kk].tobytes(), sh, k2 >= 0, tpad[kk].tobytes() if tpad.shape[0] else b"")
        groups.setdefault(key, []).append(p)
    if all(len(g) == 1 for g in groups.values()):
        return np.zeros((0, ROWS), np.int64)
    flat = [p for g in groups.values() for p in g + g[-1:] * (-len(g) % ROWS)]
    return np.array(flat, np.int64).reshape(-1, ROWS)


ORDER = ("_slots", "_by_slots", "_by_pairs", "_scan_codes", "_widen_row", "_widen_tile", "exact_kernel", "octet_kernel")
"""Compiled in this order (`contract_jit._compiled`), after `ir.exact_kernels.tiles`."""
INLINE = ()
"""None inlined: the shared tiles inline themselves."""
