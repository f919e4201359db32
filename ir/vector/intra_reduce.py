"""The intra-slice reduce (`vector_intra_slice_reduce`): its shape rules and its fold.

The stage runs on the 4-way stream and removes every factor of the reduce axis from the
stream's time and packet. `[out_time, out_packet]` must divide `[time, packet]` (padding
left out; VE-REDUCE-1), every removed factor must be of the reduce axis (VE-REDUCE-2) and
none of the kept ones (VE-REDUCE-3); the packet is either kept as it is or reduced to
`1 # 4` (VE-REDUCE-4); and the time accumulator has 8 slots, so the kept time factors
inner to the outermost reduced one may number at most 8 cells (VE-REDUCE-5).

The fold, per slice and output cell, follows the hardware: a reduced packet collapses
each flit as the two-level tree `op(op(a, b), op(c, d))` (padding lanes count as the op's
identity); then the flits of a group accumulate in stream order from the identity,
`acc = op(acc, flit)`. A kept packet accumulates lane by lane. Padding time steps are
skipped. Both backends call `reduce_time`, given the time map `time_plan` derives; the fold
runs vectorised (`ir.vector.numerics.fold`), with the same bits.
"""

from __future__ import annotations

import functools
from typing import Any

import attrs
import numpy as np

from ir.diagnostic import Violation
from ir.mapping.cells import LIVE, Index, evaluate
from ir.mapping.factors import AxisFactor, RaggedFactor
from ir.mapping.nodes import Broadcast, Mapping, Pad, Symbol, pair_all, pair_items
from ir.mapping.ops import divide
from ir.vector.numerics.fold import Groups, fold, fold_flits, reducer

__all__ = ["SLOTS", "shape_fault", "time_plan", "reduce_time", "reduced_packet", "reduce_stored", "removed_axis",
           "axis_padded", "reduce_counted", "mapping_live"]

SLOTS = 8


def _data(factors: Any) -> tuple:
    return tuple(f for f in factors if isinstance(f, (AxisFactor, RaggedFactor)))


def _axis(f: Any) -> str:
    """The axis of a factor; a ragged one (a padded axis's last, partial run) is of the one
    axis its cells index ("" when it has none or several)."""
    if isinstance(f, RaggedFactor):
        names = {name for cell in f.cells if isinstance(cell, Index) for name in cell}
        return names.pop() if len(names) == 1 else ""
    return getattr(f, "axis", "")


def reduced_packet(packet: Mapping) -> bool:
    """Whether an output packet is the one-cell `1 # 4` of a reduced packet."""
    return packet.size == 4 and not _data(packet.factors())


def shape_fault(axis: str, time: Mapping, packet: Mapping, out_time: Mapping, out_packet: Mapping
                ) -> Violation | None:
    """The first of VE-REDUCE-1 ... VE-REDUCE-5 the shapes break, or None."""
    src = _data(pair_all([time, packet]).factors())
    dst = _data(pair_all([out_time, out_packet]).factors())
    found = divide(src, dst)
    if found is None:
        return _divide_fault(axis, time, packet, out_time, out_packet)
    others = sorted({_axis(f) for f in found.quotient if _axis(f) != axis})
    if others:
        return Violation("VE-REDUCE-2", f"the reduce removes {', '.join(others)}, not only the reduce axis {axis}",
                         label=f"reduced factors: {', '.join(str(f) for f in found.quotient)}",
                         help=f"keep {', '.join(others)} in out_time / out_packet, or reduce them in another pass")
    if any(_axis(f) == axis for f in dst):
        return Violation("VE-REDUCE-3", f"part of the reduce axis {axis} survives in [{out_time}, {out_packet}]",
                         help=f"remove every factor of {axis} from out_time and out_packet")
    if out_packet.normalize() != packet.normalize() and not reduced_packet(out_packet):
        return Violation("VE-REDUCE-4", f"the packet {packet} becomes {out_packet}: it is either kept or "
                         "reduced to `1 # 4`", help='write out_packet as the input packet, or m("1 # 4")')
    inner = _inner_slots(time, out_time)
    if inner > SLOTS:
        return Violation("VE-REDUCE-5", f"the time accumulator needs {inner} slots, it has {SLOTS}",
                         label="kept time cells inner to the outermost reduced time factor",
                         help="move the reduce axis inward in time, or the kept axes outward")
    return None


