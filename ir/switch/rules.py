"""Switch Engine rules SWITCH-1..19: is `(in_slice, in_time) -> (out_slice, out_time)` under a
`SwitchConfig` something the 256-slice ring can do?

Every rule is a function of the input stream's mappings, the requested output mappings
and the configuration, returning a `Violation` (code, message, help showing a legal
choice) or None. `check_switch` runs them in report order and returns the first failure;
`switch_frames` is the inference: the output mappings a named configuration produces
from an input (broadcast tiles written as bare integers, which is itself legal output),
and `ring_size` the sub-ring size a legal switch routes in. The CUSTOM_BROADCAST analysis
lives in `ir.switch.custom`.

A named configuration cuts the input into `Slice = [slice2, slice1, slice0]` (the inner
two of the sizes it names) and, for BROADCAST01 and INTER_TRANSPOSE, `Time` into its
`time0` / `time1` digits, then reassembles them in a fixed order (the module README draws
each one). Output slots a configuration fills with copies are *tiles*: in `out_slice` a
tile is a bare integer, a new axis (one the input's Slice and Time do not carry) or
don't-care padding.
"""

from __future__ import annotations

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.errors import MappingError
from ir.mapping.factors import AxisFactor, PaddingFactor, RaggedFactor, short_text as show
from ir.mapping.nodes import Broadcast, Mapping, Pad, PaddingKind, pair_all, pair_items, tree_nodes
from ir.mapping.ops import disjoint, factor_frags, places_digit_twice, split
from ir.switch.config import (
    MAX_SLICES, Broadcast01, Broadcast1, CustomBroadcast, Forwarding, InterTranspose, SwitchVariant, Transpose,
    TransposedBroadcast1,
)
from ir.switch.custom import _v, check_custom

__all__ = [
    "Frames", "check_switch", "switch_frames", "ring_size", "check_packet_align",
    "PACKET_ALIGN", "MAX_SLICES", "check_inter_transpose_run", "MAX_CONSECUTIVE_FLITS",
    "check_padded_tile_axis",
]

PACKET_ALIGN = 8
MAX_CONSECUTIVE_FLITS = 16
"""The most flits an INTER_TRANSPOSE delivers to a slice back to back (furiosa-opt v0.9
refuses longer runs: its fixtures of 18 fail, its kernels of 16 compile)."""
FLIT_BITS = 256


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


# --- the named configurations' frames -------------------------------------------------------


@attrs.frozen
class Frames:
    """The output a named configuration reassembles: slot lists, outer to inner.

    A slot is a Mapping (a component of the input) or an int (a tile of that many copies)."""

    slice_slots: tuple[Mapping | int, ...]
    time_slots: tuple[Mapping, ...]

    @staticmethod
    def _join(slots: tuple[Mapping | int, ...]) -> Mapping:
        return pair_all([Broadcast(s) if isinstance(s, int) else s for s in slots])

    @property
    def out_slice(self) -> Mapping:
        return self._join(self.slice_slots)

    @property
    def out_time(self) -> Mapping:
        return self._join(self.time_slots)


def switch_frames(in_slice: Mapping, in_time: Mapping, config: SwitchVariant) -> Frames | None:
    """The output frames of a named configuration (None for CUSTOM_BROADCAST, which has none).

    MappingError when the sizes do not split (the SWITCH-3..6 checks say which)."""
    if isinstance(config, Forwarding):
        return Frames((in_slice,), (in_time,))
    if isinstance(config, CustomBroadcast):
        return None
    s1, s0 = config.slice1, config.slice0
    rest, slice0 = split(in_slice, s0)
    slice2, slice1 = split(rest, s1)
    if isinstance(config, Broadcast01):
        time1, time0 = split(in_time, config.time0)
        return Frames((slice2, s1, s0), (time1, slice1, time0, slice0))
    if isinstance(config, Broadcast1):
        return Frames((slice2, s1, slice0), (in_time, slice1))
    if isinstance(config, Transpose):
        return Frames((slice2, slice0, slice1), (in_time,))
    if isinstance(config, InterTranspose):
        rest, time0 = split(in_time, config.time0)
        time2, time1 = split(rest, s1)
        return Frames((slice2, time1, slice0), (time2, time0, slice1))
    if isinstance(config, TransposedBroadcast1):
        return Frames((slice2, s0, slice1), (in_time, slice0))
    raise TypeError(f"unknown switch configuration {config!r}")


