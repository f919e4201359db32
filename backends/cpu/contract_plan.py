"""The plan of a whole contraction for `backends.cpu.contract_fast`: its digits, which
operand depends on which, and the layouts both operands are gathered into.

Digits. Every `(lane, out_time, out_packet)` cell is a point of a grid of digits: the
lane, the Time Reducer's loops over out_time (kept or reduced), the output column `j`
and the leaf of its adder tree (`q = j * g + leaf`). The plan records which digits the
stream operand, the TRF operand, the padding mask and the time padding depend on (their
index arrays vary along the digit or not); before each run, a kept digit an operand's
index depends on but its values do not (data broadcast by an earlier fetch) is dropped
for that operand too. Kept digits that only the stream depends on become rows `I`, those
only the TRF depends on columns `J`, those both depend on a batch `N` (with the spatial
rows), those neither depends on a broadcast of the result `Z`; the reduced digits (time
loops and tree leaves) are summed. Float leaves are split into bits, so that the leaf
group can list them in reverse (bit-reversed leaves) and still be read strided.

Results. Where the whole-contraction path writes its results (`_dest_view`): the result
cells `dest` of a plan as one strided view of the result rows, when it has one, so that a
cast-and-copy into the view is the scatter; the view's form is found once per `dest`. An
integer result is stored lane-innermost (`_lane_last`), the order `contract_lane` moves
it to, so that move is a view.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np
from numpy.lib.stride_tricks import as_strided

from ir.mapping.nodes import Mapping
from ir.rules.time_reduction import time_reduction

from backends.cpu import layout, moves, moves_strided
from backends.cpu.gathers import Gather, _affine, _coord
from backends.cpu.distinct import distinct_values
from backends.cpu.grid_view import on_grid
from backends.cpu.outer_plan import OuterPlan, _outer_plan

__all__ = ["Gather", "OuterPlan", "Plan", "plan"]

KEPT = ("lane", "keep", "col")


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


@attrs.frozen
class Digit:
    """One digit of the cell grid: its kind ("lane", "keep", "red", "col", "leaf"), its
    size, its stride in out_time, in the result's time slots and in the leaf index."""

    kind: str
    size: int
    time: int = 0
    slot: int = 0
    leaf: int = 0


class Grid:
    """The digits of a contraction with one broadcastable coordinate array per digit."""

    def __init__(self, digits: list[Digit]) -> None:
        self.digits = digits
        self.nd = len(digits)
        self.sizes = tuple(d.size for d in digits)
        self.coords = [_coord(k, n, self.nd) for k, n in enumerate(self.sizes)]

    def total(self, kinds: tuple[str, ...], weight) -> np.ndarray:
        """sum(coordinate * weight(digit)) over the digits of `kinds`."""
        acc = np.zeros((1,) * self.nd, np.int64)
        for k, d in enumerate(self.digits):
            if d.kind in kinds:
                acc = acc + self.coords[k] * weight(d)
        return acc

    def of(self, *kinds: str) -> list[int]:
        return [k for k, d in enumerate(self.digits) if d.kind in kinds]


@attrs.frozen
class Cells:
    """Per grid point: the stream cell `s_idx`, the TRF cell `t_idx` (each squeezed to the
    digits it depends on), `pad` True on padding cells, `skip` True on padded time steps,
    `dest` the flat result cell."""

    s_idx: np.ndarray
    t_idx: np.ndarray
    pad: np.ndarray | None
    skip: np.ndarray | None
    dest: np.ndarray


@attrs.define
class Split:
    """The kept digits by operand dependence: batch `n`, rows `i`, columns `j`, broadcast `z`."""

    n: list[int]
    i: list[int]
    j: list[int]
    z: list[int]


def _squeeze(arr: np.ndarray, drop: frozenset[int] = frozenset()) -> np.ndarray:
    """`arr` with every digit it does not depend on (or in `drop`) reduced to size 1; the
    digits it is broadcast along (stride 0) first, without comparing (a grid view's: then
    the comparisons read the cells that vary only)."""
    arr = arr[tuple(slice(0, 1) if arr.strides[k] == 0 or k in drop else slice(None) for k in range(arr.ndim))]
    for k in range(arr.ndim):
        if arr.shape[k] > 1:
            first = arr.take([0], axis=k)
            if np.array_equal(np.broadcast_to(first, arr.shape), arr):
                arr = first
    return arr


