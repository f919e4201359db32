"""Contraction Engine rules (docs/machine/contraction.md): OUTER-1..11, PACKET-1..4, TIME-1..4, LANE-1..6.

`contract_outer` checks CTX-2 and SPACE-4 first. Each checker evaluates its rules in the
order docs/machine/index.md lists them and returns the first failure; a mapping operation that
fails is a failure of the rule that needed it. The derived quantities the lowering and
the cpu backend use live in `ir.rules.contract_geometry` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable

from ir.diagnostic import Violation
from ir.dtypes import CONTRACTION_PAIRS, TRF_STORAGE, DType
from ir.errors import MappingError
from ir.mapping import ops as mops
from ir.mapping.factors import AxisFactor, BroadcastFactor, Factor, PaddingFactor, RaggedFactor, factor_size
from ir.mapping.nodes import Mapping, pair_all
from ir.mapping.ops import DigitRange
from ir.rules.contract_geometry import (
    ACC_CELLS, ACC_COLS, LANE_BUS, LANES, OUTER_PACKET_BYTES, SEQ_MAX_ENTRIES, SEQ_MAX_ITER,
    LaneGeometry, OuterGeometry, TimeLoopGeometry, TimeReduction, accumulator_cells, axis_sizes,
    factor_mapping, lane_fold, lane_fold_f, lane_geometry, ordered_reduction, outer_geometry, packet_depth,
    reduced_packet, split_to_factors, split_normalized, text_of, time_reduction, trf_read_size, walk_entries,
)
from ir.rules.space import same_spatial
from ir.types import LaneMode, MAIN

__all__ = [
    "check_outer", "check_packet", "check_time", "check_lane",
    "outer_geometry", "packet_depth", "time_reduction", "lane_geometry",
    "OuterGeometry", "TimeReduction", "TimeLoopGeometry", "LaneGeometry",
]


class _CurrentRule:
    """The rule being evaluated, so a MappingError deep inside becomes that rule's failure."""

    def __init__(self, code: str) -> None:
        self.code = code


def _guarded(fn: Callable[[_CurrentRule], Violation | None], first: str) -> Violation | None:
    rule = _CurrentRule(first)
    try:
        return fn(rule)
    except MappingError as e:
        return Violation(rule.code, f"{rule.code} cannot be evaluated: {e.detail.splitlines()[0]}",
                         notes=(f"mapping error {e.code}",))


# --- text helpers --------------------------------------------------------------------------


def _raw(mapping: Mapping) -> str:
    """The mapping as the user wrote it, without outer parentheses."""
    text = mapping.text()
    return text[1:-1] if text.startswith("(") and text.endswith(")") else text


def _bytes(n: int, dtype: DType) -> str:
    bits = n * dtype.bits
    b = f"{bits // 8}" if bits % 8 == 0 else f"{bits / 8:g}"
    return f"{n} x {dtype} = {b} bytes"


def _frag_text(fr: DigitRange, sizes: dict[str, int]) -> str:
    """A live digit range as mapping text: `J / 8 % 4`, `K % 32`, `I`."""
    size = sizes.get(fr.axis, fr.hi)
    text = fr.axis if fr.lo == 1 else f"{fr.axis} / {fr.lo}"
    return text if fr.hi >= size and size % fr.lo == 0 and size // fr.lo == fr.extent else f"{text} % {fr.extent}"


def _factor_text(f: Factor, sizes: dict[str, int]) -> str:
    if isinstance(f, AxisFactor):
        return _frag_text(DigitRange(f.axis, f.step, f.step * f.extent), sizes)
    if isinstance(f, BroadcastFactor):
        return str(f.extent)
    if isinstance(f, PaddingFactor):
        return f"1 {f.kind.marker} {f.extent}"
    run = mops.ragged_run(f)
    if run is not None:
        return f"{_frag_text(run, sizes)} # {f.extent}"
    return f"a ragged piece of {f.extent} cells"


def _list_text(factors: list[Factor] | tuple[Factor, ...], sizes: dict[str, int]) -> str:
    return ", ".join(_factor_text(f, sizes) for f in factors) or "1"


# --- 9.1 contract_outer --------------------------------------------------------------------


