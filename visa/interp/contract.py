"""`contract_outer` -> `packet_reduce` -> `time_reduce`: the Contraction Engine (docs/machine/contraction.md).

Products `X[l, o, q] = widen(stream[o // tiling, q]) * widen(trf[l, e(o) * R + q % R])`
(zero where the cstream type is padding), an adjacent-pair tree over each column's `g`
leaves (`q = j * g + k`), then for every kept slot an accumulation from `+0` over the
summed steps in time order, padded steps skipped (`plan` cuts time into digits).

Floats follow the hardware order exactly (`contract_float`: blocks of output positions
that stay in cache, spread over a few threads), in the `arranged` layout of
`operands`. Every multiply and add is IEEE binary32 followed by the flush of docs/numerics.md
(`ir.contract_arith.fmul` / `fadd`); when the operand codes prove that no product or partial sum
can be subnormal, infinite or NaN, the flush is the identity and plain numpy float32
arithmetic is the same function.

Integers: an `i32` sum modulo 2^32 does not depend on its order, so the sum of products is
one `einsum` in int64 (exact: |products| <= 2^16), wrapped to i32 (as a float matmul when
that is exact, over the distinct rows when slices hold copies of the same tiles); padded
products, padded columns and padded steps are zeroed first, which adds nothing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ir import convert as cv
from ir.dtypes import i32
from ir.blas import blas_threads
from ir.exact_sum import exact_sum
from visa.interp.fast import contract_jit, halves, row_pairs, row_split, speed
from visa.interp.errors import check
from visa.interp.contract_float import FloatPath, columns
from visa.interp.memory import Memory
from visa.interp.operands import exact, natural_index, natural_operands, operands
from visa.interp.plan import Plan, build_plan
from visa.interp.fast.repeated import Repeated, compact
from visa.interp.rows import Rows
from visa.interp.shortcuts import per_record
from visa.interp.steps import ProgramState, executes
from visa.interp.trf import TrfTensor, read_weights, weight_rows
from visa.interp.values import value_dtype, widen
from ir.words import a_an

__all__ = ["run_contraction"]


@per_record
def _product_mask(plan: Plan) -> np.ndarray | None:
    """(1, lanes, *digits, columns, leaves): products an integer sum leaves out (padded
    products, products of a padded packet_reduce column, products of a padded time step),
    cut to size 1 along every axis it does not vary along (`_narrowed`: zeroing the weights
    there must not copy them once per step of a digit they do not vary along; once per
    plan)."""
    mask = None if plan.outer_pad is None else plan.outer_pad.copy()
    shape = (plan.lanes, *plan.digits, plan.q)
    if plan.reduce_pad is not None:
        col = np.arange(plan.q) // plan.g
        live = col < plan.out_cols
        extra = np.zeros(shape, bool)
        extra[..., live] = plan.reduce_pad[..., col[live]]
        mask = extra if mask is None else mask | extra
    if plan.time_pad is not None:
        extra = np.broadcast_to(plan.time_pad[None, ..., None], shape)
        mask = extra.copy() if mask is None else mask | extra
    if mask is None:
        return None
    return _narrowed(mask.reshape(1, plan.lanes, *plan.digits, plan.q // plan.g, plan.g))


def _narrowed(mask: np.ndarray) -> np.ndarray:
    """`mask` cut to size 1 along each axis it holds the same values all along (it
    broadcasts back to the same mask)."""
    for k in range(mask.ndim):
        if mask.shape[k] > 1 and _constant_axis(mask, k):
            mask = mask[(slice(None),) * k + (slice(0, 1),)]
    return np.ascontiguousarray(mask)


def _exact_sum(sa: np.ndarray, wa: np.ndarray, labels: list[int], out: list[int], plan: Plan,
               mem: Memory, as_float: bool = False) -> tuple[np.ndarray, int]:
    """(einsum(sa, wa) over the summed labels, exactly, as int64; a bound on every |sum|).
    Each result sums at most `terms` products of magnitude <= max|sa| * max|wa|, so when
    that bound is below 2^24 (2^53) every partial sum is an integer float32 (float64) holds
    exactly, in any order; the float matmul of `ir.exact_sum` (staged in the run's scratch
    arrays) is then much faster than the int64 einsum, and `as_float` keeps its float
    result (the same integers)."""
    terms = plan.g * math.prod(n for n, k in zip(plan.digits, plan.keep) if not k)
    bound = terms * _magnitude(sa) * _magnitude(wa)
    ftype = np.float32 if bound < 1 << 24 else np.float64 if bound < 1 << 53 else None
    if ftype is None:
        return np.einsum(sa.astype(np.int64), labels, wa.astype(np.int64), labels, out), bound
    sa, wa = _unbatched(sa, wa, out)
    return exact_sum(sa, wa, out, ftype, mem.scratch, as_float, halves.run_halves if speed.on() else None), bound


def _unbatched(sa: np.ndarray, wa: np.ndarray, keep: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """`sa`, `wa` with every kept axis both vary along but one holds constant (a feed that
    repeats its packets, weights shared across a digit) cut to size 1 in that one: the
    same sums, a matmul with fewer batches and wider rows or columns."""
    for k in keep:
        if sa.shape[k] > 1 and wa.shape[k] > 1:
            if _constant_axis(sa, k):
                sa = sa[(slice(None),) * k + (slice(0, 1),)]
            elif _constant_axis(wa, k):
                wa = wa[(slice(None),) * k + (slice(0, 1),)]
    return sa, wa


def _constant_axis(v: np.ndarray, k: int) -> bool:
    """Does `v` hold the same values all along axis `k`? The far ends of one line first."""
    if v.strides[k] == 0:
        return True
    first = v[(slice(None),) * k + (slice(0, 1),)]
    last = v[(slice(None),) * k + (slice(-1, None),)]
    return bool(first.reshape(-1)[:1] == last.reshape(-1)[:1]) and bool((v == first).all())


def _row_sum(sa: np.ndarray, wa: np.ndarray | Weights, keep: list[int], plan: Plan, mem: Memory,
             as_float: bool = False) -> tuple[np.ndarray, int]:
    """`_exact_sum` over the natural layout keeping the axes `keep` (rows first), the
    distinct rows of a `row_split.split` (visa/interp/fast/row_split.py) multiplied once (and the weights of only those rows
    read): (sums, bound). The rows axis of the sums is either one axis of every row, or two
    (outer, inner) that broadcast to them."""
    split = row_split.split(sa, wa if isinstance(wa, np.ndarray) else wa.proxy) if speed.on() else None
    labels = list(range(sa.ndim))
    if split is None:
        return _exact_sum(sa, _rows(wa, None), labels, keep, plan, mem, as_float)
    outer, inner, stream_outer = split
    vs = sa.reshape(outer, inner, *sa.shape[1:])
    if stream_outer:
        a, b = vs[:, :1], _rows(wa, np.arange(inner))[None]
    else:
        a, b = vs[:1], _rows(wa, np.arange(outer) * inner)[:, None]
    return _exact_sum(a, b, list(range(sa.ndim + 1)), [0, *(k + 1 for k in keep)], plan, mem, as_float)


class Weights:
    """The TRF operand of an integer contraction in the natural layout, read when needed:
    its `shape` (rows first), a `proxy` (rows, ...) whose rows are equal where the
    operand's rows are (the TRF bytes they decode, or the operand itself), and `read`."""

    def __init__(self, outer: Any, trf: TrfTensor, rows: Rows, mem: Memory, index: np.ndarray,
                 mask: np.ndarray | None) -> None:
        self._read = (outer, trf, rows, mem, index)
        self.mask = mask
        self.shape = (rows.count, trf.lanes, *index.shape)
        if mask is not None:
            self.shape = np.broadcast_shapes(self.shape, mask.shape)
        self.proxy = weight_rows(outer, trf, rows, mem, index) if speed.on() else None
        self._all = None
        if self.proxy is None:
            self._all = self.proxy = self.read(None)

    def read(self, which: np.ndarray | None) -> np.ndarray:
        """The operand's rows `which` (None: every row), padded products zero."""
        if self._all is not None:
            return self._all if which is None else self._all[which]
        outer = self._read[0]
        w = widen(read_weights(*self._read, which), outer.weight_type)
        return w if self.mask is None else np.where(self.mask, w.dtype.type(0), w)