def _divides(time: Mapping, packet: Mapping, out_time: Mapping, out_packet: Mapping) -> bool:
    dst = _data(pair_all([out_time, out_packet]).factors())
    return divide(_data(pair_all([time, packet]).factors()), dst) is not None


def _divide_fault(axis: str, time: Mapping, packet: Mapping, out_time: Mapping, out_packet: Mapping) -> Violation:
    """VE-REDUCE-1. When the output written is the input without `axis`, the input is at fault: a padded `axis` whose padding cuts across digits
    (`T # 12 / 4`, `T # 12 % 4` with |T| = 10) has no factor per digit, only one ragged piece,
    so a kept axis between those digits is inside it. The help then moves the kept time axes
    outward: a layout other than the one in use, checked to divide."""
    message = f"[{out_time}, {out_packet}] does not divide [{time}, {packet}]"
    kept = [item for item in pair_items(time) if axis not in item.axes()]
    want_time = pair_all(kept).normalize() if kept else Broadcast(1)
    same = out_time.equivalent(want_time) and (out_packet.equivalent(packet) or reduced_packet(out_packet))
    if not (same and axis_padded(axis, time, packet)):
        return Violation("VE-REDUCE-1", message, label="the output keeps cells the input does not have",
                         help=f"the output is the input with every `{axis}` factor removed")
    moved = kept + [item for item in pair_items(time) if axis in item.axes()]
    if pair_all(moved).normalize() != time.normalize() and _divides(pair_all(moved), packet, out_time, out_packet):
        fix = f"keep them together, kept axes outward: time `{', '.join(map(str, moved))}`"
    else:
        fix = f"keep them adjacent in [time, packet], or pad `{axis}` to a multiple of its inner digits"
    return Violation("VE-REDUCE-1", message,
                     label=f"the padding of `{axis}` cuts across digits a kept axis sits between",
                     help=f"the digits of `{axis}` its padding cuts form one piece: {fix}")


def _inner_slots(time: Mapping, out_time: Mapping) -> int:
    found = divide(_data(time.factors()), _data(out_time.factors()))
    if found is None:
        return 1
    loops = list(found.loops)
    first = next((i for i, lp in enumerate(loops) if not lp.kept), None)
    if first is None:
        return 1
    return int(np.prod([lp.factor.extent for lp in loops[first + 1:] if lp.kept], dtype=np.int64))


