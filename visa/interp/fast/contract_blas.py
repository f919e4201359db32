"""A bf16 contraction whose sums provably never round, by float32 matmuls (a speed shortcut of
the compiled float contraction, `visa.interp.fast.contract_jit`; issue 61 item 2).

The chip rounds every product and partial sum of a float contraction to float32 in its own
order (docs/numerics.md). When no rounding can happen at all, every order gives the same
bits, the exact sum's, so a BLAS matmul gives them too. `no_rounding` decides it from the
operands' codes (ir/bf16_exact.py, the bound the cpu backend's `contract_blas` uses too). A
zero sum is +0 on the chip (its sums start from +0); a matmul may leave -0, so +0 is added to
every result. NaN, infinities and subnormal codes are left to the exact kernels, as are
padded products and columns.

The contraction's plan reads, for row r, slot kk and output column j, stream element
`sstep[kk, t] + j g + k` and TRF element `tread[kk, t] rr + (j g + k) mod rr` (every lane)
at step t and leaf k. Slots whose TRF reads are the same (`tread` rows equal) make one
class: for each class the stream elements of every distinct stream row (the `held` ones)
are gathered into A (distinct rows x slots of the class, steps x leaves), the TRF elements
of every distinct TRF operand into B (steps x leaves, operands x lanes), and A @ B holds
every pair of them; each row takes its pair. Used only when the rows use at least half the
pairs (a GEMM broadcast: every distinct stream row meets every distinct TRF operand), and
for sums of at least `MIN_TERMS` products. When the rows' pairs fall into parts that meet
only each other (`row_pairs.pair_grid`: two clusters, each its own blocks of both operands),
each part is its own matmul of a batch: the pairs no row uses are not computed.
"""

from __future__ import annotations

import functools
import numpy as np

from ir.bf16_exact import NONE, no_rounding, unit_floor
from visa.interp.fast.row_pairs import pair_grid
from visa.interp.shortcuts import frozen
from visa.interp.operands import widen_codes
from visa.interp.trf import _stepped   # rows every n-th: a view, not a copy

__all__ = ["MIN_PRODUCTS_IN_PLACE", "MIN_REPEATS", "MIN_TERMS", "MIN_TERMS_IN_PLACE", "codes_range", "no_rounding",
           "pairs", "gathered", "contract", "rows_in_place", "short_sums_pay", "slots_in_place", "tile_products",
           "weights_range"]

MIN_TERMS = 512
"""The fewest products a result sums for the matmuls to run: with fewer, placing the results
costs more than the exact kernel's sums (drawn bf16 GEMMs, contraction step, exact kernel ->
matmuls: K 512: 23 -> 7 ms and 29 -> 18 ms; K 256: 6.5 -> 9.4 ms; K 128: 4.2 -> 8.1 ms and
16 -> 13 ms)..."""

MIN_TERMS_IN_PLACE = 256
"""... unless the products land in place (`slots_in_place`, `rows_in_place`: no picking
copies) and the contraction has at least `MIN_PRODUCTS_IN_PLACE` products: then from this
many terms (drawn_s1_3, K 256: the contraction step 18 -> 12 ms; at K 128, drawn_s1_5, the
matmuls are still the slower)."""

MIN_PRODUCTS_IN_PLACE = 1 << 27
"""Below this many products (rows x lanes x slots x columns x terms) the exact kernel is as
fast or faster at fewer than `MIN_TERMS` terms: the matmul route's gathers, range scans and
calls cost a part the matmul does not win back (whole runs, the route toggled in one
process, medians: drawn_s1_7, 2 Mi products a contraction: 16.1 -> 18.2 ms by the matmuls;
drawn_s1_6, 64 Mi: 0.97-1.07x, no gain; drawn_s1_3, 256 Mi: 0.87-0.94x). Counted as the exact
kernel computes them (`tile_products`)."""

MIN_REPEATS = 1 << 24
"""... or when the exact kernel would compute at least this many products twice (`tile_products`
less the products: its tiles repeat a row to fill them). The two routes cost about the same a
product (drawn_s7_5, K 256, 32 Mi products that the exact kernel computes as 64 Mi: its
contraction 10.9 ms, the matmuls' 4.6 ms, gathers and range scans included), so 16 Mi repeated
products (~2.7 ms) pay the matmul route's fixed costs several times over."""


