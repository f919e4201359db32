"""Pair mode of the intra-slice chain, as data: the unzip of a grouping axis, the zip of the
two groups, and the way changes a pair takes. Shared by the trace rules, the cpu backend
and the VISA interpreter, so both backends compute the same values bit for bit.

`vector_intra_slice_unzip(m("I"), tile_time, split_time)` splits a stream whose time holds
the size-2 axis `I` into group 0 (`I = 0`) and group 1 (`I = 1`), each of time `split_time`
(the time without `I`). A zip merges the groups cell by cell with a binary op: with
`BinaryArgMode.MODEXY` the op reads (X, Y), 0 being group 0 and 1 group 1 (MODE01 is
`op(group0, group1)`, the default). `vector_narrow_split` on a pair turns each 8-element
flit into two 4-element packets in time order, which is the identity on the flattened
(time, packet) position: out `(2 t + h, q)` is in `(t, 4 h + q)`.
"""

from __future__ import annotations


import numpy as np

from ir.mapping.cells import LIVE
from ir.memo import memo
from ir.mapping.nodes import Mapping, Pair, pair_items
from ir.vector.enums import BinaryArgMode
from ir.vector.numerics.unit_runs import run_elementwise
from ir.vector.units import spec_of

__all__ = ["unzip_index", "unzip_problem", "group_volume", "RF_CACHE_LANES", "zip_values", "split_equivalent", "MODES"]

MODES = ("MODE00", "MODE01", "MODE10", "MODE11")  # a zip step's arg is the mode's index here


def _live(mapping: Mapping) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    table = mapping.cells(np.arange(mapping.size))
    return table.status == LIVE, table.coords


# The VE register-file cache one group waits in while the other streams in: 1 KiB of 32-bit lanes.
RF_CACHE_LANES = 1024 // 4


def group_volume(time: Mapping, packet: Mapping, axis: str) -> int | None:
    """The lanes of one unzip group: the product of the (padded) sizes of the time and packet
    items inside the item holding `axis` (None when no item holds it)."""
    volume = 1
    for item in reversed(pair_items(time) + pair_items(packet)):
        if axis in item.axes():
            return volume
        volume *= item.size
    return None


@memo()
def unzip_problem(time: Mapping, split: Mapping, axis: str) -> str | None:
    """Why `split` is not `time` without the axis (None when it is); once per distinct three
    (the trace rule and the verifier of every repeated pair stage ask it)."""
    found = unzip_index(time, split, axis)
    return found if isinstance(found, str) else None


def unzip_index(time: Mapping, split: Mapping, axis: str) -> np.ndarray | str:
    """(2, size(split)) positions of `time` feeding group g at each split position (-1 where
    the split position is padding), or the reason the two do not match. Each group keeps the
    order of its time steps (the unzip moves no step past another)."""
    if axis in split.axes():
        return f"the per-group time {split} still holds {axis}"
    live_t, ct = _live(time)
    live_s, cs = _live(split)
    names = sorted(n for n in ct if n != axis)
    if sorted(cs) != names:
        return f"the per-group time {split} holds axes {sorted(cs)}, the time without {axis} holds {names}"
    where: dict[tuple[int, ...], int] = {}
    for t in np.flatnonzero(live_t):
        where[(int(ct[axis][t]), *(int(ct[n][t]) for n in names))] = int(t)
    out = np.full((2, split.size), -1, np.int64)
    for s in np.flatnonzero(live_s):
        key = tuple(int(cs[n][s]) for n in names)
        for g in (0, 1):
            t = where.get((g, *key))
            if t is None:
                return f"position {int(s)} of {split} has no element of group {g} in time {time}"
            out[g, s] = t
    if len(set(out[out >= 0].tolist())) != len(where):
        return f"{split} does not cover every element of time {time}"
    for g in (0, 1):
        live = out[g][out[g] >= 0]
        if np.any(np.diff(live) <= 0):
            return f"{split} reorders the time {time}: the unzip keeps each group's steps in order"
    return out


def split_equivalent(time: Mapping, packet: Mapping, time2: Mapping, packet2: Mapping) -> bool:
    """True when (time2, packet2) lists the cells of (time, packet) in the same flattened order."""
    return Pair(time, packet).equivalent(Pair(time2, packet2)) or \
        Pair(time, packet).normalize().equivalent(Pair(time2, packet2).normalize())


def zip_values(unit: str, op: str, mode: int, g0: np.ndarray, g1: np.ndarray) -> np.ndarray:
    """The zip step on stored values (int32, or uint32 bits for f32): `op` of the two groups
    the mode picks."""
    spec = spec_of(unit)  # a unit with a zip form (ir.vector.units): its scalar and its numerics
    if "zip" not in spec.kinds:
        raise KeyError(unit)
    return run_elementwise(spec.fn(op), 2, spec.scalar_in, g0, getattr(BinaryArgMode, MODES[mode]), (g1,))
