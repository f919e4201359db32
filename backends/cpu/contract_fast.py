"""A whole contraction (contract_outer -> contract_packet -> contract_time) at once, bit
for bit the dense path of `backends/cpu/contract.py` (docs/machine/contraction.md).

Digits. Every `(lane, out_time, out_packet)` cell is a point of a grid of digits: the
lane, the Time Reducer's loops over out_time (docs/machine/contraction.md, kept or reduced), the
output column `j` and the leaf of its adder tree (`q = j * g + leaf`, docs/machine/contraction.md).
The plan records which digits the stream operand, the TRF operand, the padding mask and
the time padding depend on (their index arrays vary along the digit or not); before each
run, a kept digit an operand's index depends on but its values do not (data broadcast
by an earlier fetch) is dropped for that operand too. Kept digits that only the stream
depends on become rows `I`, those only the TRF depends on columns `J`, those both depend
on a batch `N` (with the spatial rows), those neither depends on a broadcast of the
result `Z`; the reduced digits (time loops and tree leaves) are summed. Each operand is
gathered once over its own digits only, never over the other's.

Integers (`acc = i32`): the order of a sum does not matter, so `Y = A @ W^T` by a float
BLAS matmul over the reduced digits, exact because every partial sum is an integer below
2^24 (float32) or 2^53 (float64) in magnitude (bounded by the dtypes), then wrapped to i32.

Floats (`acc = f32`): the adjacent-pair tree and then the serial time sum from +0 in
stream order. Both operands are widened once into layouts with the spatial rows
innermost: A (I, leaf, reduced step, N), W (J, leaf, reduced step, N). The products of
one (I, J) pair over every leaf, step and batch position are then one contiguous
multiply of a cache-sized block, and, the leaves being stored in bit-reversed order,
every tree level adds its second half to its first (contiguous runs). When the operands'
range shows that no product or partial sum can be subnormal, infinite or NaN
(`_exact_f32`), every flush of docs/numerics.md is the identity and numpy's IEEE float32
multiply and add are `fmul` and `fadd` exactly (bf16 and f8 products are exact in
float32); otherwise every result is flushed (`_ftz`) as `ir.convert.fmul`/`fadd` do.
Blocks of (I, J) pairs may run on `THREADS` threads; each result has one writer.

`contract` returns None when a structure does not fit; the caller then runs the dense path.
"""

from __future__ import annotations

import functools
import math
import os
from concurrent.futures import ThreadPoolExecutor

import attrs
import numpy as np
from numpy.lib.stride_tricks import as_strided

from ir.dtypes import DType, bf16, f8e4m3, f8e5m2
from ir.mapping.nodes import Mapping
from ir.rules.contract_geometry import time_reduction

from backends.cpu import adapters, moves

__all__ = ["contract", "THREADS"]

BUF = 1 << 17
"""Elements of the float product buffer of one block (512 KiB, stays in L2); the tree
levels are summed inside it."""
YBLOCK = 1 << 20
"""Elements of the tree results a float task keeps before adding them in time."""
INT_CHUNK = 1 << 18
"""Operand elements converted to float per integer matmul block (spatial rows)."""
CHECK_BLOCK = 1 << 18
"""Elements compared at once when checking that an operand's values repeat along a digit."""
TRANSPOSE_BLOCK = 1 << 16
"""Elements per block of the (rows, cells) -> (cells, rows) transpose of a float operand."""
THREADS = min(4, os.cpu_count() or 1)
"""At most this many threads share the float products (numpy releases the GIL inside its
loops), fewer when other processes keep the CPUs busy (`_thread_count`); 1 runs
everything on the calling thread. The result does not depend on it."""
PARALLEL_MIN = 1 << 22
"""Products below which the float path stays on one thread."""

_SIGNIFICANT_BITS = {bf16: 8, f8e4m3: 4, f8e5m2: 3}
_U32 = np.uint32
_POOL: ThreadPoolExecutor | None = None


# ---- the plan ------------------------------------------------------------------------


@attrs.frozen(eq=False)
class Gather:
    """The cells an operand layout reads. `digits` (one per axis of `shape`, outer to
    inner), merged into `groups`; `index` the flat cell of every position (C order), or
    when affine `offset` + sum(digit * `strides`) (then read as a strided view)."""

    digits: tuple[int, ...]
    shape: tuple[int, ...]
    groups: tuple[int, ...]
    index: np.ndarray
    offset: int | None
    strides: tuple[int, ...] | None