def check_outer(op) -> Violation | None:
    """CTX-2, SPACE-4, then OUTER-1..11 (docs/machine/index.md)."""
    s, w = op.input.type, op.trf.type
    if s.context != MAIN:
        return Violation(
            "CTX-2", "`contract_outer` needs a main-context stream: the sub context has no Contraction Engine",
            label=f"this stream runs in `ctx.{s.context}`",
            help="start the stream with `ctx.main.begin(...)`; the TRF operand may still be loaded in `ctx.sub`")
    return _guarded(lambda rule: _space4(s, w, rule) or _outer_rules(s, w, op.time, op.packet, rule), "SPACE-4")


def _space4(s, w, rule: _CurrentRule) -> Violation | None:
    which = same_spatial(w, s)
    if which is None:
        return None
    return Violation(
        "SPACE-4", f"the TRF operand lives on other slices than the stream: its {which.capitalize()} differs",
        label=f"TRF {which.capitalize()} `{_raw(getattr(w, which))}`, stream {which.capitalize()} "
              f"`{_raw(getattr(s, which))}`",
        help="load the TRF from a DM tensor with the same Chip, Cluster and Slice mappings as the streamed one")


def _packet_fix(s) -> str:
    """The out_packet(s) the stream admits: P (one flit) or [T_packed, P] (two flits)."""
    one = f'm("{_raw(s.packet)}")'
    if s.time.size % 2:
        return one
    t_packed = split_normalized(s.time, 2)[1]
    return f'{one} (one flit) or m("{text_of(pair_all([t_packed, s.packet]))}") (two flits)'


def _time_fix(out_time: Mapping, t_outer: Mapping) -> str:
    """out_time = [stream time, broadcast factors]: the user's other factors moved inside."""
    stream = mops.frag(t_outer)
    extra = [f for f in out_time.factors()
             if not any(mops.relation(a, b) != "disjoint" for a in mops.factor_frags(f) for b in stream)]
    if any(isinstance(f, RaggedFactor) for f in extra):
        return f'begin out_time with the stream time `{text_of(t_outer)}`; broadcast factors go innermost'
    fixed = pair_all([t_outer, *(factor_mapping(f) for f in extra)])
    if fixed.size == out_time.size:
        return f'use m("{text_of(fixed)}"): the stream time first, broadcast factors innermost'
    return f'begin out_time with the stream time `{text_of(t_outer)}`; broadcast factors go innermost'


