"""The two operands of a contraction, read by the plan's index tables, in a compute layout.

Positions of the product space are `(row, lane, *digits, column j, leaf k)` with packet
position `q = j * g + k`. The stream operand at a position is the packet element
`packets[row, stream_step(digits), q]`; the TRF operand is lane `l`'s element
`trf_read(digits) * R + q % R`. Two layouts:

- `natural`: `(rows, lanes|1, *digits, columns, leaves)` (the integer path);
- `arranged`: `(leaves, *summed digits, rows, lanes|1, *kept digits, columns)` with the
  leaves in bit-reversed order (the float path: each tree level adds two contiguous
  halves, each summed time step is one contiguous slab).

Axes an operand does not vary along keep size 1 (broadcast). `exact` decides, from the
codes present, whether the float flush of docs/numerics.md can ever act.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from visa.interp.memory import Memory
from visa.interp.plan import Plan
from visa.interp.rows import Rows
from visa.interp.trf import TrfTensor, read_weights
from visa.interp.values import widen, widen_table

__all__ = ["Layout", "operands", "exact"]

_SIG_BITS = {"BF16": 8, "F8E4M3": 4, "F8E5M2": 3}


def _bitrev(n: int) -> np.ndarray:
    bits = n.bit_length() - 1
    return np.array([int(format(i, f"0{bits}b")[::-1], 2) if bits else 0 for i in range(n)], np.int64)


class Layout:
    """Axis bookkeeping of the arranged layout `[leaf, *summed, rows, lanes, *kept, column]`."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.red = [i for i, k in enumerate(plan.keep) if not k]
        self.kept = [i for i, k in enumerate(plan.keep) if k]
        self.n_red = len(self.red)
        self.rows_axis = 1 + self.n_red

    def digits(self, arr: np.ndarray, lead: int = 0) -> np.ndarray:
        """(*lead axes, *digits, *rest) -> (*lead, *summed, *kept, *rest)."""
        nd = len(self.plan.digits)
        order = [*range(lead), *(lead + i for i in self.red), *(lead + i for i in self.kept),
                 *range(lead + nd, arr.ndim)]
        return arr.transpose(order)

    def leaves(self) -> np.ndarray:
        """Packet position of every (leaf, column): `j * g + bitrev(k)`, shape (g, cols)."""
        g = self.plan.g
        return np.arange(self.plan.q // g)[None, :] * g + _bitrev(g)[:, None]


def _pattern(plan: Plan, lay: Layout | None, table: np.ndarray, scale: int, mod: int) -> np.ndarray:
    """Index `table(digits) * scale + q % mod` over the positions of a layout, without the
    row and lane axes: natural `(*digits, cols, g)`, arranged `(g, *summed, *kept, cols)`."""
    nd = len(plan.digits)
    if lay is None:
        q = np.arange(plan.q).reshape(plan.q // plan.g, plan.g)
        return table.reshape(*table.shape, 1, 1) * scale + q % mod
    t = lay.digits(table)[None, ..., None]
    q = lay.leaves()
    return t * scale + (q % mod).reshape(plan.g, *([1] * nd), plan.q // plan.g)


def _place(raw: np.ndarray, lay: Layout | None, lanes: bool) -> np.ndarray:
    """(rows, [lanes,] *pattern) -> the layout's axis order (a view)."""
    if not lanes:
        raw = raw[:, None]
    if lay is None:
        return raw
    return np.moveaxis(raw, (0, 1), (lay.rows_axis, lay.rows_axis + 1))


def operands(plan: Plan, stream: np.ndarray, outer: Any, trf: TrfTensor, rows: Rows, mem: Memory,
             arranged: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(stream, weights) widened in the chosen layout, and the raw codes each was read from."""
    lay = Layout(plan) if arranged else None
    packets = stream.reshape(rows.count, -1)
    s_pat = _pattern(plan, lay, plan.stream_step, plan.q, plan.q)
    s_raw = np.take(packets, s_pat.reshape(-1), axis=1).reshape(rows.count, *s_pat.shape)
    w_pat = _pattern(plan, lay, plan.trf_read, plan.read_elems, plan.read_elems)
    w_raw = read_weights(outer, trf, rows, mem, w_pat)
    s = widen(_place(s_raw, lay, False), outer.stream_type)
    w = widen(_place(w_raw, lay, True), outer.weight_type)
    return s, w, packets, w_raw


def _range(raw: np.ndarray, table: np.ndarray, sig: int) -> tuple[int, int] | None | bool:
    """(unit exponent, top exponent) of the nonzero codes present; False for inf / NaN;
    None when every value is zero."""
    present = np.bincount(raw.reshape(-1), minlength=table.size) > 0
    fields = (table[present[: table.size]] >> 23) & 0xFF
    if (fields == 0xFF).any():
        return False
    nz = fields[fields != 0]
    if nz.size == 0:
        return None
    return int(nz.min()) - 127 - (sig - 1), int(nz.max()) - 127 + 1


def exact(outer: Any, s_raw: np.ndarray, w_raw: np.ndarray, terms: int) -> bool:
    """True when no product or partial sum of these operands can be subnormal, infinite or
    NaN, so every flush of docs/numerics.md is the identity: products of the 3-8 significant
    bits of f8/bf16 values are exact in f32, every partial sum is a multiple of the
    smallest product's unit and at most `terms` times the largest product."""
    ranges = []
    for raw, et in ((s_raw, outer.stream_type), (w_raw, outer.weight_type)):
        r = _range(raw, widen_table(et), _SIG_BITS.get(et.name, 24))
        if r is False:
            return False
        ranges.append(r)
    if any(r is None for r in ranges):
        return True          # every product is a signed zero of finite operands
    unit = ranges[0][0] + ranges[1][0]
    top = ranges[0][1] + ranges[1][1] + max(terms, 1).bit_length()
    return unit >= -126 and top <= 127