def tile_products(products: int, n_stored: int, rows: int) -> int:
    """The products the exact kernel computes for a contraction of `products` (its rows x
    lanes x slots x columns x terms) whose rows pair `n_stored` distinct stream rows with
    each TRF operand (a GEMM broadcast, `pairs`): its tiles take `rows` rows that read one
    TRF operand, so a group of n_stored rows costs the next multiple of `rows` (two rows:
    twice their products; drawn_s5_6, 128 operands each read by 2 rows, 64 Mi products at
    K 256: the exact kernel 128 Mi, the contraction ~19.8 -> 11.5 ms a run by the matmuls).
    One stream row makes each row a group of its own, which the kernel tiles by its slots
    instead: no repeat."""
    if n_stored < 2:
        return products
    return products * (-(-n_stored // rows) * rows) // n_stored


def short_sums_pay(products: int, tiled: int) -> bool:
    """Whether the matmuls pay for a contraction of fewer than `MIN_TERMS` terms whose products
    land in place: `products` of them, `tiled` as the exact kernel computes them (`tile_products`)."""
    return tiled >= MIN_PRODUCTS_IN_PLACE or tiled - products >= MIN_REPEATS


def codes_range(*parts: np.ndarray, floor: Callable[[np.ndarray], Any] = unit_floor) -> tuple[int, int] | None:
    """(largest magnitude code, a unit exponent no larger than the true smallest) of the bf16
    codes of `parts` (uint16, or uint32 widened ones: `ir.bf16_exact.unit_floor`, or `floor`
    giving the same); None when every one is a zero or one is NaN, an infinity or a subnormal."""
    found = [floor(part) for part in parts]
    if any(f is None for f in found):
        return None
    live = [f for f in found if f[1] != NONE]
    return (max(t for t, _ in live), min(u for _, u in live)) if live else None


def weights_range(wt: np.ndarray, floor: Callable[[np.ndarray], Any] = unit_floor) -> tuple[int, int] | None:
    """`codes_range` of widened bf16 values `wt` (float32: each a code shifted 16 bits up), by
    `floor` (`unit_floor`, or one giving the same on uint32 cells)."""
    return codes_range(wt.view(np.uint32), floor=floor)


def pairs(h_of: np.ndarray, which: np.ndarray, n_h: int, n_w: int) -> bool:
    """Whether the rows (stream row h_of[r], TRF operand which[r]) use at least half of the
    n_h x n_w pairs the class matmuls compute."""
    return 2 * np.unique(h_of * n_w + which).size >= n_h * n_w


def slots_in_place(sstep: np.ndarray, tread: np.ndarray, tpad: np.ndarray) -> bool:
    """Whether the slots make one matmul group and run through its (stream class, TRF class)
    pairs in order (`contract` then writes the products of every row in place)."""
    groups = _groups(sstep, tread, tpad)
    if len(groups) != 1:
        return False
    _, sc, _, tc, t_reps = groups[0]
    return bool(np.array_equal(sc * t_reps.size + tc, np.arange(sc.size)))


def rows_in_place(h_of: np.ndarray, which: np.ndarray, n_h: int, n_w: int) -> bool:
    """Whether the rows (stream row h_of[r], TRF operand which[r], of n_h and n_w) run through
    their parts' pairs in an order `contract` writes in place."""
    s_rows, w_rows, place = _grid(h_of, which, n_h, n_w)
    return _row_order(place, *s_rows.shape, w_rows.shape[1]) is not None


def _grid(h_of: np.ndarray, which: np.ndarray, n_h: int, n_w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`row_pairs.pair_grid` of the rows, or one part of every pair when they make none."""
    grid = pair_grid(h_of, which)      # parts whose stream and TRF rows meet each other only
    return grid if grid is not None else (np.arange(n_h)[None], np.arange(n_w)[None], h_of * n_w + which)


def _groups(sstep: np.ndarray, tread: np.ndarray, tpad: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """`_grouped` of the slots' tables, remembered (a contraction's plan is the same every run)."""
    return _remembered_groups(*((t.dtype.str, t.shape, t.tobytes()) for t in (sstep, tread, tpad)))


@functools.lru_cache(maxsize=64)
def _remembered_groups(*tables: tuple[str, tuple[int, ...], bytes]) -> list[tuple[np.ndarray, ...]]:
    return [frozen(g) for g in _grouped(*(np.frombuffer(b, d).reshape(s) for d, s, b in tables))]


def _grouped(sstep: np.ndarray, tread: np.ndarray, tpad: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """The slots' matmul groups: (slots, each one's stream class among the group's, a slot of
    each stream class, each one's TRF class, a slot of each TRF class). Slots whose stream
    reads (`sstep`, and skipped steps) are the same share a stream class, those whose TRF
    reads are the same a TRF class; one group of every slot when the classes' pairs are at
    most twice the slots (a GEMM: the stream classes of a column meet every TRF class), else
    one group per TRF class."""
    key = np.concatenate([sstep, tpad.astype(np.int64)], axis=1) if tpad.shape[0] else sstep
    s_first, sc = _classes(key)
    t_first, tc = _classes(tread)
    if s_first.size * t_first.size <= 2 * sc.size:
        return [(np.arange(sc.size), sc, s_first, tc, t_first)]
    groups = []
    for c, rep in enumerate(t_first.tolist()):
        slots = np.flatnonzero(tc == c)
        groups.append((slots, np.arange(slots.size), slots, np.zeros(slots.size, np.int64), np.array([rep])))
    return groups


def _classes(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the first row of each class of equal rows of `table` (2-D integers), each row's
    class), the classes numbered in the order their first rows come: when the slots run
    through the pairs of classes in order, `contract` places the products in place."""
    rows = np.ascontiguousarray(table)
    whole = rows.view(np.dtype((np.void, rows.shape[1] * rows.itemsize))).reshape(-1)   # a row, one item
    _, first, inverse = np.unique(whole, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[inverse.reshape(-1)]


def gathered(packets: np.ndarray, stored: np.ndarray, sstep: np.ndarray, tread: np.ndarray, tpad: np.ndarray,
             g: int, n_cols: int,
             floor: Callable[[np.ndarray], Any] = unit_floor) -> tuple[list, tuple[int, int] | None]:
    """The stream operands of the matmuls (module docstring): per output column and group
    of slots (`_groups`), (the column, the group, the codes A (distinct rows, stream
    classes, steps x leaves)), and their `codes_range` (by `floor`). packets (rows, elements) the
    stream's bf16 codes, rows `stored` the distinct ones; sstep / tread / tpad the plan's
    slots (`contract_jit.run_float`)."""
    src = packets[_stepped(stored)]
    leaves = np.arange(g, dtype=np.int64)
    parts = []
    for group in _groups(sstep, tread, tpad):
        reps = group[2]
        for j in range(n_cols):
            first = sstep[reps] + j * g                  # (stream classes, steps): each step's first element
            if src.shape[1] % g == 0 and not (first % g).any():   # whole blocks of g: one copy each
                a = np.take(src.reshape(src.shape[0], -1, g), first // g, axis=1).reshape(src.shape[0], reps.size, -1)
            else:
                a = src[:, (first[:, :, None] + leaves).reshape(reps.size, -1)]
            if tpad.shape[0]:
                a.reshape(*a.shape[:2], -1, g)[:, tpad[reps]] = 0   # skipped steps: +0 products, exact
            parts.append((j, group, a))
    return parts, codes_range(*(a for *_, a in parts), floor=floor)


def contract(parts: list, h_of: np.ndarray, wt: np.ndarray, which: np.ndarray, tread: np.ndarray, rr: int, g: int,
             out: np.ndarray, laid: dict | None = None) -> np.ndarray:
    """out[row, lane, slot, column] (zeros on entry) from `gathered`'s parts: row r reads
    distinct stream row h_of[r] and TRF operand wt[which[r]] (wt (operands, elements, lanes)
    widened). `laid`: the matmul operands already taken from these `wt` (`_laid`)."""
    n_w, lanes = wt.shape[0], wt.shape[2]
    leaves = np.arange(g, dtype=np.int64)
    s_rows, w_rows, place = _grid(h_of, which, parts[0][2].shape[0], n_w)
    n_p, ns, nw = s_rows.shape[0], s_rows.shape[1], w_rows.shape[1]
    part, si, wi = place // (ns * nw), place // nw % ns, place % nw
    order = _row_order(place, n_p, ns, nw) if place.size == out.shape[0] and out.flags.c_contiguous else None
    for j, (slots, sc, _, tc, t_reps), a in parts:
        w_idx = (tread[t_reps][:, :, None] * rr + (j * g + leaves) % rr).reshape(t_reps.size, -1)
        b = _laid(wt, w_rows, w_idx, laid)
        lhs = widen_codes(_rows(a, s_rows)).reshape(n_p, -1, w_idx.shape[1])
        res = (lhs @ b).reshape(n_p, ns, a.shape[1], t_reps.size, nw, lanes)
        at = sc * t_reps.size + tc                             # each slot among the classes' pairs
        if order is not None and slots.size == out.shape[2] and np.array_equal(at, np.arange(at.size)):
            # the rows run through the pairs in order and slot s is pair s: the products land in
            # place, +0 added on the way
            if order == "stream":
                dest = out.reshape(n_p, ns, nw, lanes, a.shape[1], t_reps.size, -1)[..., j]
                np.add(res.transpose(0, 1, 4, 5, 2, 3), np.float32(0), out=dest)   # a -0 sum is +0
            else:
                dest = out.reshape(n_p, nw, ns, lanes, a.shape[1], t_reps.size, -1)[..., j]
                np.add(res.transpose(0, 4, 1, 5, 2, 3), np.float32(0), out=dest)
            continue
        by_pair = res[part, si, :, :, wi]                      # (rows, stream classes, TRF classes, lanes)
        np.add(by_pair, np.float32(0), out=by_pair)            # a -0 sum is +0
        picked = by_pair.reshape(h_of.size, -1, lanes)
        if at.size == picked.shape[1] and np.array_equal(at, np.arange(at.size)) and slots.size == out.shape[2]:
            out[:, :, :, j] = picked.transpose(0, 2, 1)
        else:
            out[:, :, slots, j] = picked[:, at].transpose(0, 2, 1)
    return out


def _laid(wt: np.ndarray, w_rows: np.ndarray, w_idx: np.ndarray, laid: dict | None) -> np.ndarray:
    """The matmuls' right operand b (parts, elements, TRF classes x operands x lanes), b[p, e,
    t, w, lane] = wt[w_rows[p, w], w_idx[t, e], lane]: one take of whole lane rows, kept in
    `laid` (a dict, or None) for the next contraction reading the same weights the same way
    (a tile's second contraction, whose weights `contract_jit._by_blas` recalls: the take was
    ~0.7 ms of each, drawn_s2_7)."""
    key = (w_rows.shape, w_rows.tobytes(), w_idx.shape, w_idx.tobytes())
    b = None if laid is None else laid.get(key)
    if b is None:
        at_w = w_rows[:, None, None, :] * wt.shape[1] + w_idx.T[None, :, :, None]
        b = np.take(wt.reshape(-1, wt.shape[2]), at_w, axis=0).reshape(w_rows.shape[0], w_idx.shape[1], -1)
        if laid is not None:
            laid[key] = b
    return b


def _row_order(place: np.ndarray, n_p: int, ns: int, nw: int) -> str | None:
    """How the rows run through the parts' (stream class, TRF class) pairs, `place` naming
    each row's: "stream" when row r is pair r (the stream class the slower), "trf" when the
    TRF class is the slower within each part, None when neither."""
    pairs = np.arange(n_p * ns * nw)
    if place.size != pairs.size:
        return None
    if np.array_equal(place, pairs):
        return "stream"
    if np.array_equal(place, pairs.reshape(n_p, ns, nw).transpose(0, 2, 1).reshape(-1)):
        return "trf"
    return None


def _affine(idx: np.ndarray) -> tuple[int, int, int] | None:
    """(base, step along axis 0, step along axis 1) when idx[i, k] == base + i s0 + k s1 for
    the 2-D integers `idx`, else None."""
    if idx.size == 0:
        return None
    base = int(idx[0, 0])
    s0 = int(idx[1, 0]) - base if idx.shape[0] > 1 else 0
    s1 = int(idx[0, 1]) - base if idx.shape[1] > 1 else 0
    grid = base + s0 * np.arange(idx.shape[0])[:, None] + s1 * np.arange(idx.shape[1])
    return (base, s0, s1) if np.array_equal(idx, grid) else None


def _in_range(idx: np.ndarray, n: int) -> bool:
    return idx.size > 0 and int(idx.min()) >= 0 and int(idx.max()) < n


def _rows(a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """a[rows] (rows 2-D): a strided view when the rows step evenly along both axes (the
    parts of a grid: 0..15, 16..31), else the gathered copy."""
    form = _affine(rows) if _in_range(rows, a.shape[0]) else None
    if form is None:
        return a[rows]
    base, s0, s1 = form
    st = a.strides
    return np.lib.stride_tricks.as_strided(a[base:], (*rows.shape, *a.shape[1:]), (s0 * st[0], s1 * st[0], *st[1:]),
                                           writeable=False)

