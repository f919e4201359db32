"""The float core of `backends.cpu.contract_fast` (`acc = f32`): the adjacent-pair tree
and then the serial time sum from +0 in stream order, bit for bit the dense path.

Both operands are widened once into layouts with the spatial rows innermost: A (I, leaf,
reduced step, N), W (J, leaf, reduced step, N). The products of one (I, J) pair over
every leaf, step and batch position are then one contiguous multiply of a cache-sized
block, and, the leaves being stored in bit-reversed order, every tree level adds its
second half to its first (contiguous runs). When the operands' range shows that no
product or partial sum can be subnormal, infinite or NaN (`exact_f32`), every flush is
the identity and numpy's IEEE float32 multiply and add are `fmul` and `fadd` exactly
(bf16 and f8 products are exact in float32); otherwise every result is flushed (`ftz`)
as `ir.contract_arith.fmul`/`fadd` do. Blocks of (I, J) pairs may run on several threads
(numpy releases the GIL inside its loops); each result has one writer, so the result
does not depend on the thread count.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np

from ir.dtypes import DType, bf16

from backends.cpu import adapters
from backends.cpu.contract_plan import Gather
from backends.cpu.thread_pool import share

__all__ = ["FloatInfo", "bf16_shifts", "exact_f32", "float_core", "float_operand", "ftz", "range_info",
           "wide_bits"]

BUF = 1 << 17
"""Elements of the float product buffer of one block (512 KiB, stays in L2); the tree
levels are summed inside it."""
YBLOCK = 1 << 20
"""Elements of the tree results a float task keeps before adding them in time."""
TRANSPOSE_BLOCK = 1 << 16
"""Elements per block of the (rows, cells) -> (cells, rows) transpose of a float operand."""
PARALLEL_MIN = 1 << 22
"""Products below which the float path stays on one thread."""

_U32 = np.uint32


@functools.lru_cache(maxsize=64)
def _source_order(gather: Gather) -> tuple[np.ndarray, np.ndarray, int | None]:
    """(order, src, start): the layout positions sorted by the cell they read (stable) and
    those cells; `start` when the cells are one contiguous range (then read as a slice)."""
    order = np.argsort(gather.index, kind="stable")
    src = gather.index[order]
    start = None
    if src.size and np.array_equal(src, np.arange(src[0], src[0] + src.size)):
        start = int(src[0])
    return order, src, start


def _rows_last(raw: np.ndarray, gather: Gather, shift: bool,
               magnitude: int) -> tuple[np.ndarray, int, int]:
    """The operand's cells over its layout, spatial rows last: (cells, rows) uint32,
    each cell shifted left by 16 when `shift` (bf16 -> f32 bits). The cells are read in
    their order in `raw` and moved a block at a time (cache-friendly transpose). Also
    the largest and the smallest nonzero `magnitude`-masked pattern read (the latter
    above the mask when every one is zero)."""
    rows = raw.shape[0]
    order, src, start = _source_order(gather)
    cells = raw[:, start:start + src.size] if start is not None else raw[:, src]
    out = np.empty((src.size, rows), _U32)
    block = max(16, TRANSPOSE_BLOCK // max(1, rows))
    tmp = np.empty((min(block, src.size), rows), _U32)
    mag = np.empty_like(tmp)
    top, low = 0, magnitude + 1
    for lo in range(0, src.size, block):
        hi = min(src.size, lo + block)
        t, m = tmp[:hi - lo], mag[:hi - lo]
        np.copyto(t, cells[:, lo:hi].T)
        np.bitwise_and(t, _U32(magnitude), out=m)
        top = max(top, int(m.max()))
        np.subtract(m, _U32(1), out=m)  # a zero wraps to the largest value
        low = min(low, int(m.min()) + 1)
        if shift:
            np.left_shift(t, _U32(16), out=t)
        out[order[lo:hi]] = t
    return out, top, low


@attrs.frozen
class FloatInfo:
    """A float operand's range: finite, largest magnitude, smallest nonzero magnitude."""

    finite: bool
    max_abs: float
    min_abs: float | None


def _f32_value(bits: int) -> float:
    return float(np.array(bits, _U32).view(np.float32))


