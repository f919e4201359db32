"""A whole contraction (contract_outer -> contract_packet -> contract_time) at once, bit
for bit the dense path of `backends/cpu/contract.py`.

The plan (`backends.cpu.contract_plan`) sorts the digits of the cell grid into rows `I`,
columns `J`, batch `N`, broadcast `Z` and reduced digits, and lays both operands out over
their own digits only.

Integers (`acc = i32`): the order of a sum does not matter, so `Y = A @ W^T` by a float
BLAS matmul over the reduced digits, exact because every partial sum is an integer below
2^24 (float32) or 2^53 (float64) in magnitude (bounded by the dtypes), then wrapped to
i32. The BLAS thread pool is limited while it runs (`CpuOptions.blas_threads`).

Floats (`acc = f32`): the adjacent-pair tree and the serial time sum from +0 in stream
order, by `backends.cpu.contract_float`.

`contract` returns None when a structure does not fit; the caller then runs the dense path.
"""

from __future__ import annotations

import functools
import math

import attrs

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ir.dtypes import DType, bf16, f8e4m3, f8e5m2
from ir.mapping.nodes import Mapping

from backends.cpu import contract_float, contract_jit, layout, lazy_rows, row_classes
from backends.cpu.contract_dest import _dest_view, _lane_last, _lane_last_plan
from backends.cpu.contract_plan import Gather, Plan, plan as make_plan
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.options import DEFAULT, CpuOptions, blas_threads

__all__ = ["contract"]

INT_CHUNK = 1 << 18
"""Operand elements converted to float per integer matmul block (spatial rows)."""
CHECK_BLOCK = 1 << 18
"""Elements compared at once when checking that an operand's values repeat along a digit."""

_SIGNIFICANT_BITS = {bf16: 8, f8e4m3: 4, f8e5m2: 3}


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


class _Operand:
    """An operand's stored cells: a (rows, cells) array, or a move not copied yet
    (`LazyRows`), whose cells are then read in place from its base."""

    def __init__(self, src: np.ndarray | LazyRows) -> None:
        self.lazy = src if isinstance(src, LazyRows) else None
        self._raw = None if self.lazy is not None else np.ascontiguousarray(src)
        self._found: dict[Gather, tuple[np.ndarray, tuple[int, ...]] | None] = {}

    @property
    def size(self) -> int:
        return self.lazy.n_rows * self.lazy.n_dst if self.lazy is not None else self._raw.size

    @property
    def raw(self) -> np.ndarray:
        if self._raw is None:
            self._raw = np.ascontiguousarray(lazy_rows.materialize(self.lazy).reshape(self.lazy.n_rows, -1))
        return self._raw

    def in_place(self, gather: Gather) -> tuple[np.ndarray, tuple[int, ...]] | None:
        """The gathered cells as a view of the lazy base and their byte strides, if affine."""
        if self.lazy is None or gather.index.size == 0:
            return None
        if gather not in self._found:
            self._found[gather] = lazy_rows.gather_view(self.lazy, gather)
        return self._found[gather]

    def stored(self) -> np.ndarray:
        """The stored rows, (rows, n): the lazy base, or the operand itself."""
        return self.lazy.base if self.lazy is not None else self._raw

    def words(self) -> np.ndarray:
        """The stored rows, (rows, n), as 8-byte words when their length allows."""
        base = self.stored()
        if base.ndim == 2 and (base.shape[1] * base.itemsize) % 8 == 0 and base.shape[1] > 0:
            try:
                return base.view(np.uint64)
            except ValueError:
                pass
        return base

    def read(self, gather: Gather) -> tuple[np.ndarray, Gather]:
        """(rows, gather) that read the operand's cells `gather` without copying a lazy
        operand out: its base (C-contiguous) and the gather re-aimed at the base's cells."""
        if self.lazy is None:
            return self._raw, gather
        return np.ascontiguousarray(self.lazy.base), lazy_rows.base_gather(self.lazy, gather)

    def cells(self, gather: Gather) -> np.ndarray:
        """The operand's cells over its layout, (rows, *shape)."""
        found = self.in_place(gather)
        return found[0] if found is not None else _view(self.raw, gather)