def _deps(arr: np.ndarray | None) -> set[int]:
    return set() if arr is None else {k for k, n in enumerate(arr.shape) if n > 1}


def arrange(arr: np.ndarray, groups: list[list[int]], sizes: tuple[int, ...],
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


def _arranged(arr: np.ndarray, digits: tuple[int, ...], sizes: tuple[int, ...]) -> np.ndarray:
    """`arrange(arr, [[k] for k in digits], sizes, True)` shaped (sizes of `digits`), as a view
    of `arr` (broadcast and transposed: no copy)."""
    if any(arr.shape[k] > 1 for k in range(arr.ndim) if k not in digits):
        raise ValueError("an array depends on a digit outside its layout")
    target = [sizes[k] if k in digits else arr.shape[k] for k in range(arr.ndim)]
    order = list(digits) + [k for k in range(arr.ndim) if k not in digits]
    full = np.broadcast_to(arr, target).transpose(order)
    return full.reshape([sizes[k] for k in digits])


def gather(idx: np.ndarray, groups: list[list[int]], sizes: tuple[int, ...]) -> Gather:
    """The gather of an operand's cells over its layout (every group materialized), its
    index in `idx`'s dtype (int32 when the operand's cells allow: kept in the plan cache;
    every reader indexes with it or widens it, issue 61); an affine one's int32 index not
    kept (`Gather.index` makes it again when read)."""
    digits = tuple(k for gr in groups for k in gr)
    shape = tuple(sizes[k] for k in digits)
    fine = _arranged(idx, digits, sizes)  # a view: an affine int32 index is never made here
    group_shape = tuple(math.prod(sizes[k] for k in gr) for gr in groups)
    found = _affine(fine) if fine.size else None
    offset, strides = found if found is not None else (None, None)
    index: np.ndarray | None = None
    if found is None or fine.dtype != np.int32:  # else made again on a reading, not kept (`Gather.index`)
        index = np.ascontiguousarray(fine).reshape(-1)
    return Gather(digits, shape, group_shape, index, offset, strides)


def _digits(lanes: int, pre: Mapping, out: Mapping, cols: int, g: int, is_float: bool) -> list[Digit]:
    """The grid's digits, outer to inner."""
    digits: list[Digit] = []
    if lanes > 1:
        digits.append(Digit("lane", lanes))
    for lp in time_reduction(pre, out).loops:
        if lp.size > 1:
            digits.append(Digit("keep" if lp.keep else "red", lp.size, lp.stride_t, lp.stride_ot or 0))
    if cols > 1:
        digits.append(Digit("col", cols))
    if g > 1 and is_float:
        digits += [Digit("leaf", 2, leaf=1 << b) for b in reversed(range(g.bit_length() - 1))]
    elif g > 1:
        digits.append(Digit("leaf", g, leaf=1))
    return digits


def _cells(op, grid: Grid, pre: Mapping, out: Mapping, g: int, n2: int,
           drop_a: frozenset[int], drop_w: frozenset[int]) -> Cells | None:
    """Every grid point's operand cells and masks; None when the time digits do not
    enumerate out_time once and the kept ones every result slot once."""
    o = grid.total(("keep", "red"), lambda d: d.time)
    slot = grid.total(("keep",), lambda d: d.slot)
    lane = grid.total(("lane",), lambda d: 1)
    if not np.array_equal(np.sort(o.reshape(-1)), np.arange(pre.size)):
        return None
    if not np.array_equal(np.sort(slot.reshape(-1)), np.arange(out.size)):
        return None
    sizes, (_, o_size, q_size) = grid.sizes, op.shape
    steps = tuple(_flat_step(d, o_size * q_size, q_size, g) for d in grid.digits)  # in (lane, out_time, out_packet)
    pad = None
    if op.live_at is not None:
        pad = ~_squeeze(on_grid(op.live_at, steps, sizes))
        pad = pad if pad.any() else None
    pre_pad = moves.logical_pad((pre,))
    skip = _squeeze(pre_pad[o]) if pre_pad.any() else None
    dest = lane * (out.size * n2) + slot * n2 + grid.total(("col",), lambda d: 1)
    s_steps = tuple(0 if d.kind == "lane" else st for d, st in zip(grid.digits, steps))  # no lane in `sidx`
    return Cells(_squeeze(on_grid(op.sidx, s_steps, sizes), drop_a),  # views: no index array of every
                 _squeeze(on_grid(op.trf_at, steps, sizes), drop_w), pad, skip, dest)  # grid point (issue 61)


def _flat_step(d: Digit, lane: int, time: int, col: int) -> int:
    """A grid digit's step in the flat (lane, out_time, out_packet) position, given the
    steps of a lane, of an out_time step and of a column (`_cells`' `lane`, `o`; a column
    spans `g` out_packet cells, a leaf digit `d.leaf`)."""
    if d.kind == "lane":
        return lane
    if d.kind in ("keep", "red"):
        return d.time * time
    return col if d.kind == "col" else d.leaf


def _split(grid: Grid, cells: Cells) -> Split:
    da, dw = _deps(cells.s_idx), _deps(cells.t_idx)
    kept = grid.of(*KEPT)
    return Split([k for k in kept if k in da and k in dw], [k for k in kept if k in da and k not in dw],
                 [k for k in kept if k in dw and k not in da], [k for k in kept if k not in da and k not in dw])


def _float_plan(grid: Grid, cells: Cells, sp: Split, **common) -> Plan:
    """Floats: A (I, leaf, Rt, N), W (J, leaf, Rt, N), the leaves bit-reversed; a digit
    only the masks depend on joins the rows."""
    forced = _deps(cells.pad) | _deps(cells.skip)
    i_ = _result_order(grid, cells.dest, sp.i + [k for k in sp.z if k in forced])
    j_ = _result_order(grid, cells.dest, sp.j)
    z_ = [k for k in sp.z if k not in forced]
    red_t, rev, sizes = grid.of("red"), grid.of("leaf")[::-1], grid.sizes
    pad = None if cells.pad is None else arrange(cells.pad, [i_, j_, rev, red_t, sp.n], sizes, False)
    skip = None if cells.skip is None else arrange(cells.skip, [i_, j_, red_t, sp.n], sizes, False)
    return Plan(True, gather(cells.s_idx, [i_, rev, red_t, sp.n], sizes),
                gather(cells.t_idx, [j_, rev, red_t, sp.n], sizes), pad, skip, None, None,
                arrange(cells.dest, [i_, j_, sp.n, z_], sizes, True), **common)


def _result_order(grid: Grid, dest: np.ndarray, digits: list[int]) -> list[int]:
    """The rows' (or columns') `digits` in the order the float result holds its cells, the
    lane innermost (`_lane_last_plan`): a block of products is then a block of result cells
    (the placing copies runs of them, not single cells gathered across lanes: issue 61, the
    drawn bf16 kernels' take of every result cell). Any order of the kept digits gives every
    cell the same sum (the reduced digits keep theirs)."""
    def stride(k: int) -> int:
        if grid.digits[k].kind == "lane":
            return -1
        unit = [0] * dest.ndim
        unit[k] = 1
        return int(dest[tuple(unit)]) - int(dest.reshape(-1)[0]) if dest.shape[k] > 1 else 0
    return sorted(digits, key=stride, reverse=True)


def _int_live(grid: Grid, cells: Cells, sp: Split) -> tuple[np.ndarray | None, str | None]:
    """The integer liveness mask (padding cells and skipped steps) and the operand it
    multiplies; moves digits between `sp`'s groups so that one operand can carry it."""
    if cells.pad is None and cells.skip is None:
        return None, None
    live = ~(np.zeros((1,) * grid.nd, bool) if cells.pad is None else cells.pad)
    if cells.skip is not None:
        live = _squeeze(live & ~cells.skip)
    dl = _deps(live)
    if dl & set(sp.j) and dl & set(sp.i):
        sp.n += [k for k in sp.j if k in dl]
        sp.j = [k for k in sp.j if k not in dl]
    live_on = "w" if dl & set(sp.j) else "a"
    side = sp.j if live_on == "w" else sp.i
    side += [k for k in sp.z if k in dl]
    sp.z = [k for k in sp.z if k not in dl]
    return live, live_on


def _int_plan(grid: Grid, cells: Cells, sp: Split, **common) -> Plan:
    """Integers: A (N', I, R), W (N', J, R), R every reduced digit (time and leaves)."""
    live, live_on = _int_live(grid, cells, sp)
    sp.n.sort(), sp.i.sort(), sp.j.sort()
    red_all, sizes = grid.of("red") + grid.of("leaf"), grid.sizes
    live_arr = None
    if live is not None:
        groups = [sp.n, sp.i if live_on == "a" else sp.j, red_all]
        live_arr = arrange(live, groups, sizes, False).astype(np.float32)
    return Plan(False, gather(cells.s_idx, [sp.n, sp.i, red_all], sizes),
                gather(cells.t_idx, [sp.n, sp.j, red_all], sizes), None, None, live_arr, live_on,
                arrange(cells.dest, [sp.n, sp.i, sp.j, sp.z], sizes, True), **common)


@functools.lru_cache(maxsize=64)
def plan(outer_key: tuple, g: int, cols: int, n2: int, pre: Mapping, out: Mapping,
         is_float: bool, drop_a: frozenset[int] = frozenset(),
         drop_w: frozenset[int] = frozenset()) -> Plan | None:
    """The plan of one contraction (operands independent of the digits `drop_a` /
    `drop_w`); None when its structure does not fit."""
    try:
        op = _outer_plan(*outer_key)
        lanes, q_size = outer_key[5].size, outer_key[8].size
        if pre.size != op.shape[1] or cols * g > q_size or g & (g - 1):
            return None
        grid = Grid(_digits(lanes, pre, out, cols, g, is_float))
        cells = _cells(op, grid, pre, out, g, n2, drop_a, drop_w)
        if cells is None:
            return None
        sp = _split(grid, cells)
        da, dw = _deps(cells.s_idx), _deps(cells.t_idx)
        kept = grid.of(*KEPT)
        common = dict(terms=g * math.prod(grid.sizes[k] for k in grid.of("red")),
                      out_cells=lanes * out.size * n2, value_a=tuple(k for k in kept if k in da),
                      value_w=tuple(k for k in kept if k in dw))
        return (_float_plan if is_float else _int_plan)(grid, cells, sp, **common)
    except ValueError:
        return None


def _dest_view(res: np.ndarray, dest: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]] | None:
    """The result cells `dest` (I, J, N', Z) of every row of `res` (rows, cells) as one
    writeable strided view (rows, *fine) over `dest`'s cells in C order cut into digits of
    one stride each, and that shape `fine`, when `dest` is affine over them and names each cell once
    (then writing the view is the scatter, cell for cell); None otherwise. The form is
    found once per `dest` (`_dest_form`)."""
    found = _dest_form(np.ascontiguousarray(dest, np.int64).tobytes())
    if found is None:
        return None
    first, steps, fine = found
    item = res.itemsize
    view = as_strided(res[:, first:], (res.shape[0], *fine), (res.strides[0], *(s * item for s in steps)))
    return view, fine