@attrs.frozen(eq=False)
class Plan:
    """One contraction's digits and layouts (module docstring).

    Floats: A (I, g, Rt, N) and W (J, g, Rt, N), N = N' x rows; `pad` (I|1, J|1, g|1,
    Rt|1, N'|1) True on padding cells (product +0); `skip` (I|1, J|1, Rt|1, N'|1) True
    where a reduced time step is padding (not added). Integers: A (N', I, R) and W (N', J, R)
    after the spatial rows; `live` (N'|1, I|1, R|1) or (N'|1, J|1, R|1), 0 on padding and
    skipped steps, multiplies the operand `live_on` ("a" or "w"). `dest` (I, J, N', Z) or
    (N', I, J, Z): the flat (lane, slot, column) of each result. `value_a` / `value_w`:
    the kept digits whose value dependence is checked on the data before a run."""

    is_float: bool
    a: Gather
    w: Gather
    pad: np.ndarray | None
    skip: np.ndarray | None
    live: np.ndarray | None
    live_on: str | None
    dest: np.ndarray
    terms: int
    out_cells: int
    value_a: tuple[int, ...]
    value_w: tuple[int, ...]


def _coord(k: int, size: int, nd: int) -> np.ndarray:
    shape = [1] * nd
    shape[k] = size
    return np.arange(size, dtype=np.int64).reshape(shape)


def _squeeze(arr: np.ndarray, drop: frozenset[int] = frozenset()) -> np.ndarray:
    """`arr` with every digit it does not depend on (or in `drop`) reduced to size 1."""
    for k in range(arr.ndim):
        if arr.shape[k] > 1:
            first = arr.take([0], axis=k)
            if k in drop or np.array_equal(np.broadcast_to(first, arr.shape), arr):
                arr = first
    return arr


def _deps(arr: np.ndarray | None) -> set[int]:
    return set() if arr is None else {k for k, n in enumerate(arr.shape) if n > 1}


def _arrange(arr: np.ndarray, groups: list[list[int]], sizes: tuple[int, ...],
             materialize: bool) -> np.ndarray:
    """`arr` (one axis per digit, size 1 where independent) with its digits ordered and
    merged by `groups`; a group it does not depend on stays size 1 unless `materialize`."""
    inside = {k for gr in groups for k in gr}
    if any(arr.shape[k] > 1 for k in range(arr.ndim) if k not in inside):
        raise ValueError("an array depends on a digit outside its layout")
    target = list(arr.shape)
    for gr in groups:
        if materialize or any(arr.shape[k] > 1 for k in gr):
            for k in gr:
                target[k] = sizes[k]
    order = [k for gr in groups for k in gr] + [k for k in range(arr.ndim) if k not in inside]
    full = np.broadcast_to(arr, target).transpose(order)
    return np.ascontiguousarray(full).reshape([math.prod(target[k] for k in gr) for gr in groups])


def _gather(idx: np.ndarray, groups: list[list[int]], sizes: tuple[int, ...]) -> Gather:
    """The gather of an operand's cells over its layout (every group materialized)."""
    digits = tuple(k for gr in groups for k in gr)
    shape = tuple(sizes[k] for k in digits)
    fine = _arrange(idx, [[k] for k in digits], sizes, True).reshape(shape)
    group_shape = tuple(math.prod(sizes[k] for k in gr) for gr in groups)
    index = fine.reshape(-1)
    offset = strides = None
    if index.size:
        base = int(index[0])
        steps = []
        for k, n in enumerate(shape):
            unit = [0] * len(shape)
            unit[k] = 1 if n > 1 else 0
            steps.append(int(fine[tuple(unit)]) - base)
        expected = base + sum((_coord(k, n, len(shape)) * s for k, (n, s) in enumerate(zip(shape, steps))),
                              np.zeros((1,) * len(shape), np.int64))
        if min(steps, default=0) >= 0 and np.array_equal(np.broadcast_to(expected, shape), fine):
            offset, strides = base, tuple(steps)
    return Gather(digits, shape, group_shape, index, offset, strides)


