"""`contract_outer` -> `packet_reduce` -> `time_reduce`: the Contraction Engine (docs/machine/contraction.md).

Products `X[l, o, q] = widen(stream[o // tiling, q]) * widen(trf[l, e(o) * R + q % R])`
(zero where the cstream type is padding), an adjacent-pair tree over each column's `g`
leaves (`q = j * g + k`), then for every kept slot an accumulation from `+0` over the
summed steps in time order, padded steps skipped (`plan` cuts time into digits).

Floats follow the hardware order exactly, on row chunks that stay in cache (spread over
a few threads; numpy releases the GIL in its loops), in the `arranged` layout of
`operands`. Every multiply and add is IEEE binary32 followed by the flush of docs/numerics.md
(`ir.contract_arith.fmul` / `fadd`); when the operand codes prove that no product or partial sum
can be subnormal, infinite or NaN, the flush is the identity and plain numpy float32
arithmetic is the same function.

Integers: an `i32` sum modulo 2^32 does not depend on its order, so the sum of products is
one `einsum` in int64 (exact: |products| <= 2^16), wrapped to i32; padded products,
padded columns and padded steps are zeroed first, which adds nothing.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ir import contract_arith as ca
from ir import convert as cv
from ir.dtypes import i32
from ir.exact_sum import exact_sum
from visa.interp.errors import check
from visa.interp.memory import Memory
from visa.interp.operands import Layout, exact, operands
from visa.interp.plan import Plan, build_plan
from visa.interp.rows import Rows
from visa.interp.steps import ProgramState, executes
from visa.interp.trf import TrfTensor
from visa.interp.values import value_dtype

__all__ = ["run_contraction", "CHUNK", "THREADS"]

CHUNK = 1 << 18
"""Products per row chunk of the float path (1 MiB of float32)."""
THREADS = min(4, os.cpu_count() or 1)
"""Threads sharing the row chunks of the float path (the result does not depend on it)."""

_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="visa-interp")
    return _POOL


def _columns(y: np.ndarray, out_cols: int) -> np.ndarray:
    """Keep the first `out_cols` reduced columns; columns past the reduced packet are zero."""
    cols = y.shape[-1]
    if out_cols <= cols:
        return y[..., :out_cols]
    pad = np.zeros((*y.shape[:-1], out_cols - cols), y.dtype)
    return np.concatenate([y, pad], axis=-1)


class _Float:
    """The float path over the arranged layout, one row chunk at a time."""

    def __init__(self, plan: Plan, s: np.ndarray, w: np.ndarray, exact_: bool) -> None:
        self.plan, self.s, self.w = plan, s, w
        self.mul = np.multiply if exact_ else ca.fmul
        self.add = np.add if exact_ else ca.fadd
        lay = Layout(plan)
        self.lay = lay
        self.kept = tuple(n for n, k in zip(plan.digits, plan.keep) if k)
        self.red = tuple(n for n, k in zip(plan.digits, plan.keep) if not k)
        self.opad = None
        if plan.outer_pad is not None:   # (lanes, *digits, q) -> (g, *summed, 1, lanes, *kept, cols)
            m = plan.outer_pad.reshape(*plan.outer_pad.shape[:-1], plan.q // plan.g, plan.g)
            m = m[..., lay.leaves()[:, 0] % plan.g]
            m = lay.digits(m, lead=1)                      # (lanes, *summed, *kept, cols, g)
            m = np.moveaxis(m, -1, 0)                      # (g, lanes, *summed, *kept, cols)
            self.opad = np.expand_dims(np.moveaxis(m, 1, lay.rows_axis), lay.rows_axis)
        self.rpad = None if plan.reduce_pad is None else self._slab(plan.reduce_pad)
        self.tpad = None if plan.time_pad is None else self._slab(plan.time_pad[None, ..., None])

    def _slab(self, mask: np.ndarray) -> np.ndarray:
        """(lanes|1, *digits, cols) -> (n summed, 1, lanes|1, *kept, cols)."""
        m = self.lay.digits(mask, lead=1)                  # (lanes, *summed, *kept, cols)
        m = np.moveaxis(m, 0, self.lay.n_red)              # (*summed, lanes, *kept, cols)
        m = np.broadcast_to(m, (*self.red, *m.shape[self.lay.n_red:]))
        return m.reshape(-1, 1, *m.shape[self.lay.n_red:])

    def chunk(self, out: np.ndarray, r0: int, r1: int) -> None:
        """Rows [r0, r1): products, tree, time accumulation, into `out[r0:r1]`."""
        plan, ax = self.plan, self.lay.rows_axis
        take = (slice(None),) * ax + (slice(r0, r1),)
        with np.errstate(all="ignore"):
            x = self.mul(self.s[take], self.w[take])
            if self.opad is not None:
                x = np.where(self.opad, np.float32(0), x)
            while x.shape[0] > 1:
                h = x.shape[0] // 2
                x = self.add(x[:h], x[h:])
            y = _columns(x[0], plan.out_cols)                  # (*summed, rows, lanes, *kept, cols)
            y = np.broadcast_to(y, (*self.red, r1 - r0, plan.lanes, *self.kept, plan.out_cols))
            y = y.reshape(-1, *y.shape[self.lay.n_red:])
            acc = np.zeros(y.shape[1:], np.float32)
            for i in range(y.shape[0]):
                step = y[i] if self.rpad is None else np.where(self.rpad[i], np.float32(0), y[i])
                summed = self.add(acc, step)
                acc = summed if self.tpad is None else np.where(self.tpad[i], acc, summed)
        out[r0:r1] = acc

    def run(self, nrows: int) -> np.ndarray:
        plan = self.plan
        out = np.zeros((nrows, plan.lanes, *self.kept, plan.out_cols), np.float32)
        per_row = math.prod(np.broadcast_shapes(self.s.shape, self.w.shape)) // max(nrows, 1)
        step = max(1, CHUNK // max(per_row, 1))
        bounds = [(r, min(r + step, nrows)) for r in range(0, nrows, step)]
        if THREADS > 1 and len(bounds) > 1:
            list(_pool().map(lambda b: self.chunk(out, *b), bounds))
        else:
            for b in bounds:
                self.chunk(out, *b)
        return out


def _product_mask(plan: Plan) -> np.ndarray | None:
    """(lanes, *digits, q): products an integer sum leaves out (padded products, products
    of a padded packet_reduce column, products of a padded time step)."""
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
    return mask


def _exact_sum(sa: np.ndarray, wa: np.ndarray, labels: list[int], out: list[int], plan: Plan) -> np.ndarray:
    """einsum(sa, wa) over the summed labels, exactly, as int64. Each result sums at most
    `terms` products of magnitude <= max|sa| * max|wa|, so when that bound is below 2^24
    (2^53) every partial sum is an integer float32 (float64) holds exactly, in any order;
    the float matmul of `ir.exact_sum` is then much faster than the int64 einsum."""
    terms = plan.g * math.prod(n for n, k in zip(plan.digits, plan.keep) if not k)
    bound = terms * _magnitude(sa) * _magnitude(wa)
    ftype = np.float32 if bound < 1 << 24 else np.float64 if bound < 1 << 53 else None
    if ftype is None:
        return np.einsum(sa.astype(np.int64), labels, wa.astype(np.int64), labels, out)
    return exact_sum(sa, wa, out, ftype)


def _magnitude(a: np.ndarray) -> int:
    """The largest |value| of an integer array (computed in Python ints: no wrap)."""
    return max(abs(int(a.min())), abs(int(a.max()))) if a.size else 0


def _int(plan: Plan, s: np.ndarray, w: np.ndarray) -> np.ndarray:
    """i32 contraction over the natural layout: (rows, lanes, *kept, out_cols) int32."""
    nd, cols = len(plan.digits), plan.q // plan.g
    sa, wa = s, w
    mask = _product_mask(plan)
    if mask is not None:
        wa = np.where(mask.reshape(1, plan.lanes, *plan.digits, cols, plan.g), wa.dtype.type(0), wa)
    # a summed digit neither operand varies along adds the same product once per step
    repeat = math.prod(n for n, k, a, b in zip(plan.digits, plan.keep, sa.shape[2:], wa.shape[2:])
                       if not k and a == b == 1)
    labels = list(range(nd + 4))                       # rows, lanes, *digits, column, leaf
    kept = [2 + i for i, k in enumerate(plan.keep) if k]
    y = _exact_sum(sa, wa, labels, [0, 1, *kept, nd + 2], plan) * repeat
    y = _columns(y, plan.out_cols)
    kept_shape = tuple(n for n, k in zip(plan.digits, plan.keep) if k)
    y = np.broadcast_to(y, (s.shape[0], plan.lanes, *kept_shape, plan.out_cols))
    return cv.wrap(y, i32)


def run_contraction(outer: Any, reduce: Any, time: Any, stream: np.ndarray, trf: TrfTensor, rows: Rows,
                    mem: Memory) -> np.ndarray:
    """Execute the three records: the accumulator, (rows, lanes, slots, out_cols), i32 or f32."""
    target = mem.target
    bits = target.bits_of(outer.stream_type.dtype) or 0
    check(bits in (4, 8, 16), f"stream_type {outer.stream_type} is not a contraction operand", outer)
    flit = 8 * target.constants.FLIT_BYTES // bits
    check(stream.dtype == value_dtype(outer.stream_type.dtype), f"the feed does not deliver {outer.stream_type} "
          f"elements", outer)
    check(stream.shape[-1] == flit, f"the fed flits hold {stream.shape[-1]} elements, a {outer.stream_type} flit "
          f"{flit}", outer)
    check(outer.lanes == trf.lanes, f"lanes {outer.lanes}, the TRF tensor has {trf.lanes}", outer)
    mac = outer.mac_type.dtype
    check(mac.bits == 32 and mac.is_float == outer.stream_type.dtype.is_float == outer.weight_type.dtype.is_float,
          f"{outer.stream_type} x {outer.weight_type} cannot accumulate in {outer.mac_type}", outer)
    plan = build_plan(outer, reduce, time, stream.shape[1], flit, target)
    s, w, s_raw, w_raw = operands(plan, stream, outer, trf, rows, mem, arranged=mac.is_float)
    if mac.is_float:
        terms = plan.g * math.prod(plan.digits_summed())
        acc = _Float(plan, s, w, exact(outer, s_raw, w_raw, terms)).run(rows.count)
    else:
        acc = _int(plan, s, w)
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
    stream = state.input(op.stream, op)
    state.local[ops[i + 2].result.id] = run_contraction(op, ops[i + 1], ops[i + 2], stream, trf, state.rows,
                                                        state.mem)
    return 3
