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
written as vector IR); the rest the general kernel of `backends.cpu.contract_jit_rows`
(its products, tree, accumulation and flush those of `ir.exact_kernels.sums`).
Only one stored row per row class of an operand is scanned and widened (`distinct_rows`);
when nearly every spatial row has stored rows of its own (a batched GEMM), each is
widened in cache just before its tiles, and for two bf16 operands the magnitude scan
that decides exactness is done on those widened rows (`scanned`: the result is kept
when the scan shows it exact) instead of by a pass over the operands of its own.
One call works on a block of the spatial rows; blocks run on several threads (the
kernels release the GIL), each row written by one thread.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from ir.dtypes import bf16

from ir.exact_kernels import compile as kernels_compile
from ir.exact_kernels import sums, tiles
from ir.exact_kernels.compile import JIT_MIN

from backends.cpu import contract_float, row_classes
from backends.cpu.lru import Lru
from backends.cpu.thread_pool import share
from backends.cpu import contract_jit_exact as jit_exact
from backends.cpu import contract_jit_rows as jit_rows
from backends.cpu.distinct import distinct_values

__all__ = ["ENV", "JIT_MIN", "core", "enabled", "float_stored", "inverse_cells", "widened_bounds", "place",
           "scanned", "stored_rows"]

ENV = "NPU_OPT_CPU_JIT"
"""Set to 0 to run the numpy float core even when numba is importable."""

_NONE = np.zeros((0, 0, 0, 0, 0), np.bool_)
_NO_SKIP = np.zeros((0, 0, 0, 0), np.bool_)


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
    """The kernels (the shared tiles and sums, the exact kernel's and the general one's)
    compiled by numba, or None when numba is not importable."""
    return kernels_compile.compiled(vars(tiles), vars(sums), vars(jit_exact), vars(jit_rows))


def float_stored(raw: np.ndarray, cls: np.ndarray, dtype, gather,
                 threads: int = 1) -> tuple[tuple, contract_float.FloatInfo]:
    """((the distinct stored rows `raw` that `stored_rows` found, as 16-bit halves, wide,
    gather, `cls` each spatial row's index among them), range) of an operand, as
    `contract_float.float_operand` decides them: bf16 patterns shifted by 16 when that is
    exact, else the float32 bits of `adapters.widen` (wide: two halves a cell). The
    distinct rows are one per row class (`distinct_rows`); only they are scanned and widened."""
    if dtype == bf16:
        half = raw.view(np.uint16)
        top, low = _range_of(half, gather, False, threads)
        if contract_float.bf16_shifts(top, low):
            return (half, False, gather, cls), contract_float.range_info(top, low, True)
    bits = contract_float.wide_bits(raw, dtype).view(np.uint16)
    top, low = _range_of(bits, gather, True, threads)
    return (bits, True, gather, cls), contract_float.range_info(top, low, False)