@functools.lru_cache(maxsize=64)
def _plan(outer_key: tuple, g: int, cols: int, n2: int, pre: Mapping, out: Mapping,
          is_float: bool, drop_a: frozenset[int] = frozenset(),
          drop_w: frozenset[int] = frozenset()) -> Plan | None:
    """The plan of one contraction (operands independent of the digits `drop_a` /
    `drop_w`); None when its structure does not fit."""
    try:
        return _make_plan(outer_key, g, cols, n2, pre, out, is_float, drop_a, drop_w)
    except ValueError:
        return None


def _make_plan(outer_key: tuple, g: int, cols: int, n2: int, pre: Mapping, out: Mapping,
               is_float: bool, drop_a: frozenset[int], drop_w: frozenset[int]) -> Plan | None:
    from backends.cpu.contract import _outer_plan  # late: contract imports this module

    op = _outer_plan(*outer_key)
    lanes, q_size = outer_key[5].size, outer_key[8].size
    red = time_reduction(pre, out)
    if pre.size != op.sidx.shape[0] or cols * g > q_size or g & (g - 1):
        return None
    # Digits (kind, size, stride in out_time, stride in the result's time, weight in the
    # leaf index), outer to inner. Float leaves are split into bits, so that the leaf
    # group can list them in reverse (bit-reversed leaves) and still be read strided.
    digits: list[tuple[str, int, int, int, int]] = []
    if lanes > 1:
        digits.append(("lane", lanes, 0, 0, 0))
    for lp in red.loops:
        if lp.size > 1:
            digits.append(("keep" if lp.keep else "red", lp.size, lp.stride_t, lp.stride_ot or 0, 0))
    if cols > 1:
        digits.append(("col", cols, 0, 0, 0))
    if g > 1 and is_float:
        depth = g.bit_length() - 1
        digits += [("leaf", 2, 0, 0, 1 << b) for b in reversed(range(depth))]
    elif g > 1:
        digits.append(("leaf", g, 0, 0, 1))
    nd = len(digits)
    sizes = tuple(d[1] for d in digits)
    zero = np.zeros((1,) * nd, np.int64)
    coords = [_coord(k, n, nd) for k, n in enumerate(sizes)]

    def total(kinds: tuple[str, ...], weight) -> np.ndarray:
        acc = zero
        for k, d in enumerate(digits):
            if d[0] in kinds:
                acc = acc + coords[k] * weight(d)
        return acc

    o = total(("keep", "red"), lambda d: d[2])
    slot = total(("keep",), lambda d: d[3])
    lane = total(("lane",), lambda d: 1)
    q = total(("col",), lambda d: g) + total(("leaf",), lambda d: d[4])
    # The time digits must enumerate out_time once, the kept ones every slot once.
    if not np.array_equal(np.sort(o.reshape(-1)), np.arange(pre.size)):
        return None
    if not np.array_equal(np.sort(slot.reshape(-1)), np.arange(out.size)):
        return None

    s_idx = _squeeze(op.sidx[o, q], drop_a)
    t_idx = _squeeze(op.tidx[lane, o, q], drop_w)
    pad = None if op.live is None else _squeeze(~op.live[lane, o, q])
    if pad is not None and not pad.any():
        pad = None
    pre_pad = moves.logical_pad((pre,))
    skip = _squeeze(pre_pad[o]) if pre_pad.any() else None

    kept = [k for k, d in enumerate(digits) if d[0] in ("lane", "keep", "col")]
    red_t = [k for k, d in enumerate(digits) if d[0] == "red"]
    leaf = [k for k, d in enumerate(digits) if d[0] == "leaf"]  # outer to inner bits
    da, dw = _deps(s_idx), _deps(t_idx)
    n_ = [k for k in kept if k in da and k in dw]
    i_ = [k for k in kept if k in da and k not in dw]
    j_ = [k for k in kept if k in dw and k not in da]
    z_ = [k for k in kept if k not in da and k not in dw]
    dest_all = lane * (out.size * n2) + slot * n2 + total(("col",), lambda d: 1)
    terms = g * math.prod(sizes[k] for k in red_t)
    value_a = tuple(k for k in kept if k in da)
    value_w = tuple(k for k in kept if k in dw)

    if is_float:
        forced = _deps(pad) | _deps(skip)
        i_ += [k for k in z_ if k in forced]
        z_ = [k for k in z_ if k not in forced]
        rev = leaf[::-1]  # leaf bits inner to outer: the bit-reversed leaf order
        a = _gather(s_idx, [i_, rev, red_t, n_], sizes)
        w = _gather(t_idx, [j_, rev, red_t, n_], sizes)
        pad_arr = None if pad is None else _arrange(pad, [i_, j_, rev, red_t, n_], sizes, False)
        skip_arr = None if skip is None else _arrange(skip, [i_, j_, red_t, n_], sizes, False)
        dest = _arrange(dest_all, [i_, j_, n_, z_], sizes, True)
        return Plan(True, a, w, pad_arr, skip_arr, None, None, dest, terms,
                    lanes * out.size * n2, value_a, value_w)

    live = None
    if pad is not None or skip is not None:
        live = ~(np.zeros((1,) * nd, bool) if pad is None else pad)
        if skip is not None:
            live = _squeeze(live & ~skip)
    dl = _deps(live)
    if dl & set(j_) and dl & set(i_):
        n_ += [k for k in j_ if k in dl]
        j_ = [k for k in j_ if k not in dl]
    live_on = None
    if live is not None:
        live_on = "w" if dl & set(j_) else "a"
        side = j_ if live_on == "w" else i_
        side += [k for k in z_ if k in dl]
        z_ = [k for k in z_ if k not in dl]
    n_.sort(), i_.sort(), j_.sort()
    red_all = red_t + leaf
    a = _gather(s_idx, [n_, i_, red_all], sizes)
    w = _gather(t_idx, [n_, j_, red_all], sizes)
    live_arr = None
    if live is not None:
        groups = [n_, i_ if live_on == "a" else j_, red_all]
        live_arr = _arrange(live, groups, sizes, False).astype(np.float32)
    dest = _arrange(dest_all, [n_, i_, j_, z_], sizes, True)
    return Plan(False, a, w, None, None, live_arr, live_on, dest, terms,
                lanes * out.size * n2, value_a, value_w)


