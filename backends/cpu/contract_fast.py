"""A whole contraction (contract_outer -> contract_packet -> contract_time) at once, bit
for bit the dense path of `backends/cpu/contract.py`.

The plan (`backends.cpu.contract_plan`) sorts the digits of the cell grid into rows `I`,
columns `J`, batch `N`, broadcast `Z` and reduced digits, and lays both operands out over
their own digits only.

Integers (`acc = i32`): `backends.cpu.contract_int`, an exact float BLAS matmul. The BLAS
thread pool is limited while it runs (`CpuOptions.blas_threads`).

Floats (`acc = f32`): the adjacent-pair tree and the serial time sum from +0 in stream
order, by `backends.cpu.contract_float` (or its compiled twin `backends.cpu.contract_jit`);
two bf16 operands whose values show that no sum can round, by one float32 BLAS matmul
(`backends.cpu.contract_blas`: every order gives those bits), numba then not loaded for them.

`contract` returns None when a structure does not fit; the caller then runs the dense path.
"""

from __future__ import annotations

import contextlib
import functools
import math

import attrs

import numpy as np

from ir.dtypes import bf16, f8e4m3, f8e5m2
from ir.mapping.nodes import Mapping

from backends.cpu import (
    compact, contract_blas, contract_float, contract_int, contract_jit, layout, lazy_rows, row_classes, run_memo,
)
from backends.cpu.compact import Compact
from backends.cpu.gathers import cells_view
from backends.cpu.contract_plan import Gather, Plan, _lane_last, _lane_last_plan, plan as make_plan
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.value_samples import apart, differs
from backends.cpu.options import CpuOptions, blas_threads

__all__ = ["contract"]

CHECK_BLOCK = 1 << 18
"""Elements compared at once when checking that an operand's values repeat along a digit."""

_SIGNIFICANT_BITS = {bf16: 8, f8e4m3: 4, f8e5m2: 3}


def _digit_view(raw: np.ndarray, gather: Gather, k: int) -> np.ndarray:
    """The operand's cells as (rows, size of digit k, ...): the other digits in the order
    of `raw`, merged where contiguous, the innermost run read as 8-byte words if it can."""
    axis = gather.digits.index(k)
    if gather.offset is None:
        return np.moveaxis(cells_view(raw, gather), 1 + axis, 1)
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
        self._distinct: np.ndarray | None = None

    @property
    def row_of(self) -> np.ndarray | None:
        """The stored row each spatial row reads (a DMA's copies: backends/cpu/row_classes.py `dma_copies`), or None."""
        return None if self.lazy is None else self.lazy.row_of

    @property
    def size(self) -> int:
        return self.lazy.n_rows * self.lazy.n_dst if self.lazy is not None else self._raw.size

    @property
    def raw(self) -> np.ndarray:
        if self._raw is None:
            self._raw = np.ascontiguousarray(lazy_rows.materialize(self.lazy).reshape(self.lazy.n_rows, -1))
            if self.row_of is not None:  # rows reading one stored row are equal (contract_jit groups them)
                row_classes.remember(self._raw, self.row_of)
        return self._raw

    def in_place(self, gather: Gather) -> tuple[np.ndarray, tuple[int, ...]] | None:
        """The gathered cells as a view of the lazy base and their byte strides, if affine."""
        if self.lazy is None or gather.size == 0:
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
            with contextlib.suppress(ValueError):
                return base.view(np.uint64)
        return base

    def read(self, gather: Gather) -> tuple[np.ndarray, Gather, np.ndarray | None]:
        """(rows, gather, row_of) that read the operand's cells `gather` without copying a
        lazy operand out: its base (C-contiguous), the gather re-aimed at the base's cells
        and, for a DMA's copies, the base row each spatial row reads (the copies are not
        made: contract_jit widens one row per class, `expand` makes them for the rest)."""
        if self.lazy is None:
            return self._raw, gather, None
        return np.ascontiguousarray(self.lazy.base), lazy_rows.base_gather(self.lazy, gather), self.row_of

    def stored_raw(self) -> np.ndarray:
        """`raw`, but of the distinct rows only when `row_of` maps the rows to them."""
        if self.row_of is None:
            return self.raw
        if self._distinct is None:
            distinct = self.lazy.distinct()
            self._distinct = np.ascontiguousarray(lazy_rows.materialize(distinct).reshape(distinct.n_rows, -1))
        return self._distinct

    def cells(self, gather: Gather) -> np.ndarray:
        """The operand's cells over its layout, (rows, *shape); of the distinct rows only
        when `row_of` maps the rows to them."""
        found = self.in_place(gather)
        return found[0] if found is not None else cells_view(self.stored_raw(), gather)


