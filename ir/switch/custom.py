"""CUSTOM_BROADCAST: the switch rules a free permutation/broadcast must meet, its routes and ring.

The four mappings are cut into common digit pieces (every axis cut wherever any of them
cuts it). Then each live piece of `out_slice` is an input Slice piece kept in Slice, or a
broadcast tile (a bare integer or a digit the input does not carry); each live piece of
`out_time` is an input Time piece carried through, or an input Slice piece *moved* to
Time. The rules (SWITCH-8..17) say which of these the ring can route; `routes` says, for
every output slice and every step of the moved block, which input slice it reads, and
`computed_ring_size` the smallest aligned sub-ring holding every such read.
"""

from __future__ import annotations

import attrs
import numpy as np

from ir.diagnostic import Violation
from ir.errors import InternalError
from ir.mapping.cells import Index
from ir.mapping.cells import LIVE, evaluate
from ir.mapping.factors import BroadcastFactor, Factor, RaggedFactor, PaddingFactor
from ir.mapping.nodes import Mapping, PaddingKind, pair_all
from ir.mapping.ops import DigitRange, aligned_frag, disjoint, refine, split, strides
from ir.mapping.factors import short_text as show
from ir.memo import memo
from ir.switch.config import MAX_SLICES

__all__ = [
    "CustomPlan", "plan_custom", "check_custom", "routes", "route_table", "computed_ring_size", "snoop_bitmap",
    "bitmap_disagreement", "derived_bitmap", "checked_bitmap",
]


def _v(code: str, message: str, help: str | None = None) -> Violation:
    return Violation(code, message, help=help)


def _piece(mp: Mapping, factors: tuple[Factor, ...], i: int) -> Mapping:
    """Factor i of `mp`'s (refined) factor list, as a mapping of `mp`: `(mp % (s*e)) / s`."""
    stride = strides(factors)[i]
    inner = split(mp, stride * factors[i].extent)[1]
    return split(inner, stride)[0]


@attrs.frozen
class CustomPlan:
    """The classified pieces of a legal-so-far custom switch."""

    slice_frags: tuple[DigitRange, ...]  # the input Slice's live pieces, outer to inner
    moved: tuple[DigitRange, ...]  # the pieces moved Slice -> Time, in out_time order
    moved_size: int  # cells of out_time's moved block (its innermost part)
    has_tile: bool


def _refined(*mps: Mapping) -> list[tuple[Factor, ...]] | None:
    everything = tuple(f for mp in mps for f in mp.factors())
    out = [refine(mp.factors(), everything) for mp in mps]
    return None if any(o is None for o in out) else out  # type: ignore[return-value]


def _live(factors: tuple[Factor, ...]) -> tuple[list[DigitRange], bool]:
    """Live pieces of an input frame, and whether an irregular (unroutable) piece is live."""
    frags, irregular = [], False
    for f in factors:
        fr = aligned_frag(f)
        if fr is not None:
            frags.append(fr)
        elif isinstance(f, RaggedFactor):
            irregular = True
    return frags, irregular


def _classify_slice(fo: tuple[Factor, ...], sf: list[DigitRange], tf: list[DigitRange], out_time_frags: list[DigitRange],
                    out_slice: Mapping) -> tuple[list[DigitRange], bool] | Violation:
    """Kept Slice pieces of out_slice and whether it has a tile, or the first violation."""
    kept: list[DigitRange] = []
    tiles: list[DigitRange] = []
    has_tile = False
    for i, f in enumerate(fo):
        if isinstance(f, PaddingFactor):
            continue
        has_tile |= isinstance(f, BroadcastFactor)
        fr = aligned_frag(f)
        if isinstance(f, BroadcastFactor):
            continue
        text = show(_piece(out_slice, fo, i))
        if fr is None:
            return _v("SWITCH-10", f"out_slice piece `{text}` is not a digit range of any input axis; "
                      f"the switch cannot route it", help="use whole digit ranges (`X / a % b`) in out_slice")
        if fr in tf:
            if fr in out_time_frags:
                return _v("SWITCH-12", f"the broadcast tile `{text}` is a digit the input Time carries; "
                          f"a tile must be new", help=f"write the tile as `{f.extent}`")
            return _v("SWITCH-13", f"out_slice slot `{text}` comes from the input Time; Slice slots come "
                      f"from the input Slice or are new broadcast tiles",
                      help=f"keep `{text}` in out_time and put a tile `{f.extent}` in out_slice")
        if fr in kept or fr in tiles:
            code = "SWITCH-12" if fr in sf else "SWITCH-14"
            return _v(code, f"out_slice uses `{text}` twice; a second copy is a tile that is not new",
                      help=f"write the second one as `{f.extent}`")
        if fr in sf:
            kept.append(fr)
        elif any(not disjoint(fr, c) for c in sf + tf):
            return _v("SWITCH-10", f"out_slice piece `{text}` reads part of an input digit range; "
                      f"the switch routes whole pieces", help="use the input's digit ranges")
        else:
            tiles.append(fr)
            has_tile = True
    return kept, has_tile