# ---- operands --------------------------------------------------------------------------


def _view(raw: np.ndarray, gather: Gather) -> np.ndarray:
    """The operand's cells over its layout, (rows, *shape): a strided view when affine."""
    rows = raw.shape[0]
    if gather.offset is not None:
        item = raw.itemsize
        return as_strided(raw[:, gather.offset:], shape=(rows, *gather.shape),
                          strides=(raw.strides[0], *(s * item for s in gather.strides)),
                          writeable=False)
    return raw[:, gather.index].reshape(rows, *gather.shape)


def _digit_view(raw: np.ndarray, gather: Gather, k: int) -> np.ndarray:
    """The operand's cells as (rows, size of digit k, ...): the other digits in the order
    of `raw`, merged where contiguous, the innermost run read as 8-byte words if it can."""
    axis = gather.digits.index(k)
    if gather.offset is None:
        return np.moveaxis(_view(raw, gather), 1 + axis, 1)
    item = raw.itemsize
    rest = sorted(((n, st) for d, (n, st) in enumerate(zip(gather.shape, gather.strides))
                   if d != axis and n > 1), key=lambda e: -e[1])
    merged: list[list[int]] = []
    for n, st in rest:
        if merged and merged[-1][1] == n * st:
            merged[-1] = [merged[-1][0] * n, st]
        else:
            merged.append([n, st])
    shape = [raw.shape[0], gather.shape[axis]] + [n for n, _ in merged]
    strides = [raw.strides[0], gather.strides[axis] * item] + [st * item for _, st in merged]
    dtype = raw.dtype
    if merged and merged[-1][1] == 1 and (merged[-1][0] * item) % 8 == 0:
        shape[-1], strides[-1], dtype = merged[-1][0] * item // 8, 8, np.dtype(np.uint64)
    base = np.ascontiguousarray(raw)
    return np.ndarray(tuple(shape), dtype, buffer=base, offset=gather.offset * item, strides=tuple(strides))


