"""A bf16 contraction whose sums provably never round, by a float32 BLAS matmul.

The chip rounds every product and every sum of a float contraction to float32 in its own
order (the adjacent-pair tree, then the time sum from +0: docs/numerics.md). When no
rounding can happen at all, every order gives the same bits, the exact sum's, and a BLAS
matmul computes them. `no_rounding` decides that from the operands' values alone:

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
class; otherwise one matmul per spatial row (a stack). BLAS runs with its pool at
`CpuOptions.blas_threads`; when that is one thread, large matmuls are split by rows over
the backend's float threads instead (numpy releases the GIL inside them).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ir.blas import blas_threads

from backends.cpu import contract_jit
from backends.cpu.contract_float import PARALLEL_MIN
from backends.cpu.lru import ByObject
from backends.cpu.contract_plan import Gather
from backends.cpu.thread_pool import pool

__all__ = ["contract", "no_rounding", "unit_floor", "unit_range"]

_SOURCES: ByObject[tuple[int, np.ndarray | None]] = ByObject()
"""`_source_cells` per result-cell array `dest` of a plan."""

_NONE = 1 << 14
"""The unit exponent `unit_range` gives when every value is a zero."""


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
    """(largest magnitude pattern, smallest unit exponent) of bf16 patterns `cells` (uint16),
    the unit of a value being the largest power of two dividing it; None when a pattern is
    NaN, an infinity or a subnormal. Every one zero: (0, _NONE)."""
    mag = np.bitwise_and(cells, np.uint16(0x7FFF)).reshape(-1)
    if mag.size == 0:
        return 0, _NONE
    top = int(mag.max())
    unit = int(np.take(_UNITS, mag).min())
    if top >= 0x7F80 or unit == -_NONE:
        return None
    return top, unit


def unit_floor(cells: np.ndarray) -> tuple[int, int] | None:
    """(largest magnitude pattern, a unit exponent no larger than `unit_range`'s) of bf16
    patterns `cells` in a few plain passes (no table look-up): the smallest nonzero value's
    exponent plus the fewest trailing zeros of any significand (those of the OR of all the
    patterns), both minima possibly of different values, so never above the true one. None
    exactly when `unit_range` gives None."""
    mag = np.bitwise_and(cells, np.uint16(0x7FFF)).reshape(-1)
    if mag.size == 0:
        return 0, _NONE
    top = int(mag.max())
    low = int(np.subtract(mag, np.uint16(1)).min()) + 1  # the smallest nonzero (a zero wraps to the top)
    if low == 0x10000:
        return 0, _NONE
    if top >= 0x7F80 or low < 0x80:  # NaN or an infinity; a subnormal
        return None
    frac = int(np.bitwise_or.reduce(mag)) & 0x7F | 0x80
    return top, (low >> 7) + (frac & -frac).bit_length() - 1 - 134


def no_rounding(a: tuple[int, int], w: tuple[int, int], terms: int) -> bool:
    """True when sums of at most `terms` products of values in the `unit_range`s `a` and `w`
    are float32 numbers, normal or zero, in any order (the module docstring)."""
    if a[1] == _NONE or w[1] == _NONE:
        return True  # every product is a zero
    unit = a[1] + w[1]
    top = _value(a[0]) * _value(w[0]) * terms
    return unit >= -126 and top <= 2.0 ** (unit + 24) and top < 2.0 ** 127


def _value(pattern: int) -> float:
    return float(np.array(pattern << 16, np.uint32).view(np.float32))


def _widened(raw: np.ndarray, gather: Gather) -> np.ndarray:
    """The bf16 values (classes, N', I|J, K = g R) a layout (I|J, g, R, N') reads from stored
    rows `raw`, as float32 (a shift of each pattern: no NaN, no subnormal, `unit_range` saw to
    it): the gather, the transpose and the widening in one pass over the cells."""
    half = raw.view(np.uint16).reshape(raw.shape[0], -1)
    rows, (i, g, r, n) = half.shape[0], gather.groups
    out = np.empty((rows, n, i, g * r), np.uint32)
    if gather.offset is not None:  # read in place over the digits (no copy to merge them)
        view = as_strided(half[:, gather.offset:], shape=(rows, *gather.shape),
                          strides=(half.strides[0], *(st * half.itemsize for st in gather.strides)),
                          writeable=False)
        target = _digit_order(out, gather)
        if target is not None:
            np.left_shift(view, np.uint32(16), out=target)
            return out.view(np.float32)
        view = view.reshape(rows, i, g, r, n)
    else:
        view = half[:, gather.index.reshape(-1)].reshape(rows, i, g, r, n)
    np.left_shift(view.transpose(0, 4, 1, 2, 3), np.uint32(16), out=out.reshape(rows, n, i, g, r))
    return out.view(np.float32)


def _digit_order(out: np.ndarray, gather: Gather) -> np.ndarray | None:
    """`out` (rows, N', I, g R) as a view over `gather`'s digits in their own order (I's,
    then g's and R's, then N''s: consecutive digits make up each group), or None when the
    digits do not split so."""
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
    ci, cgr, cn = bounds[1], bounds[3] - bounds[1], len(shape) - bounds[3]
    inner = out.reshape(out.shape[0], *shape[ci + cgr:], *shape[:ci], *shape[ci:ci + cgr])
    return inner.transpose(0, *range(1 + cn, 1 + cn + ci + cgr), *range(1, 1 + cn))


def contract(stored_a: tuple[np.ndarray, np.ndarray], stored_w: tuple[np.ndarray, np.ndarray], plan,
             threads: int, blas: int | None) -> np.ndarray | None:
    """The result cells (rows, cells), acc (rows, I, J, N') placed (`_placed`), of two bf16
    operands (`stored_*`: distinct stored rows and each spatial row's class,
    `contract_jit.stored_rows`) by float32 BLAS, or None when some sum could round (`no_rounding`). `plan` has no padding leaves and no skipped steps."""
    (raw_a, ca), (raw_w, cw) = stored_a, stored_w
    half_a, half_w = raw_a.view(np.uint16), raw_w.view(np.uint16)  # every stored cell: more than read, never less
    ra = unit_floor(half_a)
    rw = None if ra is None else unit_floor(half_w)
    if ra is None or rw is None:
        return None
    if not no_rounding(ra, rw, plan.terms):  # the floors too low to tell: the units themselves
        ra, rw = unit_range(half_a), unit_range(half_w)
        if ra is None or rw is None or not no_rounding(ra, rw, plan.terms):
            return None
    fa, fw = _widened(raw_a, plan.a), _widened(raw_w, plan.w)  # (DA, N', I, K), (DW, N', J, K)
    da, nn, ni, k = fa.shape
    dw, nj = fw.shape[0], fw.shape[2]
    pairs = np.unique(ca * dw + cw).size
    with blas_threads(blas):
        if da * dw <= 2 * pairs:  # one matmul of every A class against every W class
            left = (fa if nn == 1 else fa.transpose(1, 0, 2, 3)).reshape(nn, da * ni, k)
            right = (fw if nn == 1 else fw.transpose(1, 0, 2, 3)).reshape(nn, dw * nj, k)
            full = _matmul(left, right.transpose(0, 2, 1), threads if blas == 1 else 1)
            acc = full.reshape(nn, da, ni, dw, nj)[:, ca, :, cw, :]  # (rows, N', I, J)
        else:  # one per spatial row
            acc = _matmul(fa[ca], fw[cw].transpose(0, 1, 3, 2), threads if blas == 1 else 1)
    return _placed(acc, plan.dest, plan.out_cells)


def _placed(acc: np.ndarray, dest: np.ndarray, cells: int) -> np.ndarray:
    """(rows, cells): `contract_jit.place` of acc (rows, N', I, J) moved to (rows, I, J, N'),
    a -0 BLAS left made the chip's +0. When `dest` is a permutation of the cells, one take
    straight from acc's own order (the move, the broadcast over Z and the placing in one
    pass; the index found once per `dest`). A strided view read in place of the take when
    the permutation is affine measured slower: its inner runs are a lane's 8-16 cells."""
    found = _SOURCES.get(dest)
    if found is None:
        found = _SOURCES.put(dest, _source_cells(dest, cells))
    if found[0] != cells or found[1] is None:
        out = contract_jit.place(np.moveaxis(acc, 1, 3), dest, cells)
    else:
        out = np.take(acc.reshape(acc.shape[0], -1), found[1], axis=1)
    np.add(out, np.float32(0), out=out)
    return out


def _source_cells(dest: np.ndarray, cells: int) -> tuple[int, np.ndarray | None]:
    """(cells, the offset in an (N', I, J) block of the value each result cell receives), or
    (cells, None) when `dest` (I, J, N', Z) is not a permutation of the cells."""
    inverse = contract_jit.inverse_cells(dest, cells)
    if inverse is None:
        return cells, None
    ni, nj, nn, nz = dest.shape
    i, j, n = np.unravel_index(inverse // nz, (ni, nj, nn))
    return cells, (n * ni + i) * nj + j


def _matmul(left: np.ndarray, right: np.ndarray, threads: int) -> np.ndarray:
    """left @ right (stacks), the rows of `left` split over `threads` float threads when large."""
    out = np.empty((*np.broadcast_shapes(left.shape[:-2], right.shape[:-2]), left.shape[-2], right.shape[-1]),
                   np.float32)
    n = left.shape[-2]
    if threads <= 1 or n < 2 * threads or out.size * left.shape[-1] < PARALLEL_MIN:
        np.matmul(left, right, out=out)
        return out
    bounds = [n * t // threads for t in range(threads + 1)]
    jobs = [pool(threads).submit(np.matmul, left[..., lo:hi, :], right, out=out[..., lo:hi, :])
            for lo, hi in zip(bounds, bounds[1:])]
    for job in jobs:
        job.result()
    return out