def _classify_time(ft: tuple[Factor, ...], sf: list[DigitRange], tf: list[DigitRange], kept: list[DigitRange],
                   out_time: Mapping) -> tuple[list[int], list[int]] | Violation:
    """Indices of out_time pieces moved from Slice and carried from Time, or a violation."""
    moved, carried = [], []
    for i, f in enumerate(ft):
        if isinstance(f, PaddingFactor):
            continue
        fr = aligned_frag(f)
        text = show(_piece(out_time, ft, i))
        if fr in tf:
            carried.append(i)
        elif fr is not None and fr in sf:
            if fr in kept:
                return _v("SWITCH-12", f"`{text}` moves to out_time and also stays in out_slice, where "
                          f"it is a tile that is not new", help=f"write that out_slice slot as `{f.extent}`")
            moved.append(i)
        else:
            return _v("SWITCH-10", f"out_time slot `{text}` has no input source (the switch copies "
                      f"across slices, never across time steps)",
                      help="out_time holds the input Time, then the pieces moved from the input Slice")
    return moved, carried


def plan_custom(in_slice: Mapping, in_time: Mapping, out_slice: Mapping,
                out_time: Mapping) -> CustomPlan | Violation:
    """Classify every piece (SWITCH-10..17), or return the first rule it breaks."""
    refined = _refined(in_slice, in_time, out_slice, out_time)
    identity = f"e.g. out_slice = `{show(in_slice)}`, out_time = `{show(in_time)}` (ring_size=1)"
    if refined is None:
        return _v("SWITCH-10", "the input and output mappings cut an axis at incompatible digits",
                  help=identity)
    fs, ft, fo, fto = refined
    (sf, bad_s), (tf, bad_t) = _live(fs), _live(ft)
    if bad_s or bad_t:
        return _v("SWITCH-10", "the input has an irregular (ragged) live piece the switch cannot route",
                  help=identity)
    out_time_frags = [fr for fr in map(aligned_frag, fto) if fr is not None]
    sliced = _classify_slice(fo, sf, tf, out_time_frags, out_slice)
    if isinstance(sliced, Violation):
        return sliced
    kept, has_tile = sliced
    timed = _classify_time(fto, sf, tf, kept, out_time)
    if isinstance(timed, Violation):
        return timed
    moved_idx, carried_idx = timed
    return _finish(in_slice, in_time, out_slice, out_time, refined, kept, moved_idx, carried_idx, has_tile)


def _finish(in_slice: Mapping, in_time: Mapping, out_slice: Mapping, out_time: Mapping, refined: list,
            kept: list[DigitRange], moved_idx: list[int], carried_idx: list[int], has_tile: bool) -> CustomPlan | Violation:
    fs, ft, fo, fto = refined
    sf, tf = _live(fs)[0], _live(ft)[0]
    moved = [aligned_frag(fto[i]) for i in moved_idx]
    moved_frags: list[DigitRange] = [fr for fr in moved if fr is not None]
    dropped = [fr for fr in sf if fr not in kept and fr not in moved_frags]
    dropped += [fr for fr in tf if fr not in [aligned_frag(fto[i]) for i in carried_idx]]
    legal_time = pair_all([in_time] + [_piece(in_slice, fs, sf_index(fs, fr)) for fr in
                                       sorted(moved_frags, key=lambda fr: sf.index(fr))])
    if dropped:
        texts = [show(_piece(in_slice, fs, sf_index(fs, fr))) if fr in sf else show(_piece(in_time, ft, sf_index(ft, fr)))
                 for fr in dropped]
        return _v("SWITCH-10", f"the live input digits {', '.join(f'`{t}`' for t in texts)} reach neither "
                  f"out_slice nor out_time; only padding may be dropped",
                  help="keep every live input digit: in out_slice, or moved to the innermost out_time")
    if moved_idx and any(i > moved_idx[0] for i in carried_idx):
        first = show(_piece(out_time, fto, moved_idx[0]))
        return _v("SWITCH-15", f"`{first}` moves from Slice to Time but an input Time digit sits inner to it; "
                  f"moved digits must be out_time's innermost", help=f"out_time = `{show(legal_time)}`")
    order = [sf.index(fr) for fr in moved_frags]
    for a, b in zip(order, order[1:]):
        if a > b:
            return _v("SWITCH-16", f"`{show(_piece(in_slice, fs, sf_index(fs, sf[b])))}` (outer in the input "
                      f"Slice) landed inner to `{show(_piece(in_slice, fs, sf_index(fs, sf[a])))}`; moved digits "
                      f"keep their Slice order", help=f"out_time = `{show(legal_time)}`")
    moved_size = 1
    for f in fto[moved_idx[0]:] if moved_idx else ():
        moved_size *= f.extent
    carried = split(out_time, moved_size)[0]
    if not carried.equivalent(in_time):
        return _v("SWITCH-17", f"the switch carries the input Time `{show(in_time)}` through unchanged, but "
                  f"out_time carries `{show(carried)}` outside its moved digits",
                  help=f"out_time = `{show(legal_time)}`")
    if has_tile:
        for f in fo:
            if isinstance(f, PaddingFactor) and f.kind != PaddingKind.TOP:
                return _v("SWITCH-11", f"out_slice broadcasts onto `{f.kind.marker}` padding, which must not "
                          f"be written; only `#` (don't-care) padding may take tile data",
                          help="use `#` padding in out_slice")
    return CustomPlan(tuple(sf), tuple(moved_frags), moved_size, has_tile)