def _outer_rules(s, w, out_time: Mapping, out_packet: Mapping, rule: _CurrentRule) -> Violation | None:
    d, dw = s.dtype, w.dtype
    rule.code = "OUTER-1"
    if (d, dw) not in CONTRACTION_PAIRS:
        legal = sorted(str(b) for a, b in CONTRACTION_PAIRS if a == d and b in TRF_STORAGE)
        return Violation(
            "OUTER-1", f"an {d} stream cannot be contracted with {dw} weights",
            label=f"stream {d} x TRF {dw} is not a Multiplier pair",
            notes=("Multiplier pairs: {i4, i5} x {i4, i5} and {i8, i9} x {i8, i9} accumulate in i32; "
                   "bf16 x bf16, f8e4m3 x f8e4m3, f8e5m2 x f8e5m2 accumulate in f32",),
            help=f"store the TRF operand as {' or '.join(legal)} for an {d} stream" if legal else None)
    rule.code = "OUTER-2"
    if w.lane.size not in LANES:
        return Violation("OUTER-2", f"the TRF operand has {w.lane.size} lanes; a contraction uses 1, 2, 4 or 8",
                         label=f"TRF lane `{_raw(w.lane)}` has size {w.lane.size}",
                         notes=("docs/machine/index.md predicate TRF-LANE",))
    rule.code = "OUTER-3"
    bits = out_packet.size * d.bits
    if bits % 8 or bits // 8 not in OUTER_PACKET_BYTES:
        return Violation("OUTER-3", "a contract_outer packet is 32 or 64 bytes (one or two flits)",
                         label=f"out_packet `{_raw(out_packet)}` is {_bytes(out_packet.size, d)}",
                         notes=("docs/machine/index.md predicate PKT-OUTER",
                                f"sizes are counted in the stream type {d}, not the accumulator"),
                         help=f"use {_packet_fix(s)}")
    pack = bits // 256
    rule.code = "OUTER-4"
    op_packed, op_flit = split_to_factors(out_packet, d.flit_elems)
    if op_flit != s.packet.factors():
        return Violation("OUTER-4", "the inner flit of out_packet must be the stream's packet",
                         label=f"inner flit `{text_of(split_normalized(out_packet, d.flit_elems)[1])}` of out_packet is "
                               f"not the stream packet `{_raw(s.packet)}`",
                         help=f"use {_packet_fix(s)}")
    rule.code = "OUTER-5"
    if s.time.size % pack:
        return Violation("OUTER-5", "a two-flit packet needs an even number of stream time steps",
                         label=f"out_packet is {pack} flits but the stream time `{_raw(s.time)}` has "
                               f"{s.time.size} steps",
                         help=f'use m("{_raw(s.packet)}") (one flit)')
    t_outer, t_packed = split_to_factors(s.time, pack)
    if op_packed != t_packed:
        return Violation("OUTER-5", "the outer half of a two-flit packet must be the innermost size-2 time factor",
                         label=f"packed half `{text_of(split_normalized(out_packet, d.flit_elems)[0])}` of out_packet "
                               f"is not the stream's innermost time factor `{text_of(split_normalized(s.time, pack)[1])}` "
                               f"(pack = 2)",
                         help=f"use {_packet_fix(s)}")
    rule.code = "OUTER-6"
    t_outer_size = s.time.size // pack
    if out_time.size % t_outer_size:
        t_text = text_of(split_normalized(s.time, pack)[0])
        return Violation("OUTER-6", "out_time must repeat the stream's packets a whole number of times",
                         label=f"out_time `{_raw(out_time)}` has {out_time.size} steps; the stream delivers "
                               f"{t_outer_size} packets (`{t_text}`)",
                         help=f'use m("{t_text}"), with broadcast factors for the TRF innermost if needed')
    tiling = out_time.size // t_outer_size
    rule.code = "OUTER-7"
    if split_to_factors(out_time, tiling)[0] != t_outer:
        t_map = split_normalized(s.time, pack)[0]
        return Violation("OUTER-7", "out_time must keep the stream's time order, broadcast factors only innermost",
                         label=f"outer part `{text_of(split_normalized(out_time, tiling)[0])}` of out_time is not the "
                               f"stream time `{text_of(t_map)}`",
                         help=_time_fix(out_time, t_map))
    return _trf_rules(s, w, out_time, out_packet, rule)


