"""A compiled float core for `backends.cpu.contract_fast` (`acc = f32`), bit for bit the
numpy core of `backends.cpu.contract_float` (the reference it is tested against).

It runs when numba is importable (the optional `fast` extra) and `CpuOptions.jit` is on,
for every float contraction once numba is loaded in the process, and before that once
the process's float contractions reach `JIT_MIN` products in all (`ir.exact_kernels.compile`,
the threshold the interpreter shares); the environment variable `NPU_OPT_CPU_JIT=0` turns it off for every run. numba is
imported by the first such contraction only, never by commands that run none, and its
compiled code is kept on disk in the user's cache (`ir.exact_kernels.compile.cache_dir`).

The same per-element order as the numpy core: every reduced time step's products of
one (row, column) pair over the leaves of its adder tree (the leaves in the layout's
bit-reversed order, so each tree level adds its second half to its first), then
acc = +0, acc + Y[step] for every live step in stream order. When `exact` holds (no
product or sum can be subnormal, infinite or NaN: `contract_float.exact_f32`), float32
`*` and `+` are the engine's fmul and fadd exactly; otherwise every result is flushed
as `contract_float.ftz` flushes it. numba compiles without fast-math, so nothing is
reassociated or fused. An exact contraction without padding or skipped steps takes the
register-tiled kernel of `backends.cpu.contract_jit_exact` over the shared tiles of
`ir.exact_kernels.tiles` (the same sums, 8 rows x 8 output columns or 4 x 16 a tile,
written as vector IR); the rest `_rows`. Only
one stored row per row class of an operand is scanned and widened (`distinct_rows`).
One call works on a block of the spatial rows; blocks run on several threads (the
kernels release the GIL), each row written by one thread.
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np

from ir.dtypes import bf16

from ir.exact_kernels import compile as kernels_compile
from ir.exact_kernels import tiles
from ir.exact_kernels.compile import JIT_MIN

from backends.cpu import contract_float, row_classes
from backends.cpu import contract_jit_exact as jit_exact

__all__ = ["ENV", "JIT_MIN", "core", "enabled", "float_operand", "place"]

ENV = "NPU_OPT_CPU_JIT"
"""Set to 0 to run the numpy float core even when numba is importable."""

_TINY = np.float32(2.0 ** -126)
_ZERO = np.float32(0.0)
_QNAN = np.array([0x7FC00000], np.uint32).view(np.float32)
_NONE = np.zeros((0, 0, 0, 0, 0), np.bool_)
_NO_SKIP = np.zeros((0, 0, 0, 0), np.bool_)
_LOW = 0 if sys.byteorder == "little" else 1
"""Which 16-bit half of a float32 comes first in memory: the low one on little-endian."""


# ---- the kernels (plain Python, compiled by `_compiled`) -----------------------------------


def _pattern(cells, c, wide):
    """Cell `c` of a row of 16-bit halves: a bf16 pattern, or (`wide`) the float32 bits
    of its two halves."""
    if wide:
        return np.uint32(cells[2 * c + _LOW]) | (np.uint32(cells[2 * c + 1 - _LOW]) << np.uint32(16))
    return np.uint32(cells[c])


def _range(raw, starts, ends, wide, mask):
    """(largest, smallest nonzero) `mask`-masked pattern of the cells [starts[k], ends[k])
    of every row; the smallest is mask + 1 when every pattern is zero. Unsigned indices
    and branch-free min / max over runs of cells: the loop vectorizes."""
    top = np.int64(0)
    none = mask + np.int64(1)
    low = none
    u2, ulow, uhigh = np.uint64(2), np.uint64(_LOW), np.uint64(1 - _LOW)
    for row in range(raw.shape[0]):
        cells = raw[row]
        for k in range(starts.size):
            lo, hi = np.uint64(starts[k]), np.uint64(ends[k])
            if wide:
                for c in range(lo, hi):
                    b = np.uint32(cells[u2 * c + ulow]) | (np.uint32(cells[u2 * c + uhigh]) << np.uint32(16))
                    m = np.int64(b) & mask
                    top = max(top, m)
                    low = min(low, m if m != 0 else none)
            else:
                for c in range(lo, hi):
                    m = np.int64(cells[c]) & mask
                    top = max(top, m)
                    low = min(low, m if m != 0 else none)
    return top, low


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


# ---- compiling and calling -------------------------------------------------------------------


def enabled(jit: bool, products: int | None = None) -> bool:
    """True when the compiled core is to run: asked for, not turned off by `NPU_OPT_CPU_JIT=0`,
    numba importable, and either already loaded in this process or the process's float
    contractions, this one of `products` products included, at least `JIT_MIN` products
    in all (`ir.exact_kernels.compile.wanted`)."""
    if not jit or os.environ.get(ENV, "1").strip() in ("0", "false", "no", "off"):
        return False
    if products is not None and not kernels_compile.wanted(products):
        return False
    return _compiled() is not None


@functools.lru_cache(maxsize=1)
def _compiled() -> dict | None:
    """The kernels (the shared tiles, the exact kernel's and this module's) compiled by
    numba, or None when numba is not importable."""
    return kernels_compile.compiled(vars(tiles), vars(jit_exact), globals())


def float_operand(raw: np.ndarray, dtype, gather, threads: int = 1,
                  row_of: np.ndarray | None = None) -> tuple[tuple, contract_float.FloatInfo]:
    """((distinct stored rows as 16-bit halves, wide, gather, each spatial row's index
    among them), range) of an operand, as `contract_float.float_operand` decides them:
    bf16 patterns shifted by 16 when that is exact, else the float32 bits of
    `adapters.widen` (wide: two halves a cell). `row_of`, when given, names the row of
    `raw` each spatial row reads (a DMA's copies not made). The distinct rows are one per
    row class (`distinct_rows`); only they are scanned and widened."""
    reps, cls = distinct_rows(raw, row_of)
    if reps is not None:
        raw = raw[reps]
    if dtype == bf16:
        half = raw.view(np.uint16)
        top, low = _range_of(half, gather, False, 0x7FFF, threads)
        if contract_float.bf16_shifts(top, low):
            return (half, False, gather, cls), contract_float.range_info(top, low, True)
    bits = contract_float.wide_bits(raw, dtype).view(np.uint16)
    top, low = _range_of(bits, gather, True, 0x7FFFFFFF, threads)
    return (bits, True, gather, cls), contract_float.range_info(top, low, False)


def distinct_rows(raw: np.ndarray, row_of: np.ndarray | None = None) -> tuple[np.ndarray | None, np.ndarray]:
    """(rows of `raw` to keep or None for all, each spatial row's index among the kept):
    with `row_of` (the row of `raw` each spatial row reads), the rows it names, each
    once; else one row per class its DMA recorded (backends/cpu/row_classes.py: a
    broadcast repeats rows along slices), a row of no class (-1: written by no cell)
    kept on its own; every row kept when no classes are known."""
    if row_of is not None:  # ascending, as the classes of the rows copied out would be
        keep, inverse = np.unique(row_of, return_inverse=True)
        return keep, inverse.astype(np.int64).reshape(len(row_of))
    rows = raw.shape[0]
    classes = row_classes.classes_of(raw.reshape(rows, -1)) if rows else None
    if classes is None:
        return None, np.arange(rows, dtype=np.int64)
    classes = np.where(classes < 0, classes.max(initial=0) + 1 + np.arange(rows), classes)
    _, first, inverse = np.unique(classes, return_index=True, return_inverse=True)
    return first, inverse.astype(np.int64).reshape(rows)


def _range_of(raw: np.ndarray, gather, wide: bool, mask: int, threads: int) -> tuple[int, int]:
    """`_range` of `raw` (rows, cells) over the cells the layout reads (blocks of rows on
    `threads` threads when large)."""
    starts, ends = _cells(gather)
    found = _on_rows(_compiled()["_range"], raw.shape[0], threads, raw.shape[0] * int((ends - starts).sum()),
                     lambda lo, hi: (raw[lo:hi], starts, ends, wide, np.int64(mask)))
    return max(int(t) for t, _ in found), min(int(lo) for _, lo in found)


def _on_rows(kernel, rows: int, threads: int, work: int, args) -> list:
    """`kernel(*args(lo, hi))` over blocks of the rows [0, rows): one block, or `threads`
    blocks on the float threads when `work` (elements) is large; the results in order."""
    threads = 1 if work < contract_float.PARALLEL_MIN else max(1, min(threads, rows))
    if threads == 1:
        return [kernel(*args(0, rows))]
    bounds = [rows * k // threads for k in range(threads + 1)]
    pool = contract_float.pool(threads)
    return [done.result() for done in [pool.submit(kernel, *args(lo, hi)) for lo, hi in zip(bounds, bounds[1:])]]


@functools.lru_cache(maxsize=64)
def _cells(gather) -> tuple[np.ndarray, np.ndarray]:
    """The distinct cells a layout reads, ascending, as runs [starts[k], ends[k])."""
    cells = np.unique(gather.index).astype(np.int64)
    cut = np.flatnonzero(np.diff(cells) != 1) + 1
    return np.concatenate([cells[:1], cells[cut]]), np.concatenate([cells[cut - 1] + 1, cells[-1:] + 1])


@functools.lru_cache(maxsize=64)
def _layout(gather, side: str) -> np.ndarray:
    """The cell index of a layout as the kernel reads it: A (I, g, R, N) -> (I, R, N, g),
    W (J, g, R, N) -> (R, N, g, J)."""
    idx = gather.index.reshape(gather.groups).astype(np.int64)
    return np.ascontiguousarray(idx.transpose((0, 2, 3, 1) if side == "a" else (2, 3, 1, 0)))


def core(a: tuple, w: tuple, pad, skip, exact: bool, threads: int) -> np.ndarray:
    """acc (rows, I, J, N'): the float contraction of two `float_operand` results."""
    (raw_a, wide_a, gather_a, ca), (raw_w, wide_w, gather_w, cw) = a, w
    ia, iw = _layout(gather_a, "a"), _layout(gather_w, "w")
    rows = ca.size
    ni, nj, nn, g = ia.shape[0], iw.shape[3], ia.shape[2], ia.shape[3]
    out = np.empty((rows, ni, nj, nn), np.float32)
    kernels = _compiled()
    work = out.size * ia.shape[1] * g
    if exact and pad is None and skip is None and g in jit_exact.TREES:
        la = jit_exact.layout(gather_a, "a")
        fold = la.na == 1 and nn > 1  # A the same at every n: the batch positions become columns
        vw = jit_exact.width(nn * nj if fold else nj)
        lw = jit_exact.layout(gather_w, "w", vw, fold)
        fa = _widened(raw_a, la, wide_a, threads).reshape(-1)
        fw = _widened(raw_w, lw, wide_w, threads).reshape(-1)
        order = np.lexsort((ca, cw)).astype(np.int64)  # grouped by W: its blocks stay in cache
        # compute-bound now (tiles in registers, blocks in L1/L2): the rows go to the float
        # threads, as the BLAS baseline of benchmarks/bench_cpu.py uses every core
        common = (fa, fw, ca, cw, np.int64(la.na), np.int64(ia.shape[1]), np.int64(ni), np.int64(nj), np.int64(g),
                  np.int64(vw), fold, out, order)
        _on_rows(kernels["tiles"], rows, threads, work, lambda lo, hi: (*common, np.int64(lo), np.int64(hi)))
        return out
    pad = _NONE if pad is None else np.ascontiguousarray(pad, np.bool_)
    skip = _NO_SKIP if skip is None else np.ascontiguousarray(skip, np.bool_)
    kernel = kernels["_rows"]
    common = (raw_a, raw_w, ca, cw, ia, iw, wide_a, wide_w, pad, skip, bool(exact), _QNAN, out)
    _on_rows(kernel, rows, threads, work, lambda lo, hi: (*common, lo, hi))
    return out


def _widened(raw: np.ndarray, lay: jit_exact.Layout, wide: bool, threads: int) -> np.ndarray:
    """The float32 (stored rows, lay.size) of `raw` by the compiled `gather`, the stored rows
    split between the float threads when there are many (a batched GEMM's 256 distinct
    operand rows, not a broadcast's one)."""
    out = np.empty((raw.shape[0], lay.size), np.uint32)
    args = (lay.index, lay.starts, lay.base, np.int64(lay.stride), wide)
    _on_rows(_compiled()["gather"], raw.shape[0], threads, out.size,
             lambda lo, hi: (raw[lo:hi], *args, out[lo:hi]))
    return out.view(np.float32)


def place(acc: np.ndarray, dest: np.ndarray, cells: int) -> np.ndarray:
    """(rows, cells) float32: `acc` (rows, I, J, N') repeated over the last axis of `dest`
    (I, J, N', Z) and put at its cells, +0 where no result lands. When `dest` is a
    permutation of the cells (the usual case) that is one take of its inverse, a tenth
    of the time of the scattered store."""
    rows = acc.shape[0]
    values = np.broadcast_to(acc[..., None], (*acc.shape, dest.shape[3])).reshape(rows, -1)
    flat = dest.reshape(-1)
    if flat.size == cells:
        inverse = np.full(cells, -1, np.int64)
        inverse[flat] = np.arange(cells)
        if (inverse >= 0).all():
            return np.take(values, inverse, axis=1)
    res = np.zeros((rows, cells), np.float32)
    res[:, flat] = values
    return res