def stored_rows(raw: np.ndarray, row_of: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct rows of `raw` by `distinct_rows`, each spatial row's index among them);
    a view of `raw` when the rows kept run in order (no copy: a switch's distinct rows put
    the padding row no spatial row of the operand reads last)."""
    reps, cls = distinct_rows(raw, row_of)
    if reps is None:
        return raw, cls
    if len(reps) and (np.diff(reps) == 1).all():  # a run of rows, in order
        return raw[reps[0]:reps[-1] + 1], cls
    return raw[reps], cls


def distinct_rows(raw: np.ndarray, row_of: np.ndarray | None = None) -> tuple[np.ndarray | None, np.ndarray]:
    """(rows of `raw` to keep or None for all, each spatial row's index among the kept):
    with `row_of` (the row of `raw` each spatial row reads), the rows it names, each
    once; else one row per class its DMA recorded (backends/cpu/row_classes.py: a
    broadcast repeats rows along slices), a row of no class (-1: written by no cell)
    kept on its own; every row kept when no classes are known."""
    if row_of is not None:  # ascending, as the classes of the rows copied out would be
        return _kept(row_of, True)
    rows = raw.shape[0]
    classes = row_classes.classes_of(raw.reshape(rows, -1)) if rows else None
    if classes is None:
        return None, np.arange(rows, dtype=np.int64)
    return _kept(classes, False)


_KEPT = Lru(256)
"""`_kept` by its arguments: the same row map or classes come back on every run of a kernel."""


def _kept(labels: np.ndarray, by_row: bool) -> tuple[np.ndarray, np.ndarray]:
    """`distinct_rows` from a row map (`by_row`: the rows it names, each once) or from row
    classes (the first row of each, a class of -1 a row of its own); found once per labels
    (a few hundred at most: the key is their bytes) and kept: no caller writes them (not
    flagged read-only: numba would compile its kernels again for such arrays)."""
    key = (by_row, labels.dtype.str, labels.tobytes())
    found = _KEPT.get(key)
    if found is not None:
        return found
    if by_row:
        keep, inverse = np.unique(labels, return_inverse=True)
    else:
        rows = labels.size
        classes = np.where(labels < 0, labels.max(initial=0) + 1 + np.arange(rows), labels)
        _, keep, inverse = np.unique(classes, return_index=True, return_inverse=True)
    inverse = inverse.astype(np.int64).reshape(labels.size)
    return _KEPT.put(key, (keep, inverse))


def _range_of(raw: np.ndarray, gather, wide: bool, threads: int) -> tuple[int, int]:
    """(largest, smallest nonzero) magnitude pattern of `raw` (rows, cells) over the cells
    the layout reads, the smallest the sign bit when every one is zero: `_range` on
    blocks of rows (on `threads` threads when large)."""
    starts, ends = _cells(gather)
    raw, = kernels_compile.read_only(raw)  # one compiled form for host and computed rows
    found = _on_rows(_compiled()["_range"], raw.shape[0], threads, raw.shape[0] * int((ends - starts).sum()),
                     lambda lo, hi: (raw[lo:hi], starts, ends, wide))
    sign = 0x80000000 if wide else 0x8000
    low = min(int(lo) for _, lo in found) + 1  # every pattern zero: the sign bit, mask + 1
    return max(int(t) for t, _ in found), low if low < 2 * sign else sign


def widened_bounds(bits: np.ndarray) -> tuple[int, int, int] | None:
    """(largest, smallest nonzero, OR) of the magnitude patterns of float32 patterns `bits`
    (uint32; the smallest 0x80000000 when every one is zero), in one compiled pass, when
    numba is already loaded and not turned off; else None (numba is never loaded for it)."""
    if not kernels_compile.loaded() or not enabled(True):
        return None
    flat = bits.reshape(-1)
    if flat.size == 0:
        return 0, 0x80000000, 0
    top, low, ors = _compiled()["_bounds"](*kernels_compile.read_only(flat))
    low = int(low) + 1  # every pattern zero: the sign bit, mask + 1
    return int(top), low if low < 0x100000000 else 0x80000000, int(ors)


def _on_rows(kernel, rows: int, threads: int, work: int, args) -> list:
    """`kernel(*args(lo, hi))` over blocks of the rows [0, rows): one block, or `threads`
    blocks on the float threads when `work` (elements) is large; the results in order."""
    threads = 1 if work < contract_float.PARALLEL_MIN else max(1, min(threads, rows))
    if threads == 1:
        return [kernel(*args(0, rows))]
    bounds = [rows * k // threads for k in range(threads + 1)]
    found: list = [None] * threads
    share([lambda k=k, lo=lo, hi=hi: found.__setitem__(k, kernel(*args(lo, hi)))
           for k, (lo, hi) in enumerate(zip(bounds, bounds[1:]))], threads)
    return found


@functools.lru_cache(maxsize=64)
def _cells(gather) -> tuple[np.ndarray, np.ndarray]:
    """The distinct cells a layout reads, ascending, as runs [starts[k], ends[k])."""
    cells = distinct_values(gather.index).astype(np.int64)
    cut = np.flatnonzero(np.diff(cells) != 1) + 1
    return np.concatenate([cells[:1], cells[cut]]), np.concatenate([cells[cut - 1] + 1, cells[-1:] + 1])


@functools.lru_cache(maxsize=64)
def _layout(gather, side: str) -> np.ndarray:
    """The cell index of a layout as the kernel reads it: A (I, g, R, N) -> (I, R, N, g),
    W (J, g, R, N) -> (R, N, g, J)."""
    idx = gather.index.reshape(gather.groups).astype(np.int64)
    return np.ascontiguousarray(idx.transpose((0, 2, 3, 1) if side == "a" else (2, 3, 1, 0)))


def core(a: tuple, w: tuple, pad, skip, exact: bool, threads: int) -> np.ndarray:
    """acc (rows, I, J, N'): the float contraction of two `float_stored` results."""
    (raw_a, wide_a, gather_a, ca), (raw_w, wide_w, gather_w, cw) = a, w
    ia, iw = _layout(gather_a, "a"), _layout(gather_w, "w")
    if exact and pad is None and skip is None and ia.shape[3] in jit_exact.TREES:
        return _tiled(a, w, threads)[0]
    rows = ca.size
    ni, nj, nn, g = ia.shape[0], iw.shape[3], ia.shape[2], ia.shape[3]
    out = np.empty((rows, ni, nj, nn), np.float32)
    pad = _NONE if pad is None else np.ascontiguousarray(pad, np.bool_)
    skip = _NO_SKIP if skip is None else np.ascontiguousarray(skip, np.bool_)
    raw_a, raw_w, ca, cw, pad, skip = kernels_compile.read_only(raw_a, raw_w, ca, cw, pad, skip)
    common = (raw_a, raw_w, ca, cw, ia, iw, wide_a, wide_w, pad, skip, bool(exact), out)
    _on_rows(_compiled()["_rows"], rows, threads, out.size * ia.shape[1] * g, lambda lo, hi: (*common, lo, hi))
    return out


def _in_cache(raw_a: np.ndarray, raw_w: np.ndarray, rows: int) -> bool:
    """Whether both operands' stored rows are mostly distinct (more than half as many as
    the spatial rows): then each is widened row by row in cache (`tiles_widening`)."""
    return 2 * min(raw_a.shape[0], raw_w.shape[0]) > rows


def _tiled(a: tuple, w: tuple, threads: int) -> tuple[np.ndarray, list | None]:
    """(acc (rows, I, J, N'), the blocks' `tiles_widening` ranges or None): the exact
    register-tiled contraction of two `float_stored`-shaped operands."""
    (raw_a, wide_a, gather_a, ca), (raw_w, wide_w, gather_w, cw) = a, w
    raw_a, raw_w, ca, cw = kernels_compile.read_only(raw_a, raw_w, ca, cw)
    ia, iw = _layout(gather_a, "a"), _layout(gather_w, "w")
    rows = ca.size
    ni, nj, nn, g = ia.shape[0], iw.shape[3], ia.shape[2], ia.shape[3]
    out = np.empty((rows, ni, nj, nn), np.float32)
    la = jit_exact.layout(gather_a, "a")
    fold = la.na == 1 and nn > 1  # A the same at every n: the batch positions become columns
    vw = jit_exact.width(nn * nj if fold else nj)
    lw = jit_exact.layout(gather_w, "w", vw, fold)
    order = np.lexsort((ca, cw)).astype(np.int64)  # grouped by W: its blocks stay in cache
    shape = (np.int64(la.na), np.int64(ia.shape[1]), np.int64(ni), np.int64(nj), np.int64(g), np.int64(vw), fold,
             out, order)
    kernels = _compiled()
    if _in_cache(raw_a, raw_w, rows):
        common = (raw_a, la.index, la.starts, la.base, np.int64(la.stride), wide_a, np.int64(la.size),
                  raw_w, lw.index, lw.starts, lw.base, np.int64(lw.stride), wide_w, np.int64(lw.size),
                  ca, cw, *kernels_compile.read_only(np.zeros(rows, np.int64)), *shape)  # `tiles`' types
        kernel = kernels["tiles_widening"]
    else:  # each class widened once, into memory
        fa = _widened(raw_a, la, wide_a, threads).reshape(-1)
        fw = _widened(raw_w, lw, wide_w, threads).reshape(-1)
        common = (fa, fw, ca, cw, *shape)
        kernel = kernels["tiles"]
    # compute-bound now (tiles in registers, blocks in L1/L2): the rows go to the float
    # threads, as the BLAS baseline of benchmarks/bench_cpu.py uses every core
    found = _on_rows(kernel, rows, threads, out.size * ia.shape[1] * g,
                     lambda lo, hi: (*common, np.int64(lo), np.int64(hi)))
    return out, (found if kernel is kernels["tiles_widening"] else None)


def scanned(stored_a: tuple, stored_w: tuple, gather_a, gather_w, threads: int) -> tuple | None:
    """(acc (rows, I, J, N'), (top, low) of A, (top, low) of W) for two bf16 operands
    (`stored_a`, `stored_w`: (distinct rows, each spatial row's index) of `stored_rows`)
    whose stored rows are mostly distinct, or None when that does not hold or the layout has
    no tree: the exact tiled contraction computed at once, the ranges (`_range_of`'s
    (largest, smallest nonzero) magnitude patterns) found from the rows widened in cache
    instead of by a pass of their own. The caller keeps the result only when the ranges
    show it exact (bf16 patterns that shift, `contract_float.exact_f32`)."""
    (raw_a, ca), (raw_w, cw) = stored_a, stored_w
    if _layout(gather_a, "a").shape[3] not in jit_exact.TREES or not _in_cache(raw_a, raw_w, ca.size):
        return None
    out, found = _tiled((raw_a.view(np.uint16), False, gather_a, ca), (raw_w.view(np.uint16), False, gather_w, cw),
                        threads)
    ranges = []
    for top, low in ((0, 1), (2, 3)):
        low_found = min((int(f[low]) for f in found), default=0xFFFF) + 1
        ranges.append((max((int(f[top]) for f in found), default=0), low_found if low_found <= 0x7FFF else 0x8000))
    return out, ranges[0], ranges[1]


def _widened(raw: np.ndarray, lay: jit_exact.Layout, wide: bool, threads: int) -> np.ndarray:
    """The float32 (stored rows, lay.size) of `raw` by the compiled `gather`, the stored rows
    split between the float threads when there are many (a batched GEMM's 256 distinct
    operand rows, not a broadcast's one)."""
    out = np.empty((raw.shape[0], lay.size), np.uint32)
    raw, = kernels_compile.read_only(raw)
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
    inverse = inverse_cells(dest, cells)
    if inverse is not None:
        return np.take(values, inverse, axis=1)
    res = np.zeros((rows, cells), np.float32)
    res[:, dest.reshape(-1)] = values
    return res


def inverse_cells(dest: np.ndarray, cells: int) -> np.ndarray | None:
    """For each of the `cells` result cells, the flat position in `dest` that lands there, or
    None when `dest` is not a permutation of the cells."""
    flat = dest.reshape(-1)
    if flat.size != cells:
        return None
    inverse = np.full(cells, -1, np.int64)
    inverse[flat] = np.arange(cells)
    return inverse if (inverse >= 0).all() else None
