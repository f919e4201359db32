"""The two operands of a contraction, read by the plan's index tables, in a compute layout.

Positions of the product space are `(row, lane, *digits, column j, leaf k)` with packet
position `q = j * g + k`. The stream operand at a position is the packet element
`packets[row, stream_step(digits), q]`; the TRF operand is lane `l`'s element
`trf_read(digits) * R + q % R`. Two layouts:

- `natural`: `(rows, lanes|1, *digits, columns, leaves)` (the integer path);
- `arranged`: `(*kept digits, lanes|1, leaves, *summed digits, columns, rows)` with the
  leaves in bit-reversed order (the float path: the products of one output position
  are one contiguous run of both operands, rows innermost, and each tree level adds
  two contiguous halves).

Axes an operand does not vary along keep size 1 (broadcast). `exact` decides, from the
codes present (`code_range`), whether the float flush of docs/numerics.md can ever act.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from visa.interp.memory import Memory
from visa.interp.plan import Plan
from visa.interp.shortcuts import Held, per_record
from visa.interp.rows import Rows
from visa.interp.trf import TrfTensor, read_weights, take
from visa.interp.values import widen, widen_table

__all__ = ["Layout", "operands", "natural_operands", "natural_index", "exact", "code_range", "widen_codes"]

_SIG_BITS = {"BF16": 8, "F8E4M3": 4, "F8E5M2": 3}


def _bitrev(n: int) -> np.ndarray:
    bits = n.bit_length() - 1
    return np.array([int(format(i, f"0{bits}b")[::-1], 2) if bits else 0 for i in range(n)], np.int64)


class Layout:
    """Axis bookkeeping of the arranged layout `[*kept, lanes, leaf, *summed, column, rows]`."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.red = [i for i, k in enumerate(plan.keep) if not k]
        self.kept = [i for i, k in enumerate(plan.keep) if k]
        self.n_red = len(self.red)
        self.lanes_axis = len(self.kept)
        self.leaf_axis = 1 + len(self.kept)

    def arrange(self, arr: np.ndarray) -> np.ndarray:
        """(lanes, *digits, leaves, columns) -> (*kept, lanes, leaves, *summed, columns) (a view)."""
        nd = len(self.plan.digits)
        return arr.transpose([*(1 + i for i in self.kept), 0, 1 + nd, *(1 + i for i in self.red), 2 + nd])

    def leaves(self) -> np.ndarray:
        """Packet position of every (leaf, column): `j * g + bitrev(k)`, shape (g, cols)."""
        g = self.plan.g
        return np.arange(self.plan.q // g)[None, :] * g + _bitrev(g)[:, None]


def _pattern(plan: Plan, lay: Layout | None, table: np.ndarray, scale: int, mod: int) -> np.ndarray:
    """Index `table(digits) * scale + q % mod` over the positions of a layout, without the
    row and lane axes: natural `(*digits, cols, g)`, arranged `(*kept, 1, g, *summed, cols)`
    (the lane axis kept, of size 1)."""
    nd = len(plan.digits)
    if lay is None:
        q = np.arange(plan.q).reshape(plan.q // plan.g, plan.g)
        return table.reshape(*table.shape, 1, 1) * scale + q % mod
    t = lay.arrange(table.reshape(1, *table.shape, 1, 1))
    q = lay.arrange(lay.leaves().reshape(1, *([1] * nd), plan.g, plan.q // plan.g))
    return t * scale + q % mod


def operands(plan: Plan, stream: np.ndarray, outer: Any, trf: TrfTensor, rows: Rows, mem: Memory,
             arranged: bool) -> tuple[np.ndarray, np.ndarray, Any, Any]:
    """(stream, weights) in the chosen layout, and the `code_range` of each (arranged: a
    bf16 operand `code_range` found exact by a shift stays as its uint16 codes, to be widened
    by `widen_codes` where it is used; the natural layout returns no ranges).

    The arranged layout puts the output positions outermost and the rows innermost, so
    the products of one output position are one contiguous run whichever operand the
    output axes broadcast."""
    if not arranged:
        s, index = natural_operands(plan, stream, outer, rows)
        return s, widen(read_weights(outer, trf, rows, mem, index), outer.weight_type), None, None
    packets = stream.reshape(rows.count, -1)
    lay = Layout(plan)
    s_pat = _pattern(plan, lay, plan.stream_step, plan.q, plan.q)
    s_raw = take(packets, s_pat.reshape(-1), 1).T.reshape(*s_pat.shape, rows.count)   # a view
    w_pat = _pattern(plan, lay, plan.trf_read, plan.read_elems, plan.read_elems)
    w_raw = read_weights(outer, trf, rows, mem, np.squeeze(w_pat, lay.lanes_axis))
    w_lay = np.moveaxis(w_raw, (0, 1), (-1, lay.lanes_axis))
    (s_range, s_shift), (w_range, w_shift) = code_range(packets, outer.stream_type), code_range(w_raw, outer.weight_type)
    s = s_raw if s_shift else _widened(s_raw, outer.stream_type)
    w = w_lay if w_shift else _widened(w_lay, outer.weight_type)
    return s, w, s_range, w_range


def natural_operands(plan: Plan, stream: np.ndarray | Held, outer: Any,
                     rows: Rows | int) -> tuple[np.ndarray, np.ndarray]:
    """The stream operand in the natural layout (of `rows`, or that many rows), and the TRF
    element index (`natural_index`) `read_weights` reads the weights operand at."""
    s_pat = _natural_stream(plan)
    count = rows if isinstance(rows, int) else rows.count
    s = widen(_natural(stream, s_pat, count)[:, None], outer.stream_type)
    return s, natural_index(plan)


@per_record
def _natural_stream(plan: Plan) -> np.ndarray:
    """The packet element index of the natural layout without its row and lane axes (once
    per plan: a plan is per record)."""
    return _pattern(plan, None, plan.stream_step, plan.q, plan.q)


@per_record
def natural_index(plan: Plan) -> np.ndarray:
    """The TRF element index of the natural layout without its row and lane axes (once per
    plan)."""
    return _pattern(plan, None, plan.trf_read, plan.read_elems, plan.read_elems)


def _natural(stream: np.ndarray | Held, s_pat: np.ndarray, count: int) -> np.ndarray:
    """The stream's elements at `s_pat` (rows first): a view of what a held
    stream (`Held`) holds when it can give one."""
    flat = s_pat.reshape(-1)
    if isinstance(stream, Held):
        held = stream.natural_view(count, s_pat)
        if held is not None:
            return held
        stream = stream.materialize()
    return take(stream.reshape(count, -1), flat, 1).reshape(count, *s_pat.shape)


def widen_codes(raw: np.ndarray) -> np.ndarray:
    """bf16 codes without subnormals or NaN as float32 (C-contiguous): a 16-bit shift."""
    return np.left_shift(raw, np.uint32(16), dtype=np.uint32, order="C").view(np.float32)


def _widened(raw: np.ndarray, et: Any) -> np.ndarray:
    """`widen` into a C-contiguous array (one pass over a transposed view)."""
    return np.ascontiguousarray(widen(raw, et))


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


def _bf16_range(raw: np.ndarray) -> tuple[int, int] | None | bool:
    """`_range` of bf16 codes without subnormals or NaN (their f32 exponent field is the
    code's), from the largest and smallest nonzero magnitude; "mixed" when some are."""
    mag = np.bitwise_and(raw, np.uint16(0x7FFF))
    top = int(mag.max())
    np.subtract(mag, np.uint16(1), out=mag)       # a zero wraps to the largest value
    low = int(mag.min()) + 1
    if top > 0x7F80 or low < 0x80:
        return "mixed"
    if top == 0x7F80:
        return False
    if low > 0x7FFF:
        return None
    return (low >> 7) - 127 - (_SIG_BITS["BF16"] - 1), (top >> 7) - 127 + 1


def code_range(raw: np.ndarray, et: Any) -> tuple[tuple[int, int] | None | bool, bool]:
    """(`_range` of the codes of `raw`, whether `raw << 16` widens them exactly): bf16
    codes with no subnormal and no NaN are read by their magnitude bounds, not counted."""
    if et.name == "BF16" and raw.size and raw.dtype == np.uint16:
        r = _bf16_range(raw)
        if r != "mixed":
            return r, True
    return _range(raw, widen_table(et), _SIG_BITS.get(et.name, 24)), False


def exact(ranges: list[tuple[int, int] | None | bool], terms: int) -> bool:
    """True when no product or partial sum of operands with these `code_range`s can be
    subnormal, infinite or NaN, so every flush of docs/numerics.md is the identity:
    products of the 3-8 significant bits of f8/bf16 values are exact in f32, every partial
    sum is a multiple of the smallest product's unit and at most `terms` times the largest
    product."""
    if any(r is False for r in ranges):
        return False
    if any(r is None for r in ranges):
        return True          # every product is a signed zero of finite operands
    unit = ranges[0][0] + ranges[1][0]
    top = ranges[0][1] + ranges[1][1] + max(terms, 1).bit_length()
    return unit >= -126 and top <= 127