@functools.lru_cache(maxsize=64)
def _dest_form(cells: bytes) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """(first cell, strides, fine shape) of `_dest_view` for the int64 `dest` of these
    bytes; None when it has none."""
    dest = np.frombuffer(cells, np.int64)
    if dest.size == 0 or distinct_values(dest).size != dest.size:
        return None
    dims = moves_strided._dims((dest,))  # digits of one stride each, inner to outer
    if dims is None:
        return None
    dims = dims[::-1] or [(1, (0,))]
    return int(dest[0]), tuple(int(steps[0]) for _, steps in dims), tuple(n for n, _ in dims)


def _lane_last(result, tail: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """(buffer, live rows) of an integer contraction's result (`layout.new_rows`), its
    memory holding each row's cells lane-innermost, (time, packet, lane): the buffer is a
    transposed view with the type's (lane, time, packet) axes, so that `contract_lane`,
    which moves the lane innermost, finds its result already in place; (None, None) when
    the live rows are not one run (then the cells are stored in their own order)."""
    lanes, steps, cols = tail
    full, live = layout.new_rows(result, (steps, cols, lanes), np.int32)
    if live is full:
        return None, None
    return np.moveaxis(full, -1, -3), live.reshape(live.shape[0], -1)


@functools.lru_cache(maxsize=64)
def _lane_last_plan(plan: Plan, lanes: int, per_lane: int) -> Plan:
    """`plan` writing its result cells (lane, time, packet) at their lane-innermost place."""
    dest = plan.dest % per_lane * lanes + plan.dest // per_lane
    return attrs.evolve(plan, dest=dest)
