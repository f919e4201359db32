"""The loop structure of one contraction, from the fields of its three records (docs/reference/diagnostics.md).

`contract_outer` packs `pack_size` flits into a packet of `Q = read_elems * packet_broadcast`
elements, repeats every packet over `time_broadcast` (innermost, `tiling` steps) and reads
the TRF by its walk: out-time step `o` reads `R = read_elems` elements of each lane from
element `e(o) * R` on, `e(o) = sum(digit_i(o) * stride_i)` over the walk's entries, and
packet position `q` takes element `e(o) * R + q % R`. `packet_reduce` sums
`g = 2^depth` adjacent leaves (`q = j * g + k`); `time_reduce` keeps or sums its loops.

The plan cuts out-time into *digits*: a common refinement of the time loops, the walk
entries and the broadcast split, when one exists (else the loops alone). For each digit
it records whether it is kept, and the stream step and TRF read index are tabulated over
the digits with every axis they do not vary along collapsed to size 1, so the operands
are read once per distinct value and meet by broadcasting.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from tu_ops.enums import LoopKind
from visa.interp.errors import check
from visa.interp.shortcuts import per_record
from visa.interp.values import pad_mask

__all__ = ["Plan", "build_plan", "collapse"]


@attrs.frozen(eq=False)
class Plan:
    """Sizes and index tables of one contraction (per slice)."""

    lanes: int
    q: int                      # contract_outer packet elements
    g: int                      # leaves per packet_reduce tree
    out_cols: int               # packet_reduce output columns
    read_elems: int
    pack: int
    digits: tuple[int, ...]     # out-time digits, outer to inner
    keep: tuple[bool, ...]      # KEEP (True) or REDUCE per digit
    stream_step: np.ndarray     # packet index over the digits (collapsed axes have size 1)
    trf_read: np.ndarray        # TRF read index over the digits (collapsed axes have size 1)
    time_pad: np.ndarray | None   # over the digits: padded pre-reduce time steps (skipped)
    outer_pad: np.ndarray | None  # (lanes, *digits, q): products forced to zero
    reduce_pad: np.ndarray | None  # (lanes, *digits, out_cols): packet_reduce padding
    out_pad: np.ndarray | None     # (lanes, slots, out_cols): time_reduce padding

    def digits_summed(self) -> tuple[int, ...]:
        """Sizes of the REDUCE digits, outer to inner."""
        return tuple(n for n, k in zip(self.digits, self.keep) if not k)

    @property
    def slots(self) -> int:
        return math.prod(n for n, k in zip(self.digits, self.keep) if k)


def _cuts(sizes: list[int]) -> set[int]:
    """Inner products at every boundary of a factorization given outer to inner."""
    out, acc = {1}, 1
    for n in reversed(sizes):
        acc *= n
        out.add(acc)
    return out


def _chain(cuts: set[int]) -> list[int] | None:
    """The sorted cut points if each divides the next (a common refinement), else None."""
    c = sorted(cuts)
    return c if all(b % a == 0 for a, b in zip(c, c[1:])) else None


def collapse(index: np.ndarray) -> np.ndarray:
    """`index` with every axis it is constant along reduced to size 1."""
    for axis in range(index.ndim):
        if index.shape[axis] > 1:
            first = np.take(index, [0], axis=axis)
            if np.array_equal(index, np.broadcast_to(first, index.shape)):
                index = first
    return index


def _digit_of(entries: list[int], inner: list[int], cut: int) -> int:
    """Which entry (outer to inner, with inner products `inner`) holds the digit at `cut`."""
    for i, (n, c) in enumerate(zip(entries, inner)):
        if c <= cut < c * n:
            return i
    raise ValueError(cut)


def _inner(sizes: list[int]) -> list[int]:
    return [math.prod(sizes[i + 1:]) for i in range(len(sizes))]


def _optional(mask: np.ndarray) -> np.ndarray | None:
    return mask if mask.any() else None


@per_record
def build_plan(outer: Any, reduce: Any, time: Any, flits: int, flit_elems: int, target: Any) -> Plan:
    """Check the three records against each other and tabulate their loops (once per
    records, flit count and target: the plan's arrays are shared, read-only)."""
    pack, r = outer.pack_size, outer.trf_read.read_elems
    check(pack in (1, 2) and flits % pack == 0, f"{flits} flits cannot be packed {pack} at a time", outer)
    q = pack * flit_elems
    check(r >= 1 and r * outer.trf_read.packet_broadcast == q,
          f"read_elems {r} x packet_broadcast {outer.trf_read.packet_broadcast} != the {q}-element packet", outer)
    steps = flits // pack
    tiling = math.prod(outer.time_broadcast)
    out_time = steps * tiling
    walk_sizes = [e.size for e in outer.trf_read.entries]
    check(all(n >= 1 for n in walk_sizes) and math.prod(walk_sizes) == out_time,
          f"the TRF walk has {math.prod(walk_sizes)} steps, out_time has {out_time}", outer)
    check(all(e.stride >= 0 for e in outer.trf_read.entries), "a negative TRF walk stride", outer)
    check(reduce.in_elems == q, f"in_elems {reduce.in_elems}, but the packet has {q} elements", reduce)
    g = 1 << reduce.depth if reduce.depth >= 0 else 0
    check(g >= 1 and q % g == 0, f"depth {reduce.depth} does not split {q} leaves into trees", reduce)
    check(1 <= reduce.out_cols <= target.constants.ACC_COLS, f"out_cols {reduce.out_cols}", reduce)
    loop_sizes = [lp.size for lp in time.loops]
    check(all(n >= 1 for n in loop_sizes) and math.prod(loop_sizes) == out_time,
          f"loops cover {math.prod(loop_sizes)} time steps, the packets give {out_time}", time)
    loop_cuts = _cuts(loop_sizes)
    tile_cuts = _cuts(list(outer.time_broadcast)) | {out_time}
    cuts = (_chain(loop_cuts | _cuts(walk_sizes) | tile_cuts) or _chain(loop_cuts | _cuts(walk_sizes))
            or _chain(loop_cuts | tile_cuts) or sorted(loop_cuts))
    inner = cuts[:-1][::-1]                                  # inner product of each digit, outer to inner
    digits = tuple(b // a for a, b in zip(cuts, cuts[1:]))[::-1]
    loop_inner = _inner(loop_sizes)
    keep = tuple(time.loops[_digit_of(loop_sizes, loop_inner, c)].kind is LoopKind.KEEP for c in inner)
    o = np.zeros((), np.int64)
    for n, c in zip(digits, inner):
        o = np.add.outer(o, np.arange(n, dtype=np.int64) * c)
    e = np.zeros(o.shape, np.int64)
    for entry, c in zip(outer.trf_read.entries, _inner(walk_sizes)):
        e += (o // c) % entry.size * entry.stride
    lanes = outer.lanes
    shape = (lanes, *digits)
    outer_pad = pad_mask(outer.output_type.lane, outer.output_type.time, outer.output_type.packet)
    check(outer_pad.shape == (lanes, out_time, q), f"the products are {(lanes, out_time, q)}, the cstream is "
          f"{outer_pad.shape}", outer)
    reduce_pad = pad_mask(reduce.output_type.lane, reduce.output_type.time, reduce.output_type.packet)
    check(reduce_pad.shape == (lanes, out_time, reduce.out_cols), "out_cols differ from the output packet", reduce)
    time_pad = pad_mask(time.input_type.time)
    slots = math.prod(n for n, k in zip(digits, keep) if k)
    out_pad = pad_mask(time.output_type.lane, time.output_type.time, time.output_type.packet)
    check(out_pad.shape == (lanes, slots, reduce.out_cols),
          f"the KEEP loops give {slots} slots, out_time has {out_pad.shape[1]}", time)
    plan = Plan(
        lanes=lanes, q=q, g=g, out_cols=reduce.out_cols, read_elems=r, pack=pack, digits=digits, keep=keep,
        stream_step=collapse(o // tiling), trf_read=collapse(e), time_pad=_optional(time_pad.reshape(digits)),
        outer_pad=_optional(outer_pad.reshape(*shape, q)),
        reduce_pad=_optional(reduce_pad.reshape(*shape, reduce.out_cols)), out_pad=_optional(out_pad))
    for value in attrs.astuple(plan, recurse=False):
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    return plan