def sf_index(factors: tuple[Factor, ...], fr: DigitRange) -> int:
    """Index in a refined factor list of the piece whose live range is `fr`."""
    return [aligned_frag(f) for f in factors].index(fr)


def routes(in_slice: Mapping, out_slice: Mapping, out_time: Mapping, plan: CustomPlan) -> np.ndarray:
    """`src[s', m]`: the input slice output slice s' reads at moved step m (-1: nothing needed,
    -2: no input slice holds it). The moved block is out_time's innermost `plan.moved_size`."""
    moved_map = split(out_time, plan.moved_size)[1]
    so = evaluate(out_slice, np.arange(out_slice.size))
    mo = evaluate(moved_map, np.arange(plan.moved_size))
    si = evaluate(in_slice, np.arange(in_slice.size))
    axes = sorted({fr.axis for fr in plan.slice_frags})
    need = (so.status[:, None] == LIVE) & (mo.status[None, :] == LIVE)
    key_out = np.zeros(need.shape, dtype=np.int64)
    key_in = np.zeros(in_slice.size, dtype=np.int64)
    radix = 1
    for axis in axes:
        value = _coord(so, axis)[:, None] + _coord(mo, axis)[None, :]
        masked = np.zeros_like(value)
        for fr in plan.slice_frags:
            if fr.axis == axis:
                masked += (value // fr.lo) % fr.extent * fr.lo
        size = max(fr.hi for fr in plan.slice_frags if fr.axis == axis)
        key_out += masked * radix
        key_in += np.where(si.status == LIVE, _coord(si, axis), 0) * radix
        radix *= size
    live_in = np.flatnonzero(si.status == LIVE)
    order = np.argsort(key_in[live_in], kind="stable")
    sorted_keys = key_in[live_in][order]
    pos = np.clip(np.searchsorted(sorted_keys, key_out), 0, max(len(sorted_keys) - 1, 0))
    found = (sorted_keys[pos] == key_out) if len(sorted_keys) else np.zeros_like(need)
    src = np.where(found, live_in[order][pos] if len(sorted_keys) else -2, -2)
    if in_slice.size == out_slice.size:  # a replicated input (a broadcast in Slice): read your own copy
        own = np.arange(out_slice.size)[:, None]
        mine = (si.status[own] == LIVE) & (key_in[own] == key_out)
        src = np.where(mine, own, src)
    return np.where(need, src, -1)


def _coord(table, axis: str) -> np.ndarray:
    values = table.coords.get(axis)
    if values is None:
        return np.zeros(len(table.status), dtype=np.int64)
    return np.where(table.status == LIVE, values, 0).astype(np.int64)


@memo()
def route_table(in_slice: Mapping, in_time: Mapping, out_slice: Mapping,
                out_time: Mapping) -> tuple[CustomPlan, np.ndarray] | Violation:
    """`plan_custom` and its `routes` (read-only), or the first rule the mappings break: what
    the trace rules, the lowering and the verifier of a custom switch all start from, worked
    out once per distinct four mappings (a loop repeating one switch asks again and again)."""
    plan = plan_custom(in_slice, in_time, out_slice, out_time)
    if isinstance(plan, Violation):
        return plan
    src = routes(in_slice, out_slice, out_time, plan)
    src.setflags(write=False)
    return plan, src


def computed_ring_size(src: np.ndarray) -> int:
    """The smallest power-of-two sub-ring in which every read stays (1 when nothing moves)."""
    out_idx = np.broadcast_to(np.arange(src.shape[0])[:, None], src.shape)
    used = src >= 0
    ring = 1
    while ring < MAX_SLICES and np.any(out_idx[used] // ring != src[used] // ring):
        ring *= 2
    return ring


def snoop_bitmap(src: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """Per output slice, the sorted input slices it snoops."""
    return tuple(tuple(sorted({int(s) for s in row if s >= 0})) for row in src)


def check_custom(in_slice: Mapping, in_time: Mapping, out_slice: Mapping, out_time: Mapping,
                 ring_size: int) -> Violation | None:
    """SWITCH-8..17 for `CUSTOM_BROADCAST(ring_size=...)`."""
    if ring_size < 1 or ring_size & (ring_size - 1) or ring_size > MAX_SLICES:
        return _v("SWITCH-8", f"CUSTOM_BROADCAST ring_size must be a power of 2 up to {MAX_SLICES}, got {ring_size}",
                  help="ring_size is 1, 2, 4, ..., 256 (the rule SWITCH-9 then names the one the mappings need)")
    table = route_table(in_slice, in_time, out_slice, out_time)
    if isinstance(table, Violation):
        return table
    src = table[1]
    if np.any(src == -2):
        return _v("SWITCH-10", "an output slot reads an input slice position that holds padding, not data",
                  help="out_slice and out_time may only name live input digits")
    need = computed_ring_size(src)
    if need != ring_size:
        return _v("SWITCH-9", f"these mappings route within sub-rings of {need} slices, but ring_size={ring_size} "
                  f"was given", help=f"SwitchConfig.CUSTOM_BROADCAST(ring_size={need})")
    return None


def _masked_key(coords: dict[str, int], digits: dict[str, list[DigitRange]]) -> frozenset:
    """The input-Slice part of an index: only the input Slice's axes and digit ranges."""
    out = []
    for axis, frags in digits.items():
        v = coords.get(axis, 0)
        out.append((axis, sum((v // fr.lo) % fr.extent * fr.lo for fr in frags)))
    return frozenset(out)


def bitmap_disagreement(in_slice: Mapping, out_slice: Mapping, out_time: Mapping, moved_size: int,
                        bitmap: tuple[tuple[int, ...], ...]) -> int | None:
    """The first output slice whose snooped lanes do not serve exactly its reads, found by a
    plain enumeration of the mapping cells (independent of `routes`); None when all agree."""
    digits: dict[str, list[DigitRange]] = {}
    for f in in_slice.factors():
        fr = aligned_frag(f)
        if fr is not None:
            digits.setdefault(fr.axis, []).append(fr)
    holders: dict[frozenset, set[int]] = {}
    for s in range(in_slice.size):
        cell = in_slice.cell(s)
        if isinstance(cell, Index):
            holders.setdefault(_masked_key(dict(cell.items()), digits), set()).add(s)
    moved = split(out_time, moved_size)[1]
    moved_cells = [moved.cell(i) for i in range(moved_size)]
    for lane in range(out_slice.size):
        cell, row = out_slice.cell(lane), set(bitmap[lane])
        needed: set[int] = set()
        for mc in moved_cells:
            if not (isinstance(cell, Index) and isinstance(mc, Index)):
                continue
            coords = {a: cell.get(a) + mc.get(a) for a in set(cell) | set(mc)}
            sources = holders.get(_masked_key(coords, digits), set())
            if not sources & row:
                return lane
            needed |= sources
        if not row <= needed:
            return lane
    return None


@memo()
def derived_bitmap(in_slice: Mapping, in_time: Mapping, out_slice: Mapping,
                   out_time: Mapping) -> tuple[tuple[int, ...], ...] | Violation:
    """The snoop bitmap the four mappings of a custom switch need, or the rule they break."""
    table = route_table(in_slice, in_time, out_slice, out_time)
    return table if isinstance(table, Violation) else snoop_bitmap(table[1])


@memo()
def checked_bitmap(in_slice: Mapping, in_time: Mapping, out_slice: Mapping,
                   out_time: Mapping) -> tuple[tuple[int, ...], ...]:
    """The snoop bitmap of a legal custom switch, cross-checked against the cell enumeration
    (the reference's `BitmapAttributionMismatch` backstop); a disagreement is an ICE. Once per
    distinct four mappings: the enumeration is the costliest step of lowering a switch."""
    table = route_table(in_slice, in_time, out_slice, out_time)
    if isinstance(table, Violation):
        raise InternalError(f"checked_bitmap on a refused switch: {table.code} {table.message}")
    plan = table[0]
    bitmap = derived_bitmap(in_slice, in_time, out_slice, out_time)
    lane = bitmap_disagreement(in_slice, out_slice, out_time, plan.moved_size, bitmap)
    if lane is not None:
        raise InternalError(f"switch snoop bitmap disagrees with the (out_slice x out_time) enumeration "
                            f"at output slice {lane}")
    return bitmap