def _value_independent(raw: np.ndarray, gather: Gather, candidates: tuple[int, ...]) -> frozenset[int]:
    """The candidate digits along which the operand's values (not only its cells) repeat;
    compared a block of spatial rows at a time, the first row alone first (it rejects most
    digits cheaply)."""
    if not candidates or raw.size == 0:
        return frozenset()
    out = set()
    for k in candidates:
        if k not in gather.digits:
            continue
        view = _digit_view(raw, gather, k)
        rows = view.shape[0]
        block = max(1, CHECK_BLOCK // max(1, math.prod(view.shape[1:])))
        parts = [(0, 1)] + [(lo, min(rows, lo + block)) for lo in range(1, rows, block)]
        if all((view[lo:hi, 1:] == view[lo:hi, :1]).all() for lo, hi in parts):
            out.add(k)
    return frozenset(out)


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


def _float_operand(raw: np.ndarray, dtype: DType, gather: Gather) -> tuple[np.ndarray, FloatInfo]:
    """The widened operand over its layout groups, spatial rows innermost (float32), and
    its range. bf16 is widened by a plain shift when that is exact (no NaN, no subnormal:
    docs/numerics.md), anything else by `adapters.widen` first."""
    rows = raw.shape[0]
    if dtype == bf16:
        out, top, low = _rows_last(raw, gather, True, 0x7FFF)
        if top <= 0x7F80 and low >= 0x80:
            info = FloatInfo(top < 0x7F80, _f32_value(top << 16),
                             None if low > 0x7FFF else _f32_value(low << 16))
            return out.view(np.float32).reshape(*gather.groups, rows), info
    bits = np.ascontiguousarray(adapters.widen(raw, dtype)).view(_U32)
    out, top, low = _rows_last(bits, gather, False, 0x7FFFFFFF)
    info = FloatInfo(top < 0x7F800000, _f32_value(min(top, 0x7F800000)),
                     None if low > 0x7FFFFFFF else _f32_value(low))
    return out.view(np.float32).reshape(*gather.groups, rows), info


def _exact_f32(a: FloatInfo, w: FloatInfo, bits_a: int, bits_w: int, terms: int) -> bool:
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


def _ftz(x: np.ndarray) -> np.ndarray:
    """In place: |x| < 2^-126 -> zero of its sign, NaN -> 0x7FC00000 (ir.convert.ftz_f32)."""
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
                        _ftz(x)
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
                            _ftz(low)
                    np.add(x[:, :, 0], x[:, :, 1], out=out)
                    if not f.exact:
                        _ftz(out)
        for r in range(steps):
            acc = f.acc[i0:i1, jg0:jg1]
            if f.skip is None:
                np.add(acc, y[:, :, r], out=acc)
                if not f.exact:
                    _ftz(acc)
            else:
                s = f.skip
                added = np.add(acc, y[:, :, r])
                if not f.exact:
                    _ftz(added)
                np.copyto(acc, added, where=~s[_pick(s, 0, i0, i1), _pick(s, 1, jg0, jg1),
                                               min(r, s.shape[2] - 1), :, None])


def _thread_count() -> int:
    """THREADS, but no more than the CPUs the load average leaves free (this thread's own
    CPU included): threads competing for one CPU are slower than one thread."""
    if THREADS <= 1:
        return 1
    try:
        free = len(os.sched_getaffinity(0)) - os.getloadavg()[0] + 1
    except (AttributeError, OSError):
        return THREADS
    return max(1, min(THREADS, int(free)))


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="npu-opt-contract")
    return _POOL


def _float_core(a: np.ndarray, w: np.ndarray, pad: np.ndarray | None, skip: np.ndarray | None,
                exact: bool) -> np.ndarray:
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
    threads = 1 if len(tasks) == 1 or work < PARALLEL_MIN else min(len(tasks), _thread_count())
    if threads == 1:
        _float_tasks(f, tasks)
    else:  # `threads` interleaved shares of the tasks, at most that many running at once
        for done in [_pool().submit(_float_tasks, f, tasks[k::threads]) for k in range(threads)]:
            done.result()
    return acc


def _float_tasks(f: _Float, tasks: list[tuple[int, int, int, int]]) -> None:
    for t in tasks:
        _float_task(f, *t)


# ---- entry point -------------------------------------------------------------------------


def _int_bound(dtype: DType) -> int:
    return max(abs(dtype.min), abs(dtype.max))