def _repeats(view: np.ndarray) -> bool:
    """True when `view` (rows, n, ...) holds the same values all along its axis 1;
    compared a block of rows at a time, after `value_samples.SAMPLES` scattered cells each against its
    position 0 (`differs`) and the first row (they reject most: a comparison of a whole row
    of a 9-axis view took 20-40 us, three a contraction each run)."""
    rows = view.shape[0]
    if rows and view.shape[1] > 1 and (differs(view) or not (view[:1, 1:2] == view[:1, :1]).all()):
        return False
    block = max(1, CHECK_BLOCK // max(1, math.prod(view.shape[1:])))
    parts = [(0, 1)] + [(lo, min(rows, lo + block)) for lo in range(1, rows, block)]
    return all((view[lo:hi, 1:] == view[lo:hi, :1]).all() for lo, hi in parts)


def _value_independent(op: _Operand, gather: Gather, candidates: tuple[int, ...], side: str) -> frozenset[int]:
    """The candidate digits along which the operand's values (not only its cells) repeat:
    those it reads with a zero stride in place, the others by comparing its data. Of a
    lazy operand, kept in the run (one entry per `side`, "a" or "w") for the next contraction
    reading the same unchanged base the same way (backends/cpu/run_memo.py)."""
    candidates = tuple(k for k in candidates if k in gather.digits)
    if not candidates or op.size == 0:
        return frozenset()
    key = None
    if op.lazy is not None:
        lazy = op.lazy
        key = (gather, candidates, lazy.form, lazy.n_dst, lazy.shape,
               None if lazy.row_of is None else lazy.row_of.tobytes())
        kept = run_memo.get("independent " + side, lazy.base, key)
        if kept is not None:
            return kept
    out = frozenset() if apart(op, gather, candidates) else _compared(op, gather, candidates)
    if key is not None:
        run_memo.put("independent " + side, op.lazy.base, key, out)
    return out


def _compared(op: _Operand, gather: Gather, candidates: tuple[int, ...]) -> frozenset[int]:
    """`_value_independent` found on the operand's cells."""
    found = op.in_place(gather)
    out = set()
    for k in candidates:
        axis = gather.digits.index(k)
        if found is not None:
            view, strides = found
            if strides[axis] == 0 or _repeats(np.moveaxis(view, 1 + axis, 1)):
                out.add(k)
        elif _repeats(_digit_view(op.stored_raw(), gather, k)):
            out.add(k)
    return frozenset(out)


def contract(packed, pre: Mapping, out: Mapping, options: CpuOptions, result,
             fresh: bool = False) -> np.ndarray | Compact | None:
    """The accumulator of `contract_time(out)` after `packed` (a `contract.Packed`), the
    (rows, lane, out_time, out_packet) float32 / int32 values, as the whole buffer of
    `result` (the contract_time's type; padding rows zero), or with `fresh` a float one of
    few live rows as those rows only (backends/cpu/compact.py); None when the fast path
    does not apply."""
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
    if rows == 0:
        return layout.from_rows(np.zeros(shape, np.float32 if outer.is_float else np.int32), result)
    s_op, t_op = _Operand(outer.stream_src), _Operand(outer.trf_src)
    drop_a = _value_independent(s_op, plan.a, plan.value_a, "a")
    drop_w = _value_independent(t_op, plan.w, plan.value_w, "w")
    if drop_a or drop_w:
        plan = make_plan(*args, drop_a, drop_w)
        if plan is None:
            return None
    if outer.is_float:
        (s_raw, a, s_of), (t_raw, w, t_of) = s_op.read(plan.a), t_op.read(plan.w)
        lanes, steps, cols = shape[1:]  # the cells lane-innermost (`_lane_last`), for `contract_lane`
        flat = _contract_float(outer, (s_raw, s_of), (t_raw, t_of),
                               _lane_last_plan(_aimed(plan, a, w), lanes, steps * cols), shape, options)
        if fresh and compact.wanted(result):  # the live rows alone: no buffer of padding rows
            return compact.make(np.moveaxis(flat.reshape(rows, steps, cols, lanes), -1, 1), result)
        return np.moveaxis(layout.from_rows(flat.reshape(rows, steps, cols, lanes), result), -1, -3)
    if fresh and compact.wanted(result):  # the live rows alone, lane-innermost (as `_lane_last`):
        lanes, steps, cols = shape[1:]     # no buffer of padding rows (issue 61, first-run memory)
        rows_out = np.empty((rows, steps, cols, lanes), np.int32)
        with blas_threads(options.blas_threads):
            acc = contract_int.contract_int(outer, s_op, t_op, _lane_last_plan(plan, lanes, steps * cols), shape,
                                            rows_out.reshape(rows, -1),
                                            options.threads if options.blas_threads == 1 else 1)
        return None if acc is None else compact.make(np.moveaxis(rows_out, -1, 1), result)
    full, live = _lane_last(result, shape[1:])
    if live is not None:  # the cells stored lane-innermost: the plan's result cells renumbered
        plan = _lane_last_plan(plan, shape[1], shape[2] * shape[3])
    else:
        full, live = layout.new_rows(result, shape[1:], np.int32)
    with blas_threads(options.blas_threads):  # BLAS on one thread: the matmul may be shared by ours
        acc = contract_int.contract_int(outer, s_op, t_op, plan, shape, live,
                                        options.threads if options.blas_threads == 1 else 1)
    if acc is None:
        return None
    return layout.from_rows(live, result) if live is full else full



@functools.lru_cache(maxsize=64)
def _aimed(plan: Plan, a: Gather, w: Gather) -> Plan:
    """`plan` reading its operands by the gathers `a` and `w` (`_Operand.read`)."""
    return plan if (a, w) == (plan.a, plan.w) else attrs.evolve(plan, a=a, w=w)


def _expand(raw: np.ndarray, row_of: np.ndarray | None) -> np.ndarray:
    """The spatial rows of a `_Operand.read`: the base rows copied out by `row_of`."""
    if row_of is None:
        return raw
    rows = np.ascontiguousarray(raw[row_of])
    row_classes.remember(rows, row_of)  # equal rows
    return rows


def _contract_float(outer, s_read: tuple, t_read: tuple, plan: Plan,
                    shape: tuple[int, ...], options: CpuOptions) -> np.ndarray:
    """`s_read`, `t_read`: (rows, row_of) of `_Operand.read`."""
    bits = _SIGNIFICANT_BITS.get(outer.stream_dtype, 24), _SIGNIFICANT_BITS.get(outer.trf_dtype, 24)
    both_bf16 = outer.stream_dtype == bf16 and outer.trf_dtype == bf16
    stored_a = stored_w = None
    if both_bf16 and plan.pad is None and plan.skip is None:  # sums that cannot round: BLAS
        stored_a, stored_w = contract_jit.stored_rows(*s_read), contract_jit.stored_rows(*t_read)
        placed = contract_blas.contract(stored_a, stored_w, plan, options.threads, options.blas_threads)
        if placed is not None:  # numba neither needed nor counted towards its threshold
            return placed.reshape(shape)
    jit = contract_jit.enabled(options.jit, shape[0] * math.prod(plan.a.groups) * plan.w.groups[0])
    if jit and stored_a is None:  # the base rows and their map: one row per class widened, the copies never made
        stored_a, stored_w = contract_jit.stored_rows(*s_read), contract_jit.stored_rows(*t_read)
    if jit and both_bf16 and plan.pad is None and plan.skip is None:
        found = contract_jit.scanned(stored_a, stored_w, plan.a, plan.w, options.threads)  # ranges found on the way
        if found is not None and all(contract_float.bf16_shifts(*r) for r in found[1:]):
            if contract_float.exact_f32(*(contract_float.range_info(*r, True) for r in found[1:]), *bits, plan.terms):
                return contract_jit.place(found[0], plan.dest, plan.out_cells).reshape(shape)
    if jit:
        a, a_info = contract_jit.float_stored(*stored_a, outer.stream_dtype, plan.a, options.threads)
        w, w_info = contract_jit.float_stored(*stored_w, outer.trf_dtype, plan.w, options.threads)
    else:
        a, a_info = contract_float.float_operand(_expand(*s_read), outer.stream_dtype, plan.a)
        w, w_info = contract_float.float_operand(_expand(*t_read), outer.trf_dtype, plan.w)
    exact = contract_float.exact_f32(a_info, w_info, *bits, plan.terms)
    if jit:  # acc (rows, I, J, N')
        acc = contract_jit.core(a, w, plan.pad, plan.skip, exact, options.threads)
    else:  # (I, J, N', rows) with the rows moved first
        acc = np.moveaxis(contract_float.float_core(a, w, plan.pad, plan.skip, exact, options.threads), -1, 0)
    return contract_jit.place(acc, plan.dest, plan.out_cells).reshape(shape)
