"""The float path of the Contraction Engine (`mac_type` f32), over the arranged operands.

The operands come in the `arranged` layout of `visa.interp.operands`, `(*kept, lanes,
leaves, *summed, columns, rows)`. The output positions `(*kept, lanes)` are cut into blocks of about `CHUNK` products; for each block the products are made,
padded products zeroed, the adjacent-pair tree summed (bit-reversed leaves: every level
adds the second half to the first) and then, per kept slot, the summed steps accumulated
from `+0` in time order, padded steps skipped. Every multiply and add is IEEE binary32
followed by the flush of docs/numerics.md (`ir.contract_arith.fmul` / `fadd`), or plain
numpy float32 arithmetic when `operands.exact` proved the flush the identity. Blocks are
shared by a few threads (numpy releases the GIL in its loops); each output has one
writer, so the result does not depend on the thread count.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import numpy as np

from ir import contract_arith as ca
from visa.interp.operands import Layout, widen_codes
from visa.interp.plan import Plan

__all__ = ["FloatPath", "CHUNK", "THREADS", "columns"]

CHUNK = 1 << 17
"""Products per block of the float path (512 KiB of float32: the tree stays in cache)."""
THREADS = min(4, os.cpu_count() or 1)
"""Threads sharing the blocks of the float path (the result does not depend on it)."""

_POOL: ThreadPoolExecutor | None = None

Block = tuple[tuple[int, ...], int, int]
"""Output positions: fixed indices of the leading output axes, a range of the next one."""


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="visa-interp")
    return _POOL


def _part(arr: np.ndarray, first: int, block: Block) -> np.ndarray:
    """The block of `arr` whose output axes start at `first` (size-1 axes broadcast)."""
    idx, r0, r1 = block
    sl = [slice(None)] * arr.ndim
    for k, i in enumerate(idx):
        if arr.shape[first + k] > 1:
            sl[first + k] = slice(i, i + 1)
    axis = first + len(idx)
    if arr.shape[axis] > 1:
        sl[axis] = slice(r0, r1)
    return arr[tuple(sl)]


def columns(y: np.ndarray, out_cols: int, axis: int = -1) -> np.ndarray:
    """Keep the first `out_cols` reduced columns (axis `axis`, counted from the end); columns
    past the reduced packet are zero."""
    cols = y.shape[axis]
    if out_cols <= cols:
        return y[(..., slice(0, out_cols), *(slice(None),) * (-1 - axis))]
    pad = np.zeros((*y.shape[:axis], out_cols - cols, *y.shape[axis:][1:]), y.dtype)
    return np.concatenate([y, pad], axis=axis)


class FloatPath:
    """One float contraction: operands, masks in the arranged layout, and the blocking."""

    def __init__(self, plan: Plan, s: np.ndarray, w: np.ndarray, exact_: bool, rows: int) -> None:
        self.plan, self.s, self.w, self.rows, self.exact = plan, s, w, rows, exact_
        self.mul = np.multiply if exact_ else ca.fmul
        self.add = np.add if exact_ else ca.fadd
        lay = Layout(plan)
        self.lay = lay
        self.kept = tuple(n for n, k in zip(plan.digits, plan.keep) if k)
        self.red = tuple(n for n, k in zip(plan.digits, plan.keep) if not k)
        self.out_sizes = (*self.kept, plan.lanes)
        self.split = self._split()
        self.s, self.w = self._operand(s), self._operand(w)
        self.opad = None
        if plan.outer_pad is not None:   # (lanes, *digits, q) -> (*kept, lanes, g, *summed, cols, 1)
            self.opad = lay.arrange(plan.outer_pad[..., lay.leaves()])[..., None]
        self.rpad = None if plan.reduce_pad is None else self._steps(plan.reduce_pad[..., None, :])
        self.tpad = None if plan.time_pad is None else self._steps(plan.time_pad[None, ..., None, None])

    def _steps(self, mask: np.ndarray) -> np.ndarray:
        """(lanes|1, *digits, 1, cols|1) -> (*kept, lanes|1, summed steps, cols|1, 1)."""
        m = self.lay.arrange(mask)                        # (*kept, lanes, 1, *summed, cols)
        lead = m.shape[:self.lay.leaf_axis]
        m = np.broadcast_to(m, (*lead, 1, *self.red, m.shape[-1]))
        return m.reshape(*lead, -1, m.shape[-1], 1)

    def _split(self) -> tuple[int, int]:
        """(p, step): blocks fix output axes before `p`, take `step` positions of axis `p`
        and all of the later ones, about `CHUNK` products in all; the lanes (the last
        axis, at most 8) are never split, so a stream part serves every lane at once."""
        sizes = self.out_sizes
        unit = self.plan.q * math.prod(self.red) * self.rows
        for p in range(len(sizes)):
            inner = math.prod(sizes[p + 1:]) * unit
            if inner <= CHUNK:
                break
        return p, sizes[p] if p == len(sizes) - 1 else max(1, CHUNK // inner)

    def _operand(self, x: np.ndarray) -> np.ndarray:
        """Float operands as they are; bf16 codes (`operands.widen_codes`) stay codes, widened
        block by block, when every block reads its own part of them (each code once), else
        widened here."""
        if x.dtype != np.uint16:
            return x
        p, step = self.split
        sizes = self.out_sizes
        own = all(x.shape[a] > 1 or sizes[a] == 1 for a in range(p)) and (x.shape[p] > 1 or step >= sizes[p])
        return x if own else widen_codes(x)

    def blocks(self) -> Iterator[Block]:
        """Blocks of output positions of about `CHUNK` products each, outer to inner."""
        sizes = self.out_sizes
        p, step = self.split
        for idx in np.ndindex(*sizes[:p]):
            for r0 in range(0, sizes[p], step):
                yield tuple(idx), r0, min(sizes[p], r0 + step)

    def _tree(self, x: np.ndarray) -> np.ndarray:
        """The adjacent-pair tree over the leaves, then the leaf axis dropped."""
        lead = (slice(None),) * self.lay.leaf_axis
        while x.shape[self.lay.leaf_axis] > 1:
            h = x.shape[self.lay.leaf_axis] // 2
            low, high = x[(*lead, slice(0, h))], x[(*lead, slice(h, 2 * h))]
            x = np.add(low, high, out=low) if self.exact else self.add(low, high)
        return x[(*lead, 0)]

    def _products(self, block: Block, buf: np.ndarray) -> np.ndarray:
        """The block's products, padded ones zero (exact: in `buf`, reused block to block)."""
        a, b = (_part(x, 0, block) for x in (self.s, self.w))
        a, b = (widen_codes(x) if x.dtype == np.uint16 else x for x in (a, b))
        if not self.exact:
            x = self.mul(a, b)
            return x if self.opad is None else np.where(_part(self.opad, 0, block), np.float32(0), x)
        shape = np.broadcast_shapes(a.shape, b.shape)
        x = buf[:math.prod(shape)].reshape(shape)
        np.multiply(a, b, out=x)
        if self.opad is not None:
            np.copyto(x, np.float32(0), where=_part(self.opad, 0, block))
        return x

    def block(self, out: np.ndarray, block: Block, buf: np.ndarray) -> None:
        """The block's accumulators, into `out` (*kept, lanes, out_cols, rows)."""
        plan = self.plan
        idx, r0, r1 = block
        lead = (*([1] * len(idx)), r1 - r0, *self.out_sizes[len(idx) + 1:])
        with np.errstate(all="ignore"):
            x = self._products(block, buf)
            y = columns(self._tree(x), plan.out_cols, -2)     # (*kept, lanes, *summed, out_cols, rows)
            y = np.broadcast_to(y, (*lead, *self.red, plan.out_cols, self.rows))
            y = y.reshape(*lead, -1, plan.out_cols, self.rows)
            rpad = None if self.rpad is None else _part(self.rpad, 0, block)
            tpad = None if self.tpad is None else _part(self.tpad, 0, block)
            at = (slice(None),) * len(lead)
            acc = np.zeros((*lead, plan.out_cols, self.rows), np.float32)
            for i in range(y.shape[-3]):
                yi = y[(*at, i)]
                step = yi if rpad is None else np.where(rpad[(*at, i)], np.float32(0), yi)
                if tpad is None and self.exact:
                    np.add(acc, step, out=acc)
                    continue
                summed = self.add(acc, step)
                acc = summed if tpad is None else np.where(tpad[(*at, i)], acc, summed)
        out[(*(slice(i, i + 1) for i in idx), slice(r0, r1))] = acc

    def run(self) -> np.ndarray:
        """The accumulator, (rows, lanes, *kept, out_cols) float32."""
        out = np.zeros((*self.out_sizes, self.plan.out_cols, self.rows), np.float32)
        blocks = list(self.blocks())
        if THREADS > 1 and len(blocks) > 1:
            shares = [blocks[k::THREADS] for k in range(THREADS)]
            for done in [_pool().submit(self._blocks, out, share) for share in shares if share]:
                done.result()
        else:
            self._blocks(out, blocks)
        return np.moveaxis(out, (-1, self.lay.lanes_axis), (0, 1))

    def _blocks(self, out: np.ndarray, blocks: list[Block]) -> None:
        """Run `blocks` in order on one thread, with one product buffer for all of them."""
        size = max(math.prod(np.broadcast_shapes(_part(self.s, 0, b).shape, _part(self.w, 0, b).shape))
                   for b in blocks)
        buf = np.empty(size if self.exact else 0, np.float32)
        for b in blocks:
            self.block(out, b, buf)