def float_operand(raw: np.ndarray, dtype: DType, gather: Gather) -> tuple[np.ndarray, FloatInfo]:
    """The widened operand over its layout groups, spatial rows innermost (float32), and
    its range. bf16 is widened by a plain shift when that is exact (no NaN, no subnormal:
    docs/numerics.md), anything else by `adapters.widen` first."""
    rows = raw.shape[0]
    if dtype == bf16:
        out, top, low = _rows_last(raw, gather, True, 0x7FFF)
        if bf16_shifts(top, low):
            return out.view(np.float32).reshape(*gather.groups, rows), range_info(top, low, True)
    bits = wide_bits(raw, dtype)
    out, top, low = _rows_last(bits, gather, False, 0x7FFFFFFF)
    return out.view(np.float32).reshape(*gather.groups, rows), range_info(top, low, False)


def bf16_shifts(top: int, low: int) -> bool:
    """True when bf16 patterns whose magnitudes span [low, top] (`low` the smallest
    nonzero one) widen exactly by a shift: no NaN, no subnormal."""
    return top <= 0x7F80 and low >= 0x80


def wide_bits(raw: np.ndarray, dtype: DType) -> np.ndarray:
    """The operand widened to float32 (`adapters.widen`), as its uint32 bit patterns."""
    return np.ascontiguousarray(adapters.widen(raw, dtype)).view(_U32)


def range_info(top: int, low: int, half: bool) -> FloatInfo:
    """The FloatInfo of patterns whose magnitudes span [low, top]: bf16 patterns when
    `half`, float32 bits otherwise; `low` above the mask when every one is zero."""
    if half:
        return FloatInfo(top < 0x7F80, _f32_value(top << 16), None if low > 0x7FFF else _f32_value(low << 16))
    return FloatInfo(top < 0x7F800000, _f32_value(min(top, 0x7F800000)),
                     None if low > 0x7FFFFFFF else _f32_value(low))


def exact_f32(a: FloatInfo, w: FloatInfo, bits_a: int, bits_w: int, terms: int) -> bool:
    """True when no product, tree sum or time sum can be subnormal, overflow or be NaN.

    Every nonzero operand is a multiple of 2^(floor(log2 min_abs) - bits + 1); products
    (exact: at most bits_a + bits_w <= 24 significant bits) and every rounded sum of them
    are multiples of the product of those units, so a unit >= 2^-126 keeps every nonzero
    result normal; and the sums of `terms` <= 2^24 products of magnitude <= max_a * max_w
    grow by rounding by less than a factor (1 + 2^-24)^terms < e, so they stay below the
    float32 overflow threshold when terms * max_a * max_w <= 2^126."""
    if not (a.finite and w.finite):
        return False
    if a.min_abs is None or w.min_abs is None:
        return True  # every product is a zero
    if bits_a + bits_w > 24 or terms > 1 << 24:
        return False
    unit = (math.frexp(a.min_abs)[1] - bits_a) + (math.frexp(w.min_abs)[1] - bits_w)
    return unit >= -126 and terms * a.max_abs * w.max_abs <= 2.0 ** 126


# ---- float arithmetic --------------------------------------------------------------------


def ftz(x: np.ndarray) -> np.ndarray:
    """In place: |x| < 2^-126 -> zero of its sign, NaN -> 0x7FC00000 (ir.contract_arith.ftz_f32)."""
    b = x.view(_U32)
    mag = b & _U32(0x7FFFFFFF)
    np.bitwise_and(b, _U32(0x80000000), out=b, where=mag < _U32(0x00800000))
    np.copyto(b, _U32(0x7FC00000), where=mag > _U32(0x7F800000))
    return x


@attrs.frozen
class _Float:
    """The float core's operands and blocking: A (I, g, Rt, N', rows), W (J, g, Rt, N',
    rows); products are made for `bi` x `bj` (row, column) pairs, `br` reduced steps and
    `bn` batch positions at a time; a task keeps the tree results of its pairs for every
    step until it adds them in time."""

    a: np.ndarray
    w: np.ndarray
    pad: np.ndarray | None
    skip: np.ndarray | None
    exact: bool
    acc: np.ndarray  # (I, J, N', rows)
    bi: int
    bj: int
    br: int
    bn: int


def _pick(arr: np.ndarray, axis: int, lo: int, hi: int) -> slice:
    """The part [lo, hi) of an axis of a mask, all of it when the mask is constant along it."""
    return slice(None) if arr.shape[axis] == 1 else slice(lo, hi)