def _trf_rules(s, w, out_time: Mapping, out_packet: Mapping, rule: _CurrentRule) -> Violation | None:
    """OUTER-8..11: the TRF sequencer (read size R, walk over out_time)."""
    trf_frags = [("lane", fr) for fr in mops.frag(w.lane)] + [("element", fr) for fr in mops.frag(w.element)]
    rule.code = "OUTER-8"
    r = trf_read_size(w.element, out_packet, w.dtype)
    e_outer = split_to_factors(w.element, r)[0]
    op_bcast = split_to_factors(out_packet, r)[0]
    hit = _covered_factors(op_bcast, trf_frags)
    if hit is not None:
        fr, where = hit
        sizes = axis_sizes(w.lane, w.element, out_time, out_packet)
        op_bcast_m, op_read = split_normalized(out_packet, r)
        return Violation(
            "OUTER-8", "TRF data can only be replicated across the packet, not spread over it",
            label=f"`{_frag_text(fr, sizes)}` of out_packet lies outside the TRF read but is held by the TRF "
                  f"{where} `{_raw(getattr(w, where))}`",
            notes=(f"the TRF read size is R = {r}: the inner {r} cell(s) of out_packet (`{text_of(op_read)}`) "
                   f"are the inner cells of the TRF element `{_raw(w.element)}`; the rest of out_packet, "
                   f"`{text_of(op_bcast_m)}`, may only hold fragments the TRF lacks",),
            help="store the TRF element with out_packet's inner factors innermost, or walk "
                 f"`{_frag_text(fr, sizes)}` in out_time instead of the packet")
    rule.code = "OUTER-9"
    got = mops.divide(out_time, e_outer)
    if got is None:
        sizes = axis_sizes(w.lane, w.element, out_time, out_packet)
        missing = [f for f in e_outer if mops.divide(out_time, (f,)) is None] or list(e_outer)
        rows = text_of(split_normalized(w.element, r)[0])
        return Violation(
            "OUTER-9", "out_time must walk every TRF row: each factor of the TRF element outside one read "
                       "must be a factor of out_time",
            label=f"out_time `{_raw(out_time)}` does not walk `{_list_text(missing, sizes)}` of the TRF rows "
                  f"`{rows}`",
            notes=(f"TRF element `{_raw(w.element)}`, read size R = {r}: rows E_outer = `{rows}`",),
            help=f"add `{_list_text(missing, sizes)}` to out_time (after the stream's time, as broadcast factors "
                 "for the stream)")
    for lp in got.loops:
        hit = None if lp.kept else _covered_factors((lp.factor,), trf_frags)
        if hit is not None:
            fr, where = hit
            sizes = axis_sizes(w.lane, w.element, out_time, out_packet)
            return Violation(
                "OUTER-9", "a time factor that is not a TRF row must be a pure broadcast for the TRF",
                label=f"`{_frag_text(fr, sizes)}` of out_time is held by the TRF {where} "
                      f"`{_raw(getattr(w, where))}` but is not one of the rows `{text_of(split_normalized(w.element, r)[0])}`",
                help="walk the TRF only along its rows E_outer; lane fragments never appear in time")
    rule.code = "OUTER-10"
    twice = mops.places_digit_twice(s.chip, s.cluster, s.slice, w.lane, out_time, out_packet)
    if twice is not None:
        sizes = axis_sizes(s.chip, s.cluster, s.slice, w.lane, out_time, out_packet)
        names = _levels_of(twice, (("Chip", s.chip), ("Cluster", s.cluster), ("Slice", s.slice),
                                   ("Lane", w.lane), ("out_time", out_time), ("out_packet", out_packet)))
        a, b = twice
        own = b if names[1] in ("out_time", "out_packet") or names[0] not in ("out_time", "out_packet") else a
        where = names[1] if own is b else names[0]
        return Violation(
            "OUTER-10", "the contraction's joint mapping places a digit of an axis twice",
            label=f"`{_frag_text(a, sizes)}` ({names[0]}) and `{_frag_text(b, sizes)}` ({names[1]}) overlap",
            notes=("the joint mapping is [Chip, Cluster, Slice, Lane, out_time, out_packet]",),
            help=f"drop `{_frag_text(own, sizes)}` from {where}: each digit of an axis has one place")
    rule.code = "OUTER-11"
    walk = mops.coalesce(walk_entries(got))
    text = "[" + ", ".join(str(e) for e in walk) + "]"
    if len(walk) > SEQ_MAX_ENTRIES:
        return Violation("OUTER-11", f"the TRF read walk needs {len(walk)} loop entries; the sequencer has "
                                     f"{SEQ_MAX_ENTRIES}",
                         label=f"TRF read walk {text} (size:stride in reads)",
                         notes=("docs/machine/index.md predicate SEQ",),
                         help="merge time factors so that the TRF strides line up, or drop broadcast factors")
    big = next((e for e in walk if e.size > SEQ_MAX_ITER), None)
    if big is not None:
        return Violation("OUTER-11", f"a TRF read loop of {big.size} iterations exceeds {SEQ_MAX_ITER}",
                         label=f"TRF read walk {text} (size:stride in reads)",
                         notes=("docs/machine/index.md predicate SEQ",),
                         help="split the time so that no single loop runs more than 65536 times")
    return None


def _covered_factors(factors, trf_frags: list[tuple[str, DigitRange]]) -> tuple[DigitRange, str] | None:
    """The first live fragment of `factors` that shares digits with the TRF, and where."""
    for f in factors:
        for fr in mops.factor_frags(f):
            for where, g in trf_frags:
                if mops.relation(fr, g) != "disjoint":
                    return fr, where
    return None


def _levels_of(pair: tuple[DigitRange, DigitRange], levels) -> tuple[str, str]:
    out = []
    for fr in pair:
        out.append(next((name for name, mp in levels
                         if any(fr in mops.factor_frags(f) for f in mp.factors())), "?"))
    return out[0], out[1]


# --- 9.2 contract_packet -------------------------------------------------------------------


