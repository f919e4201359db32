"""A bf16 contraction whose sums provably never round, by a float32 BLAS matmul.

The chip rounds every product and every sum of a float contraction to float32 in its own
order (the adjacent-pair tree, then the time sum from +0: docs/numerics.md). When no
rounding can happen at all, every order gives the same bits, the exact sum's, and a BLAS
matmul computes them. `no_rounding` (ir/bf16_exact.py, shared with the VISA interpreter)
decides that from the operands' values alone:

- every nonzero bf16 operand is a normal number m 2^e (m an integer of at most 8 bits), so
  it is a multiple of its *unit*, the lowest power of two dividing it; every value of A a
  multiple of 2^ua, every value of W of 2^uw, each product is a multiple of 2^(ua+uw), and
  so is every sum of products, in any order and grouping;
- each of those sums (of at most `terms` products) is at most terms * max|A| * max|W| in
  magnitude;
- a multiple of 2^u no larger than 2^(u+24) is a float32 exactly, a normal one when
  2^u >= 2^-126: nothing rounds, nothing is flushed, nothing overflows.

A zero sum is +0 on the chip (the time sum starts from +0 and x + -x is +0); BLAS may
leave a -0, so +0 is added to every result. NaN, infinities and subnormal operands (which
the chip reads as zeros) are left to the exact cores, as are padding leaves and skipped
time steps.

`contract` computes the result cells (rows, cells) of `backends.cpu.contract_fast` (the
accumulator acc (rows, I, J, N') placed by the plan's `dest`, `contract_jit.place`) from the distinct
stored rows of each operand (`contract_jit.stored_rows`): when the spatial rows read most
pairs of an A row class and a W row class, one matmul of every A class against every W
class; else, when every class of the side with fewer classes meets as many of the other
side's, one matmul per class of that side (`_grouped`); otherwise one matmul per spatial
row (a stack). BLAS runs on one thread (`CpuOptions.blas_threads=None`: its pool as it is),
and a large matmul is cut by rows among the backend's float threads instead (numpy releases
the GIL inside it; `thread_pool.share`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ir.bf16_exact import NONE, from_bounds, no_rounding, unit_floor
from ir.blas import blas_threads
from ir.errors import InternalError

from backends.cpu import arena, blas_route, contract_jit, contract_rows, run_memo
from backends.cpu.contract_plan import Gather
from backends.cpu.thread_pool import share

__all__ = ["contract", "no_rounding", "unit_floor", "unit_range"]

_NONE = NONE  # the unit exponent `unit_range` gives when every value is a zero


def _units() -> np.ndarray:
    """The unit exponent of each bf16 magnitude pattern m 2^e (e - 134 plus the trailing zeros
    of its 8-bit significand, the hidden bit at 2^7); _NONE for a zero, -_NONE for a subnormal."""
    mag = np.arange(0x8000)
    frac = (mag & 0x7F) | 0x80
    tz = np.log2(frac & -frac).astype(np.int64)
    units = (mag >> 7) + tz - 134
    units[0], units[1:0x80] = _NONE, -_NONE
    return units.astype(np.int16)


_UNITS = _units()


def unit_range(cells: np.ndarray) -> tuple[int, int] | None:
    """(largest magnitude pattern, smallest unit exponent) of bf16 patterns `cells` (uint16,
    or uint32 widened ones, pattern << 16), the unit of a value being the largest power of
    two dividing it; None when a pattern is NaN, an infinity or a subnormal. Every one
    zero: (0, _NONE)."""
    if cells.dtype == np.uint32:
        cells = np.right_shift(cells, np.uint32(16)).astype(np.uint16)
    mag = np.bitwise_and(cells, np.uint16(0x7FFF)).reshape(-1)
    if mag.size == 0:
        return 0, _NONE
    top = int(mag.max())
    unit = int(np.take(_UNITS, mag).min())
    if top >= 0x7F80 or unit == -_NONE:
        return None
    return top, unit


def _widened(raw: np.ndarray, gather: Gather, order: tuple[int, ...] | None = None) -> np.ndarray:
    """The bf16 values (classes, N', I|J, K = g R) a layout (I|J, g, R, N') reads from stored
    rows `raw`, as float32 (a shift of each pattern, exact whatever it is: `_guarded` then
    reads the widened cells): the gather, the transpose and the widening in one pass over the cells. `order`
    (`_k_order`): K's digits in that order instead of the layout's (a sum that cannot round
    is the same in any order; both operands take the same)."""
    half = raw.view(np.uint16).reshape(raw.shape[0], -1)
    rows, (i, g, r, n) = half.shape[0], gather.groups
    out = arena.empty((rows, n, i, g * r), np.uint32)  # scratch given back by `contract`
    form = _form(gather, order) if gather.offset is not None else None
    if form is not None:  # read in place over the digits (no copy to merge them)
        view_axes, inner, inner_axes = form
        view = as_strided(half[:, gather.offset:], shape=(rows, *gather.shape),
                          strides=(half.strides[0], *(st * half.itemsize for st in gather.strides)),
                          writeable=False)
        np.left_shift(view.transpose(view_axes), np.uint32(16), out=out.reshape(rows, *inner).transpose(inner_axes))
        return out.view(np.float32)
    if order is not None:
        raise InternalError("contract_blas: K reordered for an operand read by index")
    if gather.offset is not None:
        view = as_strided(half[:, gather.offset:], shape=(rows, *gather.shape),
                          strides=(half.strides[0], *(st * half.itemsize for st in gather.strides)),
                          writeable=False).reshape(rows, i, g, r, n)
    else:
        view = half[:, gather.index.reshape(-1)].reshape(rows, i, g, r, n)
    np.left_shift(view.transpose(0, 4, 1, 2, 3), np.uint32(16), out=out.reshape(rows, n, i, g, r))
    return out.view(np.float32)


@functools.lru_cache(maxsize=256)
def _splits(gather: Gather) -> tuple[int, int, int] | None:
    """How many of `gather`'s digits make up I, g R and N' (consecutive digits make up
    each group), or None when the digits do not split so."""
    shape, bounds, k = gather.shape, [0], 0
    for size in gather.groups[:3]:  # the digits of I, g and R (N' takes the rest)
        prod = 1
        while k < len(shape) and prod < size:
            prod *= shape[k]
            k += 1
        if prod != size:
            return None
        bounds.append(k)
    if math.prod(shape[k:]) != gather.groups[3]:
        return None
    return bounds[1], bounds[3] - bounds[1], len(shape) - bounds[3]


@functools.lru_cache(maxsize=256)
def _form(gather: Gather, order: tuple[int, ...] | None) -> tuple | None:
    """(the axes moving a strided read (rows, *digits) to (rows, I's, K's in `order`, N''s),
    the digit shape of the result (N''s, I's, K's in `order`), the axes moving a view of it
    to the read's order), or None when the digits do not split (`_splits`)."""
    found = _splits(gather)
    if found is None:
        return None
    ci, ck, cn = found
    order = tuple(range(ck)) if order is None else order
    if len(order) != ck:
        return None
    shape = gather.shape
    k_axes = [ci + t for t in order]
    view_axes = (0, *range(1, 1 + ci), *(1 + a for a in k_axes), *range(1 + ci + ck, 1 + ci + ck + cn))
    inner = (*shape[ci + ck:], *shape[:ci], *(shape[a] for a in k_axes))
    inner_axes = (0, *range(1 + cn, 1 + cn + ci + ck), *range(1, 1 + cn))
    return view_axes, inner, inner_axes


@functools.lru_cache(maxsize=256)
def _k_order(a: Gather, w: Gather) -> tuple[int, ...] | None:
    """An order of K's digits in which the stream operand `a` reads its cells with the
    smallest stride innermost (a widening pass over runs of cells, not over a leaf order
    such as the adder tree's bit-reversed one), when both operands are strided reads whose
    K digits are the same; None otherwise (each reads K in the layout's order)."""
    if a.offset is None or w.offset is None:
        return None
    sa, sw = _splits(a), _splits(w)
    if sa is None or sw is None or sa[1] != sw[1]:
        return None
    ka, kw = slice(sa[0], sa[0] + sa[1]), slice(sw[0], sw[0] + sw[1])
    if a.digits[ka] != w.digits[kw] or a.shape[ka] != w.shape[kw]:
        return None
    strides = a.strides[ka]
    order = tuple(sorted(range(sa[1]), key=lambda t: -strides[t]))
    return None if order == tuple(range(sa[1])) else order


_ROW_BLOCK_BYTES = 1 << 20
"""Operand bytes a block of per-row products copies out at a time (issue 61, first-run
memory: every row's copy at once was 12 MiB on a 1 MiB kernel)."""


def contract(stored_a: tuple[np.ndarray, np.ndarray], stored_w: tuple[np.ndarray, np.ndarray], plan,
             threads: int, blas: int | None) -> np.ndarray | None:
    """The result cells (rows, cells), acc (rows, I, J, N') placed (`blas_route.placed`), of two bf16
    operands (`stored_*`: distinct stored rows and each spatial row's class,
    `contract_jit.stored_rows`) by float32 BLAS, or None when some sum could round (`no_rounding`). `plan` has no padding leaves and no skipped steps."""
    (raw_a, ca), (raw_w, cw) = stored_a, stored_w
    order = _k_order(plan.a, plan.w)  # K's digits in A's stride order, for both (any order sums alike)
    route = contract_rows.route(stored_a, stored_w, plan, order)
    if route is not None:  # one product per row, widened and multiplied a block of rows at a time
        with blas_threads(None if blas is None else 1):
            split = _split(threads, blas)
            products = contract_rows.products(stored_a, stored_w, plan, functools.partial(_widened, order=order),
                                              lambda left, right, out: _matmul(left, right, split, out),
                                              _ROW_BLOCK_BYTES, unit_range)
        return _finish(products, route, ca, cw, plan)
    (fa, floor_a, kept_a), (fw, floor_w, kept_w) = (_widened_kept("a", raw_a, plan.a, order),
                                                    _widened_kept("w", raw_w, plan.w, order))
    if not _guarded((floor_a, fa.view(np.uint32)), (floor_w, fw.view(np.uint32)), plan.terms):
        _done(fa, kept_a), _done(fw, kept_w)
        return None
    da, nn, ni, k = fa.shape
    dw, nj = fw.shape[0], fw.shape[2]
    route = blas_route.route(ca, cw, da, dw, (nn, ni, nj), plan.dest, plan.out_cells)
    split = _split(threads, blas)
    with blas_threads(None if blas is None else 1):
        if route.kind == "whole":  # one matmul of every A class against every W class
            left = (fa if nn == 1 else fa.transpose(1, 0, 2, 3)).reshape(nn, da * ni, k)
            right = (fw if nn == 1 else fw.transpose(1, 0, 2, 3)).reshape(nn, dw * nj, k)
            placed = None if route.taken else blas_route.whole_placed(
                lambda lb, rb, into: _matmul(lb, rb, split, into), left, right.transpose(0, 2, 1), ca, cw, plan.dest, plan.out_cells)
            if placed is not None:  # made and placed a block of A classes at a time
                _done(fa, kept_a), _done(fw, kept_w)
                return placed
            products = _matmul(left, right.transpose(0, 2, 1), split,
                               arena.empty(_product_shape(left, right.transpose(0, 2, 1)), np.float32))
        elif route.kind == "grouped":
            products = _grouped_products(fa, fw, route.grouping, split)
        else:  # one per spatial row, a block of rows at a time (no copy of every row's operands)
            products = np.empty((len(ca), nn, ni, nj), np.float32)
            step = max(1, _ROW_BLOCK_BYTES // (fa[0].nbytes + fw[0].nbytes))
            for lo in range(0, len(ca), step):
                products[lo:lo + step] = _matmul(fa[ca[lo:lo + step]], fw[cw[lo:lo + step]].transpose(0, 1, 3, 2),
                                                 split)
    _done(fa, kept_a), _done(fw, kept_w)  # read for the last time (but when kept): the run's next request takes them
    return _finish(products, route, ca, cw, plan)


def _split(threads: int, blas: int | None) -> int:
    """The threads a large matmul is cut over (`_matmul`): ours when BLAS runs on one thread
    (`blas` not None), as it then does: BLAS's threads wait for each other by spinning, so on a
    loaded machine a pool of 2 cost 100x the arithmetic of a 64 x 256 x 64 product (issue 61)."""
    return 1 if blas is None else threads


def _finish(products: np.ndarray | None, route: blas_route.Route, ca: np.ndarray, cw: np.ndarray,
            plan) -> np.ndarray | None:
    """The result cells of `route`'s `products` (None: some sum could round), +0 added."""
    if products is None:
        return None
    if route.taken and _in_order(route.runs, products):  # the products are the result cells
        np.add(products, np.float32(0), out=products)  # in order: +0 added in place, no second buffer
        return products.reshape(route.cells)
    if route.taken:  # the spread over the rows and the placing in one take
        out = arena.empty(route.cells, np.float32)  # the run's scratch: no fresh pages each run
        if route.runs is not None:  # the take a strided read: copied run by run, +0 added on the way
            first, shape, steps = route.runs
            flat = products.reshape(-1)
            np.add(as_strided(flat[first:], shape, tuple(st * flat.itemsize for st in steps), writeable=False),
                   np.float32(0), out=out.reshape(shape))
        else:
            np.take(products.reshape(-1), route.index, out=out, mode="clip")  # valid indices: no buffered copy
            np.add(out, np.float32(0), out=out)
    else:
        out = blas_route.spread_placed(products, route, ca, cw, plan.dest, plan.out_cells)
    if route.kind == "whole":
        arena.give_back(products)
    return out


KEEP_WIDENED_BYTES = arena.MIN_BYTES
"""A widened operand below this size is a plain allocation; from it, arena scratch, held while
kept and given back to the arena when the side's next widening replaces it (`_widened_kept`)."""


def _widened_kept(side: str, raw: np.ndarray, gather: Gather, order: tuple[int, ...] | None) -> tuple:
    """(`_widened(raw, gather, order)`, its `_floor`, whether the run keeps them), kept in the
    run for the next contraction that reads the same cells of the same unchanged memory
    (backends/cpu/run_memo.py; one per side): a tiled kernel's column tiles read one stream
    each time (issue 61: `drawn_s101_0` widened and scanned its stream three times a run),
    and the two tiles of `drawn_s101_2`, `drawn_s103_1` and `drawn_s103_2` one stationary
    operand of 1-2 MiB widened. A large one (arena scratch) is held until the side's next
    widening, which first gives it back (`run_memo.forget`) and so takes the same memory:
    no more scratch at once than widening every time."""
    kind, key = "widened " + side, (gather, order)
    found = run_memo.get(kind, raw, key)
    if found is not None:
        return (*found, True)
    run_memo.forget(kind)  # the side's last one, read by no later contraction: its buffer free for this one
    wide = _widened(raw, gather, order)
    found = wide, _floor(wide.view(np.uint32))
    kept = run_memo.put(kind, raw, key, found, None if wide.nbytes < KEEP_WIDENED_BYTES else _give_back_widened)
    return (*found, kept)


def _give_back_widened(found: tuple) -> None:
    """A large kept widened operand replaced in the run (`_widened_kept`): its scratch given back."""
    arena.give_back(found[0])


def _done(wide: np.ndarray, kept: bool) -> None:
    """A widened operand read for the last time by its contraction: given back to the arena
    unless the run keeps it (a small one is never arena scratch)."""
    if not kept and wide.nbytes >= KEEP_WIDENED_BYTES:
        arena.give_back(wide)


def _in_order(runs: tuple | None, products: np.ndarray) -> bool:
    """Whether the strided take `runs` (`blas_route.Route.runs`: first cell, shape, steps) reads
    every cell of the C-contiguous `products` once, in order (then the take is the identity)."""
    if runs is None or not products.flags.c_contiguous:
        return False
    first, shape, steps = runs
    return first == 0 and math.prod(shape) == products.size and all(
        n == 1 or st == math.prod(shape[k + 1:]) for k, (n, st) in enumerate(zip(shape, steps)))


def _guarded(a: tuple, w: tuple, terms: int) -> bool:
    """`no_rounding` of the cells the layouts read (the stored rows hold copies and cells no
    layout reads, several times as many on a broadcast); `a`, `w`: (`_floor` of the widened
    patterns, the widened patterns). By the floors first, by the units themselves when the
    floors are too low to tell."""
    ra, rw = a[0], w[0]
    if ra is None or rw is None:
        return False
    if no_rounding(ra, rw, terms):
        return True
    ra, rw = unit_range(a[1]), unit_range(w[1])
    return ra is not None and rw is not None and no_rounding(ra, rw, terms)


def _floor(bits: np.ndarray) -> tuple[int, int] | None:
    """`unit_floor` of the widened cells `bits` (the cells the gather reads of the stored rows):
    with numba loaded, the bounds and the OR of the significands in one compiled pass
    over `bits` (`contract_jit.widened_bounds`: a tenth of the numpy passes' time)."""
    found = contract_jit.widened_bounds(bits)
    if found is None:
        return unit_floor(bits)
    top, low, ors = found
    if low == 0x80000000:  # every one a zero
        return 0, _NONE
    return from_bounds(top, low, ors, 16)


def _grouped_products(fa: np.ndarray, fw: np.ndarray, grouping: blas_route.Grouping, threads: int) -> np.ndarray:
    """(S, N', c * M_own, width * M_other): each set's groups side by side times the classes
    they meet side by side, one matmul per block of sets (`_ROW_BLOCK_BYTES` of operands),
    the operands views of the widened classes when the classes run in order."""
    kept, side = (fa, fw) if grouping.by_a else (fw, fa)  # (classes, N', I|J, K)
    nn, n_kept = kept.shape[1], kept.shape[2]
    (n_sets, width), c = grouping.sets.shape, grouping.own_of.shape[1]
    out = np.empty((n_sets, nn, c * n_kept, width * side.shape[2]), np.float32)
    step = max(1, _ROW_BLOCK_BYTES // (c * kept[0].nbytes + width * side[0].nbytes))
    for lo in range(0, n_sets, step):
        hi = min(n_sets, lo + step)
        left, right = _side_by_side(kept, grouping.own_of[lo:hi]), _side_by_side(side, grouping.sets[lo:hi])
        out[lo:hi] = _matmul(left, np.swapaxes(right, -1, -2), threads)
    return out


def _grouped(fa: np.ndarray, fw: np.ndarray, ca: np.ndarray, cw: np.ndarray, threads: int) -> np.ndarray | None:
    """acc (rows, N', I, J) of the rows' (A class `ca`, W class `cw`) pairs, the pairs
    grouped by the side of fewer classes: each class of that side times every class of the
    other it meets, and the classes meeting the same ones side by side (a batched GEMM's
    batch elements: each A block meets its own W blocks), one matmul per set met
    (`blas_route.grouping`, `_grouped_products`). None when the classes meet different numbers of
    classes, or one each (then one product per row). Every pair computed once: no more
    products than the rows read, in a few larger matmuls (a per-row product of 8 x 16
    cells costs BLAS more than its arithmetic)."""
    found = blas_route.grouping(ca, cw, fa.shape[0], fw.shape[0])
    if found is None:
        return None
    return blas_route.grouped_spread(_grouped_products(fa, fw, found, threads), found)


def _side_by_side(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    """(sets, N', members * M, K) of classes `x` (classes, N', M, K) picked by `index`
    (sets, members): a view when the picked classes run in order and N' is one."""
    sets, members = index.shape
    flat = index.reshape(-1)
    if x.shape[1] == 1 and flat.size and (flat == flat[0] + np.arange(flat.size)).all():
        return x[flat[0]:flat[0] + flat.size].reshape(sets, 1, members * x.shape[2], x.shape[3])
    picked = x[index]  # (sets, members, N', M, K)
    return picked.transpose(0, 2, 1, 3, 4).reshape(sets, x.shape[1], members * x.shape[2], x.shape[3])


def _product_shape(left: np.ndarray, right: np.ndarray) -> tuple[int, ...]:
    return (*np.broadcast_shapes(left.shape[:-2], right.shape[:-2]), left.shape[-2], right.shape[-1])


_SHARE_MIN = 1 << 24
"""Multiply-adds of a matmul from which each of its parts shared among the threads (`_matmul`)
holds at least this many: ~0.35 ms on one core; a smaller share costs more to hand over on a
busy machine than it saves (a 512 x 256 x 128 product stays whole)."""


def _matmul(left: np.ndarray, right: np.ndarray, threads: int, out: np.ndarray | None = None) -> np.ndarray:
    """left @ right (stacks) into `out` (new when None), the rows of `left` cut into parts
    of at least `_SHARE_MIN` multiply-adds `share`d among `threads` threads (at most two
    per thread) when there are two such parts."""
    if out is None:
        out = np.empty(_product_shape(left, right), np.float32)
    n = left.shape[-2]
    parts = min(2 * threads, n, out.size * left.shape[-1] // _SHARE_MIN) if threads > 1 else 1
    if parts < 2:
        np.matmul(left, right, out=out)
        return out
    bounds = [n * t // parts for t in range(parts + 1)]
    share([lambda lo=lo, hi=hi: np.matmul(left[..., lo:hi, :], right, out=out[..., lo:hi, :])
           for lo, hi in zip(bounds, bounds[1:])], threads)
    return out