def _rows(wa: np.ndarray | Weights, which: np.ndarray | None) -> np.ndarray:
    """Rows `which` (None: every row) of the weights (an array, or read by its `read`)."""
    if not isinstance(wa, np.ndarray):
        return wa.read(which)
    return wa if which is None else wa[which]


def _magnitude(a: np.ndarray) -> int:
    """The largest |value| of an integer array (computed in Python ints: no wrap)."""
    return max(abs(int(a.min())), abs(int(a.max()))) if a.size else 0


def _pairs(stream: np.ndarray | Repeated, wa: Weights) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`row_pairs.pair_grid` of the rows, when the stream (a `Repeated` naming its equal
    rows) and the weights (a load's note, `Weights.proxy` of one column) both know their
    equal rows; else None."""
    if not isinstance(stream, Repeated) or stream.held is None or wa.proxy is None or wa.proxy.shape[1:] != (1,):
        return None
    return row_pairs.pair_grid(stream.held, wa.proxy[:, 0])


def _pair_sum(sa: np.ndarray, wa: Weights, keep: list[int], plan: Plan, mem: Memory, as_float: bool,
              pairs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, int]:
    """`_row_sum` of the rows' distinct pairs (`_pairs`; `sa` the stream rows it names,
    part by part), one batched matmul: (sums over the grid (part, stream class, weight
    class, ...), bound); `_placed` puts each row's sums in place."""
    s_rows, w_rows, place = pairs
    n_parts, ns, nw = s_rows.shape[0], s_rows.shape[1], w_rows.shape[1]
    a = sa.reshape(n_parts, ns, 1, *sa.shape[1:])
    w = _rows(wa, w_rows.reshape(-1))
    b = w.reshape(n_parts, 1, nw, *w.shape[1:])
    return _exact_sum(a, b, list(range(sa.ndim + 2)), [0, 1, 2, *(k + 2 for k in keep[1:])], plan, mem, as_float)