def ring_size(config: SwitchVariant) -> int:
    """Slices per sub-ring of a named configuration (CUSTOM_BROADCAST states its own)."""
    if isinstance(config, Forwarding):
        return 1
    if isinstance(config, CustomBroadcast):
        return config.ring_size
    return config.slice1 * config.slice0


# --- rules common to every configuration -----------------------------------------------------


def check_slice_size(in_slice: Mapping, out_slice: Mapping) -> Violation | None:
    """SWITCH-2: the switch keeps the slice count: size(out_slice) = size(in_slice)."""
    if in_slice.size == out_slice.size:
        return None
    return _v("SWITCH-2", f"the switch input has {in_slice.size} slices but out_slice "
              f"`{show(out_slice)}` has {out_slice.size}",
              help=f"out_slice must span {in_slice.size} slices, e.g. `{show(in_slice)}` "
              f"(with SwitchConfig.FORWARDING)")


def check_packet_align(packet: Mapping, dtype: DType) -> Violation | None:
    """SWITCH-18: the packet entering the switch is a whole number of 8-byte words."""
    bits = packet.size * dtype.bits
    if bits % (8 * PACKET_ALIGN) == 0:
        return None
    words = PACKET_ALIGN * 8 // dtype.bits
    legal = -(-packet.size // words) * words
    return _v("SWITCH-18", f"the switch moves whole 8-byte words, but the packet `{show(packet)}` "
              f"is {packet.size} x {dtype} = {bits / 8:g} bytes",
              help=f"pad the packet at fetch to {legal} elements, e.g. `{show(packet)} # {legal}`")


def check_inter_transpose_run(config: SwitchVariant, packet: Mapping, dtype: DType) -> Violation | None:
    """SWITCH-19: an INTER_TRANSPOSE hands each slice `time0 * slice1` packets in a row (the
    `[time0, slice1]` block of its output Time) without a break; that run, counted in
    32-byte flits, is at most MAX_CONSECUTIVE_FLITS."""
    if not isinstance(config, InterTranspose):
        return None
    flits = max(1, -(-packet.size * dtype.bits // FLIT_BITS))
    packets = config.time0 * config.slice1
    if packets * flits <= MAX_CONSECUTIVE_FLITS:
        return None
    fits = [t for t in range(config.time0, 0, -1) if t * config.slice1 * flits <= MAX_CONSECUTIVE_FLITS]
    if fits:
        fix = (f"a smaller time0 (time0 = {fits[0]} gives {fits[0] * config.slice1 * flits} flits; out_time "
               f"changes with it), or fewer flits per packet")
    else:
        fix = (f"fewer flits per packet: slice1 = {config.slice1} allows at most "
               f"{MAX_CONSECUTIVE_FLITS // config.slice1} flit(s) per packet; fetch fewer elements per step")
    return _v("SWITCH-19", f"{config!r} sends each slice time0 * slice1 = {packets} packets of {flits} flit(s) "
              f"(`{show(packet)}` of {dtype}) back to back: {packets * flits} consecutive flits, more than the "
              f"ring's {MAX_CONSECUTIVE_FLITS}", help=fix)


def check_dimensions(in_slice: Mapping, in_time: Mapping, config: SwitchVariant) -> Violation | None:
    """SWITCH-3..6: the named configuration's sizes cut Slice and Time into real digits."""
    dims = {k: v for k, v in config.fields().items() if k != "ring_size"}
    if not dims:
        return None
    zero = [k for k, v in dims.items() if v <= 0]
    if zero:
        return _v("SWITCH-3", f"{config!r}: {', '.join(zero)} must be greater than 0",
                  help=_legal_config_help(in_slice, config))
    s1, s0 = dims["slice1"], dims["slice0"]
    for name, value in (("slice1", s1), ("slice0", s0)):
        if not _pow2(value):
            return _v("SWITCH-4", f"{config!r}: {name} must be a power of 2, got {value}",
                      help=_legal_config_help(in_slice, config))
    if in_slice.size % (s1 * s0) or (isinstance(config, InterTranspose) and in_slice.size != MAX_SLICES):
        need = "span all 256 slices and be" if isinstance(config, InterTranspose) else "be"
        return _v("SWITCH-5", f"{config!r}: the input Slice `{show(in_slice)}` ({in_slice.size} slices) "
                  f"must {need} divisible by slice1 * slice0 = {s1 * s0}",
                  help=_legal_config_help(in_slice, config))
    if not _pow2(in_slice.size // (s1 * s0)):
        return _v("SWITCH-4", f"{config!r}: slice2 = {in_slice.size} / ({s1} * {s0}) must be a power of 2, "
                  f"got {in_slice.size // (s1 * s0)}", help=_legal_config_help(in_slice, config))
    return _check_time_split(in_time, config)


def _check_time_split(in_time: Mapping, config: SwitchVariant) -> Violation | None:
    if isinstance(config, Broadcast01):
        by = config.time0
    elif isinstance(config, InterTranspose):
        by = config.time0 * config.slice1
    else:
        return None
    if in_time.size % by == 0:
        return None
    what = "time0" if isinstance(config, Broadcast01) else "slice1 * time0"
    legal = [d for d in range(1, in_time.size + 1) if in_time.size % d == 0]
    return _v("SWITCH-6", f"{config!r}: the input Time `{show(in_time)}` ({in_time.size} steps) is not "
              f"divisible by {what} = {by}",
              help=f"pick {what} among the divisors of {in_time.size}: {legal}")


def _legal_config_help(in_slice: Mapping, config: SwitchVariant) -> str:
    """A configuration of the same variant whose sizes cut this input Slice."""
    fields = dict(config.fields())
    n = in_slice.size
    s0 = fields.get("slice0", 2)
    s0 = s0 if _pow2(s0) and n % s0 == 0 else 2
    s1 = fields.get("slice1", 2)
    s1 = s1 if _pow2(s1) and n % (s0 * s1) == 0 else 2
    fields.update(slice1=s1, slice0=s0)
    if "time0" in fields and fields["time0"] <= 0:
        fields["time0"] = 1
    return f"e.g. `{type(config)(**fields)!r}`: slice1 and slice0 powers of two whose product divides {n}"


# --- rules of the named configurations ------------------------------------------------------


def _input_frags(in_slice: Mapping, in_time: Mapping) -> tuple:
    return tuple(fr for mp in (in_slice, in_time) for f in mp.factors() for fr in factor_frags(f))


def _tile_violation(piece: Mapping, n: int, carried: tuple, claimed: list) -> Violation | None:
    """SWITCH-11/12/14 for one tile slot of out_slice, holding `piece` (size n)."""
    for f in piece.factors():
        if isinstance(f, PaddingFactor) and f.kind != PaddingKind.TOP:
            return _v("SWITCH-11", f"the broadcast tile `{show(piece)}` fans data onto `{f.kind.marker}` "
                      f"padding, which must not be written; only `#` (don't-care) padding may take a tile",
                      help=f"write the tile as `{n}` or a new axis of size {n}")
        for fr in factor_frags(f) if isinstance(f, (AxisFactor, RaggedFactor)) else ():
            if any(not disjoint(fr, c) for c in carried):
                return _v("SWITCH-12", f"the broadcast tile `{show(piece)}` names `{fr.axis}` digits the "
                          f"input Slice/Time already carries; a tile must be a new axis",
                          help=f"write the tile as `{n}` (a broadcast) or an axis the input does not use")
            if any(not disjoint(fr, c) for c in claimed):
                return _v("SWITCH-14", f"two broadcast tiles both claim `{fr.axis}` digits; a tile axis "
                          f"may be used once", help=f"write the second tile as `{n}`")
            claimed.append(fr)
    return None


def _slots_of(mp: Mapping, slots: tuple[Mapping | int, ...]) -> list[Mapping]:
    """`mp` cut into consecutive pieces the sizes of `slots` (outer to inner)."""
    pieces: list[Mapping] = []
    rest = mp
    for slot in reversed(slots[1:]):
        rest, piece = split(rest, slot if isinstance(slot, int) else slot.size)
        pieces.append(piece)
    return [rest, *reversed(pieces)]


def check_named_output(in_slice: Mapping, in_time: Mapping, out_slice: Mapping, out_time: Mapping,
                       config: SwitchVariant) -> Violation | None:
    """SWITCH-7 (and the tile rules 11, 12, 14): the outputs are the configuration's frames."""
    frames = switch_frames(in_slice, in_time, config)
    if frames is None:
        return None
    carried, claimed = _input_frags(in_slice, in_time), []
    legal = f"out_slice = `{show(frames.out_slice)}`, out_time = `{show(frames.out_time)}`"
    for slot, piece in zip(frames.slice_slots, _slots_of(out_slice, frames.slice_slots)):
        n = slot if isinstance(slot, int) else slot.size
        bad = _tile_violation(piece, n, carried, claimed) if isinstance(slot, int) else None
        if bad is None and not isinstance(slot, int) and not piece.matches(slot):
            bad = _mismatch("OutSlice", frames.out_slice, out_slice, legal)
        if bad is not None:
            return bad
    if not out_time.matches(frames.out_time):
        return _mismatch("OutTime", frames.out_time, out_time, legal)
    return None


def _mismatch(frame: str, expected: Mapping, got: Mapping, legal: str) -> Violation:
    return _v("SWITCH-7", f"switch {frame} mismatch: the configuration produces `{show(expected)}`, "
              f"got `{show(got)}`", help=f"{legal} (a bare integer is the broadcast tile; a new axis "
              f"of that size may replace it)")


def check_tiles_once(in_slice: Mapping, in_time: Mapping, out_slice: Mapping) -> Violation | None:
    """SWITCH-14 (or 12): out_slice names one digit twice, e.g. the same tile axis in two slots.

    Such a mapping has no cell layout of its own, so this runs before the other rules."""
    try:
        out_slice.factors()
        return None
    except MappingError:
        pass
    items = pair_items(out_slice)
    try:
        twice = places_digit_twice(*items)
    except MappingError:
        twice = None
    if twice is None:
        return None  # not a repeated digit: the mapping error itself is reported by the caller
    second = twice[1]
    code = "SWITCH-12" if any(not disjoint(second, c) for c in _input_frags(in_slice, in_time)) else "SWITCH-14"
    last = max(i for i, item in enumerate(items)
               if any(not disjoint(second, fr) for f in item.factors() for fr in factor_frags(f)))
    legal = pair_all([Broadcast(it.size) if i == last else it for i, it in enumerate(items)])
    return _v(code, f"out_slice `{out_slice}` names `{second.axis}` digits twice; two broadcast tiles may "
              f"not claim one axis", help=f"write the second tile as a bare integer: out_slice = `{legal}`")


def check_padded_tile_axis(in_slice: Mapping, in_time: Mapping, out_slice: Mapping) -> Violation | None:
    """SWITCH-11: a broadcast axis of out_slice (a digit the input Slice and Time do not carry)
    is never padded (`X # 4`): the ring has no destination for the padded positions. Pure
    padding in a tile slot (`1 # 4`) is not an axis and stays legal."""
    carried = _input_frags(in_slice, in_time)
    for node in tree_nodes(out_slice):
        if not isinstance(node, Pad) or node.n == node.operand.size:
            continue
        new = [fr for f in node.operand.factors() for fr in factor_frags(f)
               if all(disjoint(fr, c) for c in carried)]
        if new:
            return _v("SWITCH-11", f"the broadcast axis `{new[0].axis}` is padded in out_slice (`{node}`); a "
                      f"broadcast axis must not carry padding, since the ring has no destination for the "
                      f"padded positions",
                      help=f"fill the slot with the tile itself: a bare integer `{node.n}` or a new axis of "
                      f"size {node.n} in place of `{node}`")
    return None


# --- entry point ----------------------------------------------------------------------------


def check_switch(in_slice: Mapping, in_time: Mapping, out_slice: Mapping, out_time: Mapping,
                 config: SwitchVariant, packet: Mapping | None = None,
                 dtype: DType | None = None) -> Violation | None:
    """All switch rules in report order; the first violation, or None for a legal switch."""
    try:
        return ((check_packet_align(packet, dtype) if packet is not None and dtype is not None else None)
                or check_slice_size(in_slice, out_slice)
                or check_tiles_once(in_slice, in_time, out_slice)
                or check_dimensions(in_slice, in_time, config)
                or check_padded_tile_axis(in_slice, in_time, out_slice)
                or (check_custom(in_slice, in_time, out_slice, out_time, config.ring_size)
                    if isinstance(config, CustomBroadcast)
                    else check_named_output(in_slice, in_time, out_slice, out_time, config))
                or (check_inter_transpose_run(config, packet, dtype)
                    if packet is not None and dtype is not None else None))
    except MappingError as e:  # a mapping without a cell layout (a digit placed twice)
        return Violation(e.code, e.detail.splitlines()[0])