def contract(packed, pre: Mapping, out: Mapping) -> np.ndarray | None:
    """The accumulator of `contract_time(out)` after `packed` (a `contract.Packed`), as
    (rows, lane, out_time, out_packet) float32 / int32 values; None when the fast path
    does not apply."""
    outer = packed.outer
    g = 2 ** packed.depth
    q_size = outer.type.packet.size
    cols = min(packed.n2, q_size // g)
    args = (outer.key, g, cols, packed.n2, pre, out, outer.is_float)
    plan = _plan(*args)
    if plan is None:
        return None
    rows = outer.rows
    shape = (rows, outer.type.lane.size, out.size, packed.n2)
    if rows == 0:
        return np.zeros(shape, np.float32 if outer.is_float else np.int32)
    s_raw = np.ascontiguousarray(outer.stream_rows)
    t_raw = np.ascontiguousarray(outer.trf_rows)
    drop_a = _value_independent(s_raw, plan.a, plan.value_a)
    drop_w = _value_independent(t_raw, plan.w, plan.value_w)
    if drop_a or drop_w:
        plan = _plan(*args, drop_a, drop_w)
        if plan is None:
            return None
    if outer.is_float:
        return _contract_float(outer, s_raw, t_raw, plan, shape)
    return _contract_int(outer, s_raw, t_raw, plan, shape)


def _contract_float(outer, s_raw: np.ndarray, t_raw: np.ndarray, plan: Plan,
                    shape: tuple[int, ...]) -> np.ndarray:
    a, a_info = _float_operand(s_raw, outer.stream_dtype, plan.a)
    w, w_info = _float_operand(t_raw, outer.trf_dtype, plan.w)
    exact = _exact_f32(a_info, w_info, _SIGNIFICANT_BITS.get(outer.stream_dtype, 24),
                       _SIGNIFICANT_BITS.get(outer.trf_dtype, 24), plan.terms)
    acc = _float_core(a, w, plan.pad, plan.skip, exact)  # (I, J, N', rows)
    rows = shape[0]
    zn = plan.dest.shape[3]
    values = np.broadcast_to(acc[:, :, :, None, :], (*acc.shape[:3], zn, rows)).reshape(-1, rows)
    res = np.zeros((plan.out_cells, rows), np.float32)
    res[plan.dest.reshape(-1)] = values
    return np.ascontiguousarray(res.T).reshape(shape)


def _contract_int(outer, s_raw: np.ndarray, t_raw: np.ndarray, plan: Plan,
                  shape: tuple[int, ...]) -> np.ndarray | None:
    bound = plan.terms * _int_bound(outer.stream_dtype) * _int_bound(outer.trf_dtype)
    if bound < 1 << 24:
        ftype = np.float32
    elif bound < 1 << 53:
        ftype = np.float64
    else:
        return None
    rows = shape[0]
    a_src, w_src = _view(s_raw, plan.a), _view(t_raw, plan.w)
    nn, ni, nr = plan.a.groups
    nj = plan.w.groups[1]
    y = np.empty((rows, nn, ni, nj), ftype)
    per_row = nn * (ni + nj) * nr
    rb = max(1, min(rows, INT_CHUNK // max(1, per_row)))
    a_buf = np.empty((rb, *plan.a.shape), ftype)
    w_buf = np.empty((rb, *plan.w.shape), ftype)
    live = None if plan.live is None else plan.live.astype(ftype)
    for r0 in range(0, rows, rb):
        n = min(rows, r0 + rb) - r0
        a, w = a_buf[:n], w_buf[:n]
        np.copyto(a, a_src[r0:r0 + n])
        np.copyto(w, w_src[r0:r0 + n])
        a = a.reshape(n, nn, ni, nr)
        w = w.reshape(n, nn, nj, nr)
        if live is not None:
            target = a if plan.live_on == "a" else w
            target *= live  # (N'|1, side|1, R|1) broadcasts over the rows
        if nr == 0:
            y[r0:r0 + n] = 0
        else:
            np.matmul(a.reshape(n * nn, ni, nr), w.reshape(n * nn, nj, nr).transpose(0, 2, 1),
                      out=y[r0:r0 + n].reshape(n * nn, ni, nj))
    zn = plan.dest.shape[3]
    values = np.broadcast_to(y[..., None], (rows, nn, ni, nj, zn)).reshape(rows, -1)
    if ftype == np.float32:
        values = values.astype(np.int32)
    else:
        values = (values.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    res = np.zeros((rows, plan.out_cells), np.int32)
    res[:, plan.dest.reshape(-1)] = values
    return res.reshape(shape)