def check_packet(op) -> Violation | None:
    """PACKET-1..4 (docs/machine/contraction.md)."""
    return _guarded(lambda rule: _packet_rules(op.input.type, op.packet, rule), "PACKET-1")


def _packet_rules(t, out_packet: Mapping, rule: _CurrentRule) -> Violation | None:
    p, d = t.packet, t.dtype
    bits = p.size * d.bits
    if bits % 8 or bits // 8 not in OUTER_PACKET_BYTES:
        return Violation("PACKET-1", "the Packet Reducer takes 32- or 64-byte packets",
                         label=f"input packet `{_raw(p)}` is {_bytes(p.size, d)}",
                         notes=("docs/machine/index.md predicate PKT-OUTER",))
    rule.code = "PACKET-2"
    n = out_packet.size
    if n > ACC_COLS:
        return Violation("PACKET-2", f"the reduced packet has {n} columns; the accumulator has {ACC_COLS}",
                         label=f"out_packet `{_raw(out_packet)}` has size {n} > {ACC_COLS}",
                         notes=("docs/machine/index.md predicate PKT-REDUCE",),
                         help=_depth_help(p))
    rule.code = "PACKET-3"
    if n & (n - 1):
        return Violation("PACKET-3", f"the reduced packet must have a power-of-two size, not {n}",
                         label=f"out_packet `{_raw(out_packet)}` has size {n}",
                         notes=("docs/machine/index.md predicate PKT-REDUCE",),
                         help=_depth_help(p))
    rule.code = "PACKET-4"
    if packet_depth(p, out_packet) is None:
        return Violation("PACKET-4", "out_packet is not what an adder tree leaves of the packet",
                         label=f"no tree depth reduces `{_raw(p)}` to `{_raw(out_packet)}`",
                         notes=("depth d sums adjacent groups of 2^d cells and leaves outer(split(P, 2^d)); "
                                "outermost padding may be added or left out",),
                         help=_depth_help(p))
    return None


def _depth_help(p: Mapping) -> str:
    options = []
    d = 0
    while p.size % (2 ** d) == 0 and p.size // (2 ** d) >= 1:
        if p.size // (2 ** d) <= ACC_COLS:
            options.append(f'd = {d}: m("{text_of(reduced_packet(p, d))}")')
        if 2 ** d == p.size:
            break
        d += 1
    return "the reductions of this packet are " + "; ".join(options)


# --- 9.3 contract_time ---------------------------------------------------------------------


def check_time(op) -> Violation | None:
    """TIME-1..4 (docs/machine/contraction.md)."""
    return _guarded(lambda rule: _time_rules(op.input.type.time, op.time, rule), "TIME-1")


def _run_view(factors, sizes: dict[str, int], keep_bc_pu: bool) -> tuple[Factor, ...]:
    """Factors with every `X # p` piece replaced by its live run as an AxisFactor (padded extents
    ignored); without BroadcastFactor/PaddingFactor unless asked."""
    out: list[Factor] = []
    for f in factors:
        if isinstance(f, (BroadcastFactor, PaddingFactor)):
            if keep_bc_pu:
                out.append(f)
            continue
        run = mops.ragged_run(f) if isinstance(f, RaggedFactor) else None
        out.append(f if run is None else AxisFactor(run.axis, run.lo, run.extent, sizes.get(run.axis, run.hi)))
    return tuple(out)