def _placed(acc: np.ndarray, y: np.ndarray,
            pairs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(a view of the rows `acc` as the grid of `y`'s (part, stream class, weight class)
    axes, `y`) when the rows run through the grid in the order of a transpose of it
    (`row_pairs.grid_axes`: then `y` is copied into them once, not gathered by `place`
    first), else (`acc`, `y` gathered by `place`)."""
    axes = row_pairs.grid_axes(pairs) if speed.on() else None
    if axes is None:
        return acc, y.reshape(-1, *y.shape[3:])[pairs[2]]
    dims = (pairs[0].shape[0], pairs[0].shape[1], pairs[1].shape[1])
    grid = acc.reshape(*(dims[k] for k in axes), *acc.shape[1:])
    return grid.transpose(*np.argsort(axes), *range(3, grid.ndim)), y


def _int(plan: Plan, s: np.ndarray, wa: Weights, mem: Memory,
         pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """i32 contraction over the natural layout: (rows, lanes, *kept, out_cols) int32, held
    lanes innermost (the order `lane_fold` drains them in). With `pairs` (`_pairs`), `s`
    holds the stream rows it names only."""
    nd = len(plan.digits)
    sa = compact(s) if speed.on() else s     # a repeated stream's copies held once
    # a summed digit neither operand varies along adds the same product once per step
    repeat = math.prod(n for n, k, a, b in zip(plan.digits, plan.keep, sa.shape[2:], wa.shape[2:])
                       if not k and a == b == 1)
    # axes: rows, lanes, *digits, column, leaf
    kept = [2 + i for i, k in enumerate(plan.keep) if k]
    with blas_threads(1):   # many small matmuls: a thread pool only slows them down
        if pairs is None:
            y, bound = _row_sum(sa, wa, [0, 1, *kept, nd + 2], plan, mem, as_float=repeat == 1)
        else:
            y, bound = _pair_sum(sa, wa, [0, 1, *kept, nd + 2], plan, mem, repeat == 1, pairs)
    if repeat != 1:
        y, bound = y * repeat, bound * repeat
    if bound >= 1 << 31:    # sums may leave i32: wrap them (else the cast below is exact)
        y = cv.wrap(y.astype(np.int64, copy=False), i32)
    y = columns(y, plan.out_cols)
    kept_shape = tuple(n for n, k in zip(plan.digits, plan.keep) if k)
    held = mem.scratch((len(pairs[2]) if pairs else s.shape[0], *kept_shape, plan.out_cols, plan.lanes),
                       np.dtype(np.int32))
    acc = np.moveaxis(held, -1, 1)
    if pairs is not None:   # y: (part, stream class, weight class, ...)
        grid, y = _placed(acc, y, pairs)
    else:                   # y: rows, or (outer, inner) that broadcast to them
        grid = acc.reshape(*y.shape[:y.ndim - acc.ndim + 1], *acc.shape[1:])
    np.copyto(grid, np.broadcast_to(y, grid.shape), casting="unsafe")
    return acc


def _products(plan: Plan, rows: Rows) -> int:
    """Multiplies of one contraction, over every row and lane."""
    return rows.count * plan.lanes * plan.q * math.prod(plan.digits)


def run_contraction(outer: Any, reduce: Any, time: Any, stream: np.ndarray | Repeated, trf: TrfTensor,
                    rows: Rows, mem: Memory) -> np.ndarray:
    """Execute the three records: the accumulator, (rows, lanes, slots, out_cols), i32 or f32."""
    target = mem.target
    bits = target.bits_of(outer.stream_type.dtype) or 0
    check(bits in (4, 8, 16), f"stream_type {outer.stream_type} is not a contraction operand", outer)
    flit = 8 * target.constants.FLIT_BYTES // bits
    check(stream.dtype == value_dtype(outer.stream_type.dtype), f"the feed does not deliver {outer.stream_type} "
          f"elements", outer)
    check(stream.shape[-1] == flit, f"the fed flits hold {stream.shape[-1]} elements, {a_an(outer.stream_type)} flit "
          f"{flit}", outer)
    check(outer.lanes == trf.lanes, f"lanes {outer.lanes}, the TRF tensor has {trf.lanes}", outer)
    mac = outer.mac_type.dtype
    check(mac.bits == 32 and mac.is_float == outer.stream_type.dtype.is_float == outer.weight_type.dtype.is_float,
          f"{outer.stream_type} x {outer.weight_type} cannot accumulate in {outer.mac_type}", outer)
    plan = build_plan(outer, reduce, time, stream.shape[1], flit, target)
    if mac.is_float and speed.on() and contract_jit.applies(outer, stream) and contract_jit.enabled(_products(plan, rows)):
        acc = contract_jit.run_float(plan, stream, outer, trf, rows, mem)   # a Repeated stream stays factored
    elif mac.is_float:
        if isinstance(stream, Repeated):
            stream = stream.materialize()
        s, w, s_range, w_range = operands(plan, stream, outer, trf, rows, mem, arranged=True)
        terms = plan.g * math.prod(plan.digits_summed())
        acc = FloatPath(plan, s, w, exact([s_range, w_range], terms), rows.count).run()
    else:
        weights = Weights(outer, trf, rows, mem, natural_index(plan), _product_mask(plan))
        pairs = _pairs(stream, weights) if speed.on() else None
        if pairs is not None:   # the sums of each distinct (stream row, weight row) pair once
            s_rows, w_rows, place = pairs
            s, _ = natural_operands(plan, stream.rows(s_rows.reshape(-1)), outer, s_rows.size)
            acc = _int(plan, s, weights, mem, (s_rows, w_rows, place))
        else:
            s, _ = natural_operands(plan, stream, outer, rows)
            acc = _int(plan, s, weights, mem)
    acc = acc.reshape(rows.count, plan.lanes, plan.slots, plan.out_cols)
    if plan.out_pad is not None:
        acc = np.where(plan.out_pad[None], acc.dtype.type(0), acc)
    return acc


@executes("contract_outer")
def _contraction_step(ops: list[Any], i: int, state: ProgramState) -> int:
    """The three contraction records (contract_outer, packet_reduce, time_reduce) run as one step."""
    op = ops[i]
    check(i + 2 < len(ops) and ops[i + 1].MNEMONIC == "packet_reduce" and ops[i + 2].MNEMONIC == "time_reduce"
          and ops[i + 1].input == op.result and ops[i + 2].input == ops[i + 1].result,
          "a contract_outer is followed by its packet_reduce and time_reduce", op)
    trf = state.env.get(op.weights.id)
    check(isinstance(trf, TrfTensor), f"weights {op.weights} is not a loaded TRF tensor", op)
    stream = state.input(op.stream, op, repeated=True)
    state.local[ops[i + 2].result.id] = run_contraction(op, ops[i + 1], ops[i + 2], stream, trf, state.rows,
                                                        state.mem)
    return 3