def _repeats(view: np.ndarray) -> bool:
    """True when `view` (rows, n, ...) holds the same values all along its axis 1;
    compared a block of rows at a time, the first row alone first (it rejects most)."""
    rows = view.shape[0]
    block = max(1, CHECK_BLOCK // max(1, math.prod(view.shape[1:])))
    parts = [(0, 1)] + [(lo, min(rows, lo + block)) for lo in range(1, rows, block)]
    return all((view[lo:hi, 1:] == view[lo:hi, :1]).all() for lo, hi in parts)


def _value_independent(op: _Operand, gather: Gather, candidates: tuple[int, ...]) -> frozenset[int]:
    """The candidate digits along which the operand's values (not only its cells) repeat:
    those it reads with a zero stride in place, the others by comparing its data."""
    candidates = tuple(k for k in candidates if k in gather.digits)
    if not candidates or op.size == 0:
        return frozenset()
    found = op.in_place(gather)
    out = set()
    for k in candidates:
        axis = gather.digits.index(k)
        if found is not None:
            view, strides = found
            if strides[axis] == 0 or _repeats(np.moveaxis(view, 1 + axis, 1)):
                out.add(k)
        elif _repeats(_digit_view(op.raw, gather, k)):
            out.add(k)
    return frozenset(out)


def _int_bound(dtype: DType) -> int:
    return max(abs(dtype.min), abs(dtype.max))


def contract(packed, pre: Mapping, out: Mapping, options: CpuOptions = DEFAULT,
             result=None) -> np.ndarray | None:
    """The accumulator of `contract_time(out)` after `packed` (a `contract.Packed`), as
    (rows, lane, out_time, out_packet) float32 / int32 values, or with `result` (the
    contract_time's type) as that type's whole buffer (padding rows zero); None when the
    fast path does not apply."""
    outer = packed.outer
    g = 2 ** packed.depth
    q_size = outer.type.packet.size
    cols = min(packed.n2, q_size // g)
    args = (outer.key, g, cols, packed.n2, pre, out, outer.is_float)
    plan = make_plan(*args)
    if plan is None:
        return None
    rows = outer.rows
    shape = (rows, outer.type.lane.size, out.size, packed.n2)
    placed = (lambda acc: acc) if result is None else (lambda acc: layout.from_rows(acc, result))
    if rows == 0:
        return placed(np.zeros(shape, np.float32 if outer.is_float else np.int32))
    s_op, t_op = _Operand(outer.stream_src), _Operand(outer.trf_src)
    drop_a = _value_independent(s_op, plan.a, plan.value_a)
    drop_w = _value_independent(t_op, plan.w, plan.value_w)
    if drop_a or drop_w:
        plan = make_plan(*args, drop_a, drop_w)
        if plan is None:
            return None
    if outer.is_float:
        (s_raw, a), (t_raw, w) = s_op.read(plan.a), t_op.read(plan.w)
        aimed = _aimed(plan, a, w)
        if result is None:
            return _contract_float(outer, s_raw, t_raw, aimed, shape, options)
        lanes, steps, cols = shape[1:]  # the cells lane-innermost (`_lane_last`), for `contract_lane`
        flat = _contract_float(outer, s_raw, t_raw, _lane_last_plan(aimed, lanes, steps * cols), shape, options)
        return np.moveaxis(layout.from_rows(flat.reshape(rows, steps, cols, lanes), result), -1, -3)
    full, live = (None, None) if result is None else _lane_last(result, shape[1:])
    if live is not None:  # the cells stored lane-innermost: the plan's result cells renumbered
        plan = _lane_last_plan(plan, shape[1], shape[2] * shape[3])
    elif result is not None:
        full, live = layout.new_rows(result, shape[1:], np.int32)
    with blas_threads(options.blas_threads):
        acc = _contract_int(outer, s_op, t_op, plan, shape, live)
    if acc is None or result is None:
        return acc
    return layout.from_rows(live, result) if live is full else full



@functools.lru_cache(maxsize=64)
def _aimed(plan: Plan, a: Gather, w: Gather) -> Plan:
    """`plan` reading its operands by the gathers `a` and `w` (`_Operand.read`)."""
    return plan if (a, w) == (plan.a, plan.w) else attrs.evolve(plan, a=a, w=w)


def _contract_float(outer, s_raw: np.ndarray, t_raw: np.ndarray, plan: Plan,
                    shape: tuple[int, ...], options: CpuOptions) -> np.ndarray:
    jit = contract_jit.enabled(options.jit, shape[0] * math.prod(plan.a.groups) * plan.w.groups[0])
    if jit:
        a, a_info = contract_jit.float_operand(s_raw, outer.stream_dtype, plan.a, options.threads)
        w, w_info = contract_jit.float_operand(t_raw, outer.trf_dtype, plan.w, options.threads)
    else:
        a, a_info = contract_float.float_operand(s_raw, outer.stream_dtype, plan.a)
        w, w_info = contract_float.float_operand(t_raw, outer.trf_dtype, plan.w)
    exact = contract_float.exact_f32(a_info, w_info, _SIGNIFICANT_BITS.get(outer.stream_dtype, 24),
                                     _SIGNIFICANT_BITS.get(outer.trf_dtype, 24), plan.terms)
    rows = shape[0]
    zn = plan.dest.shape[3]
    if jit:  # acc (rows, I, J, N')
        acc = contract_jit.core(a, w, plan.pad, plan.skip, exact, options.threads)
        return contract_jit.place(acc, plan.dest, plan.out_cells).reshape(shape)
    acc = contract_float.float_core(a, w, plan.pad, plan.skip, exact, options.threads)
    values = np.broadcast_to(acc[:, :, :, None, :], (*acc.shape[:3], zn, rows)).reshape(-1, rows)
    res = np.zeros((plan.out_cells, rows), np.float32)
    res[plan.dest.reshape(-1)] = values
    return np.ascontiguousarray(res.T).reshape(shape)


def _int_ftype(outer, plan: Plan):
    """The float type whose matmul is exact for this contraction, None when neither is."""
    bound = plan.terms * _int_bound(outer.stream_dtype) * _int_bound(outer.trf_dtype)
    if bound < 1 << 24:
        return np.float32
    if bound < 1 << 53:
        return np.float64
    return None


def _constant_along(src: np.ndarray, outer: int, inner: int, axis: int) -> bool:
    """True when `src` (rows, ...), its rows read as an outer x inner grid, holds the same
    values all along `axis` of that grid (0 outer, 1 inner); one far pair is compared
    first, which rejects most splits at once."""
    v = src.reshape(outer, inner, *src.shape[1:])
    if axis == 1:
        return bool(np.array_equal(v[0, -1], v[0, 0]) and (v[:, 1:] == v[:, :1]).all())
    return bool(np.array_equal(v[-1, 0], v[0, 0]) and (v[1:] == v[:1]).all())


def _row_split(a_src: np.ndarray, w_src: np.ndarray) -> tuple[int, int, bool] | None:
    """(outer, inner, stream_outer): a split of the spatial rows into an outer x inner grid
    along which the stream's values vary with one factor only and the TRF's with the other
    (slices holding copies of the same data, as a DMA broadcast makes them); then the
    contraction of every row is one matmul of the distinct operands. None when no split
    of two factors fits."""
    rows = a_src.shape[0]
    for inner in range(rows // 2, 1, -1):
        if rows % inner:
            continue
        outer = rows // inner
        if _constant_along(a_src, outer, inner, 1) and _constant_along(w_src, outer, inner, 0):
            return outer, inner, True
        if _constant_along(a_src, outer, inner, 0) and _constant_along(w_src, outer, inner, 1):
            return outer, inner, False
    return None


def _row_proxies(s_op: _Operand, t_op: _Operand) -> tuple[np.ndarray, np.ndarray]:
    """Per operand, rows whose equality implies the stored rows' equality: the row
    classes its DMA recorded (backends/cpu/row_classes.py), else its words."""
    a_cls, w_cls = row_classes.classes_of(s_op.stored()), row_classes.classes_of(t_op.stored())
    if a_cls is not None and w_cls is not None:
        return a_cls[:, None], w_cls[:, None]
    return s_op.words(), t_op.words()


def _int_operand(src: np.ndarray, ftype, live: np.ndarray | None, groups: tuple[int, ...]) -> np.ndarray:
    """(count, N', side, R) in `ftype`, multiplied by `live` when given."""
    out = np.asarray(src, ftype).reshape(src.shape[0], *groups)
    if live is not None:
        out *= live
    return out


def _folded(a_src: np.ndarray, w_src: np.ndarray, plan: Plan, ftype, split: tuple[int, int, bool]) -> np.ndarray:
    """Y (outer, inner, N', I, J) by one (batched over N') matmul of the distinct operand
    rows: a strided view of the matmul's result (the caller's cast reads it in place)."""
    outer, inner, stream_outer = split
    va = a_src.reshape(outer, inner, *a_src.shape[1:])
    vw = w_src.reshape(outer, inner, *w_src.shape[1:])
    a_u, w_u = (va[:, 0], vw[0]) if stream_outer else (va[0], vw[:, 0])
    live = None if plan.live is None else plan.live.astype(ftype)
    a = _int_operand(a_u, ftype, live if plan.live_on == "a" else None, plan.a.groups)
    w = _int_operand(w_u, ftype, live if plan.live_on == "w" else None, plan.w.groups)
    na, nn, ni, nr = a.shape
    nw, _, nj, _ = w.shape
    a2 = a.transpose(1, 0, 2, 3).reshape(nn, na * ni, nr)
    w2 = w.transpose(1, 0, 2, 3).reshape(nn, nw * nj, nr)
    z = np.matmul(a2, w2.transpose(0, 2, 1)).reshape(nn, na, ni, nw, nj)
    return z.transpose((1, 3, 0, 2, 4) if stream_outer else (3, 1, 0, 2, 4))


def _per_row(a_src: np.ndarray, w_src: np.ndarray, plan: Plan, ftype) -> np.ndarray:
    """Y (rows, N', I, J) by one small matmul per spatial row, a block of rows at a time."""
    rows = a_src.shape[0]
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
        np.matmul(a.reshape(n * nn, ni, nr), w.reshape(n * nn, nj, nr).transpose(0, 2, 1),
                  out=y[r0:r0 + n].reshape(n * nn, ni, nj))
    return y


def _contract_int(outer, s_op: _Operand, t_op: _Operand, plan: Plan,
                  shape: tuple[int, ...], into: np.ndarray | None = None) -> np.ndarray | None:
    """Integers: Y = A @ W^T in an exact float type, wrapped to i32 and scattered to the
    result cells (of `into`, a new (rows, *cells) array, when given). Rows holding copies
    of the same operands share one matmul."""
    ftype = _int_ftype(outer, plan)
    if ftype is None:
        return None
    rows = shape[0]
    a_src, w_src = s_op.cells(plan.a), t_op.cells(plan.w)
    nn, ni, nr = plan.a.groups
    nj = plan.w.groups[1]
    grid = (rows, 1)  # Y's rows as (outer, inner): the folded matmul's view keeps them apart
    if nr == 0:
        y = np.zeros((rows, 1, nn, ni, nj), ftype)
    else:
        split = None
        if rows > 1:  # the stored rows first: equal rows hold equal cells, compared as words
            split = _row_split(*_row_proxies(s_op, t_op)) or _row_split(a_src, w_src)
        if split is None:
            y = _per_row(a_src, w_src, plan, ftype)[:, None]
        else:
            y, grid = _folded(a_src, w_src, plan, ftype, split), split[:2]
    zn = plan.dest.shape[3]
    res = np.zeros((rows, plan.out_cells), np.int32) if into is None else into.reshape(rows, plan.out_cells)
    covered = plan.dest.size == plan.out_cells  # every cell written (the view names each once)
    target = _dest_view(res, plan.dest) if ftype == np.float32 else None
    if target is not None:  # exact integers in float32: the cast writes the result cells in place
        view, fine = target
        if into is not None and not covered:
            res[...] = 0
        cells = np.reshape(view, (*grid, *fine), copy=False)
        np.copyto(cells, np.broadcast_to(y[..., None], (*grid, nn, ni, nj, zn)).reshape(*grid, *fine),
                  casting="unsafe")
        return res.reshape(shape)
    if into is not None:
        res[...] = 0
    values = np.broadcast_to(y[..., None], (*grid, nn, ni, nj, zn)).reshape(rows, -1)
    if ftype == np.float32:
        values = values.astype(np.int32)
    else:
        values = (values.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    res[:, plan.dest.reshape(-1)] = values
    return res.reshape(shape)