def _time_rules(pre: Mapping, out: Mapping, rule: _CurrentRule) -> Violation | None:
    sizes = axis_sizes(pre, out)
    fp, fo = pre.factors(), out.factors()
    live_p, live_o = _run_view(fp, sizes, False), _run_view(fo, sizes, False)
    pre_list = f"the factors of the stream time are `{_list_text(fp, sizes)}`"
    got = mops.divide(live_p, live_o)
    if got is None:
        bad = next((g for g in live_o if mops.divide(live_p, (g,)) is None), None)
        what = f"`{_factor_text(bad, sizes)}`" if bad is not None else "its factors"
        return Violation("TIME-1", "contract_time may only keep factors of the stream's time",
                         label=f"out_time `{_raw(out)}` keeps {what}, which is not a factor of the time "
                               f"`{_raw(pre)}`",
                         notes=(pre_list,),
                         help="list the kept factors of the time in out_time; every other factor is summed")
    rule.code = "TIME-2"
    kept = [lp for lp in got.loops if lp.kept]
    for a, b in zip(kept, kept[1:]):
        if a.stride_n <= b.stride_n:
            return Violation("TIME-2", "contract_time must keep the time factors in the stream's order",
                             label=f"`{_factor_text(a.factor, sizes)}` comes before `{_factor_text(b.factor, sizes)}` "
                                   f"in the time `{_raw(pre)}` but after it in out_time",
                             notes=(pre_list,),
                             help=f'use m("{_list_text([lp.factor for lp in kept], sizes)}"), or reorder the '
                                  "time at fetch and collect")
    rule.code = "TIME-3"
    runs_p, runs_o = _run_view(fp, sizes, True), _run_view(fo, sizes, True)
    if ordered_reduction(runs_p, runs_o) is None:
        if mops.divide(runs_p, runs_o) is not None:
            return Violation("TIME-2", "contract_time must keep the time factors in the stream's order",
                             label=f"the broadcast or padding factors of out_time `{_raw(out)}` are not in the "
                                   f"order of the time `{_raw(pre)}`",
                             notes=(pre_list,))
        extra = [g for g in fo if isinstance(g, (BroadcastFactor, PaddingFactor)) and mops.divide(runs_p, (g,)) is None]
        what = f"`{_list_text(extra, sizes)}`" if extra else "a broadcast or padding factor"
        return Violation("TIME-3", "out_time may not add padding or broadcast factors of its own",
                         label=f"out_time `{_raw(out)}` has {what}, which the time `{_raw(pre)}` does not have",
                         notes=(pre_list,),
                         help=f"drop {what} from out_time: contract_time keeps factors of the time and cannot "
                              "add padding or broadcasts")
    rule.code = "TIME-4"
    if ordered_reduction(fp, fo) is None:
        pre_ops = [f for f in fp if isinstance(f, RaggedFactor)]
        own = [g for g in fo if isinstance(g, RaggedFactor) and g not in pre_ops
               and not any(_shares(g, f) for f in pre_ops)]
        if own:
            return Violation("TIME-3", "out_time may not add padding of its own",
                             label=f"`{_factor_text(own[0], sizes)}` pads a factor the time `{_raw(pre)}` "
                                   "holds unpadded",
                             notes=(pre_list,),
                             help="write the kept factors as the time has them, without `#`; pad at fetch or "
                                  "collect instead")
        return Violation("TIME-4", "a kept padded time factor must keep its padded extent",
                         label=f"out_time `{_raw(out)}` changes the padding of a kept factor of the time "
                               f"`{_raw(pre)}`",
                         notes=(pre_list,),
                         help="keep a padded fragment whole, with the same `# p` as in the stream's time")
    return None


def _shares(a: RaggedFactor, b: RaggedFactor) -> bool:
    return any(mops.relation(x, y) != "disjoint" for x in mops.factor_frags(a) for y in mops.factor_frags(b))


# --- 9.4 contract_lane ---------------------------------------------------------------------


def check_lane(op) -> Violation | None:
    """LANE-1..6 (docs/machine/contraction.md)."""
    return _guarded(lambda rule: _lane_rules(op.input.type, op.time, op.packet, op.mode, rule), "LANE-1")