def _float_task(f: _Float, i0: int, i1: int, jg0: int, jg1: int) -> None:
    """acc[i0:i1, jg0:jg1] of docs/machine/contraction.md: the tree of every reduced step's
    products (Y), then acc = +0 ⊕ Y[step] for every live step in stream order."""
    ni, g, steps, nn, rows = f.a.shape
    y = np.empty((i1 - i0, jg1 - jg0, steps, nn, rows), np.float32)
    buf = np.empty((i1 - i0) * f.bj * g * f.br * f.bn * rows, np.float32)
    with np.errstate(all="ignore"):
        for j0 in range(jg0, jg1, f.bj):
            j1 = min(jg1, j0 + f.bj)
            for r0 in range(0, steps, f.br):
                r1 = min(steps, r0 + f.br)
                for n0 in range(0, nn, f.bn):
                    n1 = min(nn, n0 + f.bn)
                    shape = (i1 - i0, j1 - j0, g, r1 - r0, n1 - n0, rows)
                    x = buf[:math.prod(shape)].reshape(shape)
                    np.multiply(f.a[i0:i1, None, :, r0:r1, n0:n1], f.w[None, j0:j1, :, r0:r1, n0:n1],
                                out=x)
                    if not f.exact:
                        ftz(x)
                    if f.pad is not None:
                        p = f.pad
                        np.copyto(x, np.float32(0), where=p[_pick(p, 0, i0, i1), _pick(p, 1, j0, j1), :,
                                                            _pick(p, 3, r0, r1), _pick(p, 4, n0, n1), None])
                    out = y[:, j0 - jg0:j1 - jg0, r0:r1, n0:n1]
                    if g == 1:
                        np.copyto(out, x[:, :, 0])
                        continue
                    k = g
                    while k > 2:  # bit-reversed leaves: each level adds the two halves
                        k //= 2
                        low = x[:, :, :k]
                        np.add(low, x[:, :, k:2 * k], out=low)
                        if not f.exact:
                            ftz(low)
                    np.add(x[:, :, 0], x[:, :, 1], out=out)
                    if not f.exact:
                        ftz(out)
        for r in range(steps):
            acc = f.acc[i0:i1, jg0:jg1]
            if f.skip is None:
                np.add(acc, y[:, :, r], out=acc)
                if not f.exact:
                    ftz(acc)
            else:
                s = f.skip
                added = np.add(acc, y[:, :, r])
                if not f.exact:
                    ftz(added)
                np.copyto(acc, added, where=~s[_pick(s, 0, i0, i1), _pick(s, 1, jg0, jg1),
                                               min(r, s.shape[2] - 1), :, None])


def float_core(a: np.ndarray, w: np.ndarray, pad: np.ndarray | None, skip: np.ndarray | None,
               exact: bool, threads: int = 1) -> np.ndarray:
    """acc (I, J, N', rows): for every reduced time step in stream order, acc ⊕= tree(A W).

    One (row, column) pair's products of every step are one contiguous multiply when
    they fit a buffer (then every tree level adds two contiguous halves); more pairs are
    taken at once when they are small, fewer steps or batch positions when large."""
    ni, g, steps, nn, rows = a.shape
    nj = w.shape[0]
    acc = np.zeros((ni, nj, nn, rows), np.float32)
    unit = g * rows
    bn = min(nn, max(1, BUF // unit))
    br = min(steps, max(1, BUF // (unit * bn)))
    pair = unit * bn * br
    whole = bn == nn and br == steps
    bj = min(nj, max(1, BUF // pair)) if whole else 1
    bi = min(ni, max(1, BUF // (pair * bj))) if whole and bj == nj else 1
    per_j = bi * steps * nn * rows
    jg = min(nj, max(bj, YBLOCK // max(1, per_j) // bj * bj))
    f = _Float(a, w, pad, skip, exact, acc, bi, bj, br, bn)
    tasks = [(i0, min(ni, i0 + bi), j0, min(nj, j0 + jg))
             for i0 in range(0, ni, bi) for j0 in range(0, nj, jg)]
    work = ni * nj * g * steps * nn * rows
    threads = 1 if len(tasks) == 1 or work < PARALLEL_MIN else min(len(tasks), threads)
    # the tasks taken one at a time by `threads` threads, the calling one among them (one: in order on it)
    share([lambda t=t: _float_task(f, *t) for t in tasks], threads)
    return acc