def _keys(mapping: Mapping, axes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    table = evaluate(mapping, np.arange(mapping.size))
    live = table.status == LIVE
    key = np.zeros(mapping.size, np.int64)
    for a in axes:
        c = table.coords.get(a)
        key = key * (1 << 20) + (0 if c is None else np.asarray(c, np.int64))
    return key, live


def time_plan(axis: str, time: Mapping, out_time: Mapping) -> np.ndarray:
    """Output time position of every input time position (-1: padding, skipped)."""
    axes = sorted({_axis(f) for m in (time, out_time) for f in _data(m.factors())} - {axis})
    src, src_live = _keys(time, axes)
    dst, dst_live = _keys(out_time, axes)
    # per key, its last live output position (as a dict built in position order would keep)
    live_pos = np.flatnonzero(dst_live)
    keys = dst[live_pos]
    order = np.argsort(keys, kind="stable")
    keys, live_pos = keys[order], live_pos[order]
    at = np.searchsorted(keys, src, side="right") - 1
    found = at >= 0
    found[found] = keys[at[found]] == src[found]
    out = np.full(len(src), -1, np.int64)
    hit = found & src_live
    out[hit] = live_pos[at[hit]]
    return out


@functools.lru_cache(maxsize=256)
def _plan_groups(axis: str, time: Mapping, out_time: Mapping) -> Groups:
    """The fold plan of `time_plan` (kept: a traced kernel folds the same mappings every run)."""
    return Groups(time_plan(axis, time, out_time), out_time.size)


def reduce_time(scalar: str, op: str, values: np.ndarray, plan: np.ndarray | Groups, n_out: int, tree: bool,
                live_lanes: np.ndarray) -> np.ndarray:
    """Fold the (rows, T, 4) values of `scalar` (int32 / float32) into (rows, n_out, 4) by
    `plan` (`time_plan`'s array, or its `Groups`): each output's steps in time order from
    the identity (`ir.vector.numerics.fold`, vectorised over rows, outputs and steps). A
    reduced packet folds only its lane 0: lanes 1-3 hold the identity, and
    `op(identity, identity)` is the identity for every reduce op."""
    _, identity, dtype = reducer(scalar, op)
    groups = plan if isinstance(plan, Groups) else Groups(plan, n_out)
    if not tree:
        return fold(scalar, op, values, groups)
    acc = fold_flits(scalar, op, values, groups, live_lanes[None, :, :])
    return np.concatenate([acc, np.broadcast_to(np.asarray(identity, dtype), acc.shape[:2] + (3,))], -1)


@functools.lru_cache(maxsize=256)
def _lanes(packet: Mapping) -> np.ndarray:
    table = evaluate(packet, np.arange(packet.size))
    live = table.status == LIVE
    live.setflags(write=False)
    return live


def reduce_stored(scalar: str, op: str, values: np.ndarray, axis: str, time: Mapping, packet: Mapping,
                  out_time: Mapping, out_packet: Mapping) -> np.ndarray:
    """The reduce on stored values (int32, or uint32 bits for f32) shaped (rows, T, 4):
    (rows, size(out_time), 4) of the same storage."""
    live = np.broadcast_to(_lanes(packet)[None, :], (time.size, 4))
    src = values.view(np.float32) if scalar == "f32" else values
    out = reduce_time(scalar, op, src, _plan_groups(axis, time, out_time), out_time.size, reduced_packet(out_packet),
                      live)
    return out.view(np.uint32) if scalar == "f32" else out


def removed_axis(time: Mapping, packet: Mapping, out_time: Mapping, out_packet: Mapping) -> str | None:
    """The one axis `[time, packet]` has and `[out_time, out_packet]` lacks (None: not one)."""
    have = {_axis(f) for m in (time, packet) for f in _data(m.factors())}
    kept = {_axis(f) for m in (out_time, out_packet) for f in _data(m.factors())}
    gone = have - kept
    if not gone:  # an axis of one live cell (`R # 2` with R = 1) has no factor: go by the names
        gone = set((time.axes() | packet.axes()) - (out_time.axes() | out_packet.axes()))
    return gone.pop() if len(gone) == 1 else None


def _unpadded(mapping: Mapping, axis: str) -> Mapping:
    """`mapping` with every `axis # n` read as an axis of n live positions (so a time step
    keeps its output position whatever the Valid Count Generator says of it)."""
    if isinstance(mapping, Pad) and isinstance(mapping.operand, Symbol) and mapping.operand.name == axis:
        return Symbol(axis, mapping.n)
    changes = {f.name: _unpadded(getattr(mapping, f.name), axis) for f in attrs.fields(type(mapping))
               if isinstance(getattr(mapping, f.name), Mapping)}
    return attrs.evolve(mapping, **changes) if changes else mapping


@functools.lru_cache(maxsize=256)
def axis_padded(axis: str, *mappings: Mapping) -> bool:
    """Whether `axis` is padded (`axis # n`) in any of `mappings`: its reduce must exclude the
    padding, by the Valid Count Generator."""
    return any(_unpadded(mp, axis) != mp for mp in mappings)


def mapping_live(slice_: Mapping, time: Mapping, packet: Mapping) -> np.ndarray:
    """(slices, T, P) booleans: the live cells of every slice's stream, by the mappings."""
    both = pair_all([slice_, time, packet])
    return (evaluate(both, np.arange(both.size)).status == LIVE).reshape(slice_.size, time.size, packet.size)


def reduce_counted(scalar: str, op: str, values: np.ndarray, live: np.ndarray, axis: str, time: Mapping,
                   out_time: Mapping, out_packet: Mapping) -> np.ndarray:
    """The reduce of a padded axis on stored values (rows, T, 4), folding only the cells
    `live` (rows, T, 4) marks: the Valid Count Generator's counts (the interpreter) or the
    mapping's live cells (the cpu backend). A reduced packet folds its live lanes as the tree
    (the others as the identity); a flit with no live cell, or a dead lane of a kept packet,
    leaves its accumulator as it is."""
    _, identity, dtype = reducer(scalar, op)
    src = np.asarray(values.view(np.float32) if scalar == "f32" else values, dtype)
    groups = _plan_groups(axis, _unpadded(time, axis), out_time)
    if reduced_packet(out_packet):  # lane 0 folds the flits' trees; lanes 1-3 stay the identity
        acc = fold_flits(scalar, op, src, groups, live, counted=True)
        acc = np.concatenate([acc, np.broadcast_to(np.asarray(identity, dtype), acc.shape[:-1] + (3,))], -1)
    else:
        acc = fold(scalar, op, src, groups, live)
    return acc.view(np.uint32) if scalar == "f32" else acc