def _lane_rules(t, out_time: Mapping, out_packet: Mapping, mode: LaneMode, rule: _CurrentRule) -> Violation | None:
    p, lane = t.packet, t.lane
    if p.size > ACC_COLS:
        return Violation("LANE-1", f"the Lane Folder takes at most {ACC_COLS} columns",
                         label=f"the packet `{_raw(p)}` has {p.size} columns")
    rule.code = "LANE-2"
    if out_packet.size != LANE_BUS:
        return Violation("LANE-2", f"contract_lane emits one flit of {LANE_BUS} 32-bit values per cycle",
                         label=f"out_packet `{_raw(out_packet)}` has size {out_packet.size}, not {LANE_BUS}",
                         notes=("docs/machine/index.md predicate PKT-FLIT",))
    rule.code = "LANE-3"
    f, expected = lane_fold_f(lane, p, mode)
    if out_packet.factors() != expected:
        want = text_of(lane_fold(lane, p, mode)[1])
        return Violation("LANE-3", f"out_packet is not the {mode.name} lane packet",
                         label=f"out_packet `{_raw(out_packet)}`, expected `{want}`",
                         notes=(_mode_note(mode, lane, p),),
                         help=f'use m("{want}")')
    rule.code = "LANE-4"
    f_size = factor_size(f)
    if out_time.size % f_size or split_to_factors(out_time, f_size)[1] != f:
        f_map = lane_fold(lane, p, mode)[0]
        fix = f'use m("{text_of(pair_all([t.time, f_map]))}")'
        if out_time.size % f_size:
            label = (f"out_time `{_raw(out_time)}` has {out_time.size} steps, not a multiple of size(F) = {f_size} "
                     f"(F = `{text_of(f_map)}`)")
        else:
            label = f"inner part `{text_of(split_normalized(out_time, f_size)[1])}` of out_time is not F = `{text_of(f_map)}`"
        return Violation("LANE-4", "out_time must end with the folded factors F", label=label,
                         notes=(_mode_note(mode, lane, p),), help=fix)
    rule.code = "LANE-5"
    if split_to_factors(out_time, f_size)[0] != t.time.factors():
        f_map = lane_fold(lane, p, mode)[0]
        return Violation("LANE-5", "out_time must begin with the stream's time",
                         label=f"outer part `{text_of(split_normalized(out_time, f_size)[0])}` of out_time is not the "
                               f"time `{_raw(t.time)}`",
                         help=f'use m("{text_of(pair_all([t.time, f_map]))}")')
    rule.code = "LANE-6"
    return _capacity(t, mode)


def _mode_note(mode: LaneMode, lane: Mapping, p: Mapping) -> str:
    if mode is LaneMode.INTERLEAVED:
        return f"INTERLEAVED: F = the packet `{_raw(p)}`, out_packet = pad(Lane, 8) with Lane `{_raw(lane)}`"
    return (f"SEQUENTIAL: (P_hi, P_lo) = split(pad(P, 8k), 8) of the packet `{_raw(p)}`; "
            f"F = [Lane, P_hi] with Lane `{_raw(lane)}`, out_packet = P_lo")


def _capacity(t, mode: LaneMode) -> Violation | None:
    """LANE-6: the kept time slots inside the outermost reduced factor fit the accumulator."""
    if t.pre_time is None:
        return None
    try:
        red = time_reduction(t.pre_time, t.time)
    except ValueError:
        return None  # contract_time refused this time already
    it, lanes, cols = red.inner_time, t.lane.size, t.packet.size
    cells = accumulator_cells(mode, lanes, cols, it)
    if cells <= ACC_CELLS:
        return None
    sizes = axis_sizes(t.pre_time)
    first = next(i for i, lp in enumerate(red.loops) if not lp.keep)
    inside = [lp.factor for lp in red.loops[first + 1:] if lp.keep]
    where = (f"IT = {it}: `{_list_text(inside, sizes)}` is kept inside the summed factor "
             f"`{_factor_text(red.loops[first].factor, sizes)}` of the time `{_raw(t.pre_time)}`")
    if mode is LaneMode.INTERLEAVED:
        product = f"8 lanes x {it} slots x {cols} columns = {cells} cells > {ACC_CELLS}"
        max_it, other = ACC_CELLS // (LANE_BUS * cols), f"at most {max(1, ACC_CELLS // (LANE_BUS * it))} columns"
    else:
        per = ACC_COLS * -(-cols // ACC_COLS)
        product = f"{lanes} lanes x {it} slots x {per} columns = {cells} cells > {ACC_CELLS}"
        max_it = ACC_CELLS // (lanes * per)
        max_lanes = max((n for n in LANES if n * it * per <= ACC_CELLS), default=0)
        other = f"at most {max_lanes} lanes" if max_lanes else "fewer lanes"
    return Violation(
        "LANE-6", f"accumulator overflow: {product}",
        label=where,
        notes=(f"the Time Reducer keeps IT = {it} slot(s) per lane while it sums the outermost reduced factor",),
        help=f"{product}: keep at most {max_it} time position(s) inside the reduced factor (sum an inner "
             f"factor, or make the summed factor innermost in contract_outer's time), or use {other}")
