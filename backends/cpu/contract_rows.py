"""One float32 product per spatial row of a bf16 contraction, its operands widened a block of
rows at a time, and the no-rounding guard folded over the blocks.

`backends.cpu.contract_blas` computes a contraction by BLAS only when no sum can round
(`ir.bf16_exact.no_rounding` of the ranges of the cells the layouts read). When each
spatial row needs a product of its own (`blas_route.pairing` gives "rows"), widening each
side's classes whole held both operands as float32 at once (issue 61, first-run memory:
4 + 2 MiB on `drawn_s2_2`, whose tensors are 3.25 MiB). Here each block of rows widens only
the classes it reads, into arena scratch given back before the next block, and multiplies
them at once. The guard's inputs are maxima, minima and ORs of the cells, so folding them over
the blocks, plus the classes no row reads, gives the same numbers as one pass over every
class: the same decision, and, since nothing rounds, the same bits. When the decision says
no, the products made are dropped (the exact cores compute the contraction then).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ir.bf16_exact import NONE, from_bounds, no_rounding, unit_bounds

from backends.cpu import arena, blas_route, contract_jit, run_memo

__all__ = ["products", "route"]

_NO_LOW = 0x80000000
"""The smallest nonzero magnitude of widened cells that are all zeros (`contract_jit.widened_bounds`)."""


class _Ranges:
    """The largest magnitude, the smallest nonzero one and the OR of the magnitudes of the
    widened cells seen so far (`unit_floor`'s inputs), and their units' range (`unit_range`:
    None once a cell is NaN, an infinity or a subnormal), folded block by block."""

    def __init__(self, units: bool) -> None:
        self.top, self.low, self.ors = 0, _NO_LOW, 0
        self.units: tuple[int, int] | None = (0, NONE) if units else None

    def add(self, bits: np.ndarray, unit_range: Callable[[np.ndarray], tuple[int, int] | None] | None) -> None:
        found = contract_jit.widened_bounds(bits)
        top, low, ors = found if found is not None else _bounds(bits)
        self.top, self.low, self.ors = max(self.top, top), min(self.low, low), self.ors | ors
        if unit_range is not None and self.units is not None:
            more = unit_range(bits)
            self.units = None if more is None else (max(self.units[0], more[0]), min(self.units[1], more[1]))

    def floor(self) -> tuple[int, int] | None:
        """`unit_floor` of every cell seen (`contract_blas._floor`)."""
        return (0, NONE) if self.low == _NO_LOW else from_bounds(self.top, self.low, self.ors, 16)


def _bounds(bits: np.ndarray) -> tuple[int, int, int]:
    """`contract_jit.widened_bounds` in numpy passes (numba not loaded)."""
    top, low, ors = unit_bounds(bits)
    return top, low if low < 1 << 32 else _NO_LOW, ors


def route(stored_a: tuple, stored_w: tuple, plan, order: tuple[int, ...] | None) -> blas_route.Route | None:
    """The route of a contraction that makes one product per spatial row ("rows") and finds
    neither operand widened already in the run (`contract_blas._widened_kept`, whose
    memo kinds these are), else None. Such a one is
    widened a block of rows at a time (`products`; issue 61, first-run memory:
    `drawn_s2_2` widened 4 + 2 MiB of operands whole for products made by blocks anyway)."""
    (raw_a, ca), (raw_w, cw) = stored_a, stored_w
    if blas_route.pairing(ca, cw, raw_a.shape[0], raw_w.shape[0])[0] != "rows":
        return None
    if any(run_memo.get("widened " + side, raw, (gather, order)) is not None
           for side, raw, gather in (("a", raw_a, plan.a), ("w", raw_w, plan.w))):
        return None
    run_memo.forget("widened a"), run_memo.forget("widened w")  # as a widening of each side would
    ni, _g, _r, nn = plan.a.groups
    return blas_route.route(ca, cw, raw_a.shape[0], raw_w.shape[0], (nn, ni, plan.w.groups[0]), plan.dest,
                            plan.out_cells)


def products(stored_a: tuple[np.ndarray, np.ndarray], stored_w: tuple[np.ndarray, np.ndarray], plan,
             widen: Callable, matmul: Callable, block_bytes: int,
             unit_range: Callable[[np.ndarray], tuple[int, int] | None]) -> np.ndarray | None:
    """acc (rows, N', I, J): each spatial row's A class times its W class, a block of rows
    of about `block_bytes` of widened operands at a time (`widen(raw_rows, gather)`:
    `contract_blas._widened`; `matmul(left, right, out)`), or None when some sum could round.
    The guard is `contract_blas._guarded` over every class of each side (the rows' and the
    ones no row reads): by the floors, then, when those cannot tell, by the units
    (`unit_range`), found in a second pass over the classes."""
    (raw_a, ca), (raw_w, cw) = stored_a, stored_w
    ni, g, r, nn = plan.a.groups
    nj, k = plan.w.groups[0], g * r
    out = np.empty((len(ca), nn, ni, nj), np.float32)
    step = max(1, block_bytes // (4 * nn * k * (ni + nj)))
    sides = ((raw_a, ca, plan.a, _Ranges(False)), (raw_w, cw, plan.w, _Ranges(False)))
    for lo in range(0, len(ca), step):
        fa, fw = (widen(raw[classes[lo:lo + step]], gather) for raw, classes, gather, _ in sides)
        for wide, (*_, ranges) in zip((fa, fw), sides):
            ranges.add(wide.view(np.uint32), None)
        matmul(fa, fw.transpose(0, 1, 3, 2), out[lo:lo + step])
        arena.give_back(fa), arena.give_back(fw)
    for raw, classes, gather, ranges in sides:  # the classes no row reads
        unread = np.flatnonzero(np.bincount(classes, minlength=len(raw)) == 0)
        for lo in range(0, len(unread), step):
            wide = widen(raw[unread[lo:lo + step]], gather)
            ranges.add(wide.view(np.uint32), None)
            arena.give_back(wide)
    floors = [ranges.floor() for *_, ranges in sides]
    if floors[0] is None or floors[1] is None:
        return None
    if no_rounding(floors[0], floors[1], plan.terms):
        return out
    units = [_unit_ranges(widen, raw, gather, step, unit_range) for raw, _, gather, _ in sides]
    if units[0] is None or units[1] is None or not no_rounding(units[0], units[1], plan.terms):
        return None
    return out


def _unit_ranges(widen: Callable, raw: np.ndarray, gather, step: int,
                 unit_range: Callable[[np.ndarray], tuple[int, int] | None]) -> tuple[int, int] | None:
    """`unit_range` of every class of one side, widened `step` classes at a time."""
    ranges = _Ranges(True)
    for lo in range(0, len(raw), step):
        wide = widen(raw[lo:lo + step], gather)
        ranges.add(wide.view(np.uint32), unit_range)
        arena.give_back(wide)
        if ranges.units is None:
            return None
    return ranges.units
