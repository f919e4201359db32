"""Contraction Engine rules of `contract_outer` (docs/machine/contraction.md): CTX-2, SPACE-4, OUTER-1..11.

Each checker evaluates its rules in the order docs/machine/index.md lists them and returns the first
failure; a mapping operation that fails is a failure of the rule that needed it. The
derived quantities live in `ir.rules.contract_geometry`.
"""

from __future__ import annotations

from ir.diagnostic import Violation
from ir.dtypes import CONTRACTION_PAIRS, TRF_STORAGE
from ir.mapping import ops as mops
from ir.mapping.factors import PaddingFactor, RaggedFactor
from ir.mapping.nodes import Mapping, pair_all
from ir.mapping.ops import DigitRange
from ir.rules.contract_geometry import (
    LANES, OUTER_PACKET_BYTES, SEQ_MAX_ENTRIES, SEQ_MAX_ITER, axis_sizes, divide_rows, factor_mapping,
    split_normalized, split_to_factors, text_of, trf_read_size, walk_entries,
)
from ir.rules.contract_text import CurrentRule, bytes_text, frag_text, guarded, holding, list_text, raw
from ir.rules.space import same_spatial
from ir.types import MAIN
from ir.words import a_an

__all__ = ["check_outer"]


def check_outer(op) -> Violation | None:
    """CTX-2, SPACE-4, then OUTER-1..11 (docs/machine/index.md)."""
    s, w = op.input.type, op.trf.type
    if s.context != MAIN:
        return Violation(
            "CTX-2", "`contract_outer` needs a main-context stream: the sub context has no Contraction Engine",
            label=f"this stream runs in `ctx.{s.context}`",
            help="start the stream with `ctx.main.begin(...)`; the TRF operand may still be loaded in `ctx.sub`")
    # OUTER-1..11 in order: the operands, the stream adapter, the TRF sequencer
    return guarded(lambda rule: _space4(s, w, rule) or _operand_rules(s, w, op.packet, rule)
                   or _adapter_rules(s, op.time, op.packet, rule) or _trf_rules(s, w, op.time, op.packet, rule),
                   "SPACE-4")


def _space4(s, w, rule: CurrentRule) -> Violation | None:
    which = same_spatial(w, s)
    if which is None:
        return None
    return Violation(
        "SPACE-4", f"the TRF operand lives on other slices than the stream: its {which.capitalize()} differs",
        label=f"TRF {which.capitalize()} `{raw(getattr(w, which))}`, stream {which.capitalize()} "
              f"`{raw(getattr(s, which))}`",
        help="load the TRF from a DM tensor with the same Chip, Cluster and Slice mappings as the streamed one")


def _packet_fix(s) -> str:
    """The out_packet(s) the stream admits: P (one flit) or [T_packed, P] (two flits)."""
    one = f'm("{raw(s.packet)}")'
    if s.time.size % 2:
        return one
    t_packed = split_normalized(s.time, 2)[1]
    return f'{one} (one flit) or m("{text_of(pair_all([t_packed, s.packet]))}") (two flits)'


def _time_fix(out_time: Mapping, t_outer: Mapping) -> str:
    """out_time = [stream time, broadcast factors]: the user's other factors moved inside."""
    stream = mops.frag(t_outer)
    extra = [f for f in out_time.factors()
             if not any(mops.relation(a, b) != "disjoint" for a in mops.factor_frags(f) for b in stream)]
    ragged = any(isinstance(f, RaggedFactor) for f in extra)
    fixed = None if ragged else pair_all([t_outer, *(factor_mapping(f) for f in extra)])
    if fixed is not None and fixed.size == out_time.size:
        return f'use m("{text_of(fixed)}"): the stream time first, broadcast factors innermost'
    return f'begin out_time with the stream time `{text_of(t_outer)}`; broadcast factors go innermost'


def _operand_rules(s, w, out_packet: Mapping, rule: CurrentRule) -> Violation | None:
    """OUTER-1..3: the Multiplier pair, the TRF lane count, the packet size."""
    d, dw = s.dtype, w.dtype
    rule.code = "OUTER-1"
    if (d, dw) not in CONTRACTION_PAIRS:
        legal = sorted(str(b) for a, b in CONTRACTION_PAIRS if a == d and b in TRF_STORAGE)
        return Violation(
            "OUTER-1", f"{a_an(d)} stream cannot be contracted with {dw} weights",
            label=f"stream {d} x TRF {dw} is not a Multiplier pair",
            notes=("Multiplier pairs: {i4, i5} x {i4, i5} and {i8, i9} x {i8, i9} accumulate in i32; "
                   "bf16 x bf16, f8e4m3 x f8e4m3, f8e5m2 x f8e5m2 accumulate in f32",),
            help=f"store the TRF operand as {' or '.join(legal)} for {a_an(d)} stream" if legal else None)
    rule.code = "OUTER-2"
    if w.lane.size not in LANES:
        return Violation("OUTER-2", f"the TRF operand has {w.lane.size} lanes; a contraction uses 1, 2, 4 or 8",
                         label=f"TRF lane `{raw(w.lane)}` has size {w.lane.size}",
                         notes=("docs/machine/index.md predicate TRF-LANE",))
    rule.code = "OUTER-3"
    bits = out_packet.size * d.bits
    if bits % 8 or bits // 8 not in OUTER_PACKET_BYTES:
        return Violation("OUTER-3", "a contract_outer packet is 32 or 64 bytes (one or two flits)",
                         label=f"out_packet `{raw(out_packet)}` is {bytes_text(out_packet.size, d)}",
                         notes=("docs/machine/index.md predicate PKT-OUTER",
                                f"sizes are counted in the stream type {d}, not the accumulator"),
                         help=f"use {_packet_fix(s)}")
    return None


def _adapter_rules(s, out_time: Mapping, out_packet: Mapping, rule: CurrentRule) -> Violation | None:
    """OUTER-4..7: the stream adapter (the flit, the packed time half, the tiling, the time order)."""
    d = s.dtype
    pack = out_packet.size * d.bits // 256
    rule.code = "OUTER-4"
    op_packed, op_flit = split_to_factors(out_packet, d.flit_elems)
    if op_flit != s.packet.factors():
        return Violation("OUTER-4", "the inner flit of out_packet must be the stream's packet",
                         label=f"inner flit `{text_of(split_normalized(out_packet, d.flit_elems)[1])}` of out_packet is "
                               f"not the stream packet `{raw(s.packet)}`",
                         help=f"use {_packet_fix(s)}")
    rule.code = "OUTER-5"
    if s.time.size % pack:
        return Violation("OUTER-5", "a two-flit packet needs an even number of stream time steps",
                         label=f"out_packet is {pack} flits but the stream time `{raw(s.time)}` has "
                               f"{s.time.size} steps",
                         help=f'use m("{raw(s.packet)}") (one flit)')
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
                         label=f"out_time `{raw(out_time)}` has {out_time.size} steps; the stream delivers "
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
    return None


def _trf_rules(s, w, out_time: Mapping, out_packet: Mapping, rule: CurrentRule) -> Violation | None:
    """OUTER-8..11: the TRF sequencer (read size R, walk over out_time)."""
    trf_frags = [("lane", fr) for fr in mops.frag(w.lane)] + [("element", fr) for fr in mops.frag(w.element)]
    rule.code = "OUTER-8"
    r = trf_read_size(w.element, out_packet, w.dtype)
    e_outer = split_to_factors(w.element, r)[0]
    found = _replication_rule(w, out_time, out_packet, r, trf_frags)
    if found is not None:
        return found
    rule.code = "OUTER-9"
    got = divide_rows(out_time, e_outer)
    return (_row_walk_rule(w, out_time, out_packet, r, e_outer, got, trf_frags)
            or _joint_rule(s, w, out_time, out_packet, rule) or _walk_size_rule(got, rule))


def _replication_rule(w, out_time: Mapping, out_packet: Mapping, r: int, trf_frags) -> Violation | None:
    """OUTER-8: the packet outside one TRF read only replicates it."""
    op_bcast = split_to_factors(out_packet, r)[0]
    hit = _covered_factors(op_bcast, trf_frags)
    if hit is not None:
        fr, where = hit
        sizes = axis_sizes(w.lane, w.element, out_time, out_packet)
        op_bcast_m, op_read = split_normalized(out_packet, r)
        return Violation(
            "OUTER-8", "TRF data can only be replicated across the packet, not spread over it",
            label=f"`{frag_text(fr, sizes)}` of out_packet lies outside the TRF read but is held by the TRF "
                  f"{where} `{raw(getattr(w, where))}`",
            notes=(f"the TRF read size is R = {r}: the inner {r} cell(s) of out_packet (`{text_of(op_read)}`) "
                   f"are the inner cells of the TRF element `{raw(w.element)}`; the rest of out_packet, "
                   f"`{text_of(op_bcast_m)}`, may only hold fragments the TRF lacks",),
            help="store the TRF element with out_packet's inner factors innermost, or walk "
                 f"`{frag_text(fr, sizes)}` in out_time instead of the packet")
    return None


def _row_walk_rule(w, out_time: Mapping, out_packet: Mapping, r: int, e_outer, got, trf_frags) -> Violation | None:
    """OUTER-9: out_time walks every TRF row, and its other factors are TRF broadcasts."""
    if got is None:
        sizes = axis_sizes(w.lane, w.element, out_time, out_packet)
        live = [f for f in e_outer if not isinstance(f, PaddingFactor)]  # padding rows may go unwalked
        missing = [f for f in live if mops.divide(out_time, (f,)) is None] or live or list(e_outer)
        rows = text_of(split_normalized(w.element, r)[0])
        return Violation(
            "OUTER-9", "out_time must walk every TRF row: each factor of the TRF element outside one read "
                       "must be a factor of out_time",
            label=f"out_time `{raw(out_time)}` does not walk `{list_text(missing, sizes)}` of the TRF rows "
                  f"`{rows}`",
            notes=(f"TRF element `{raw(w.element)}`, read size R = {r}: rows E_outer = `{rows}`",),
            help=f"add `{list_text(missing, sizes)}` to out_time (after the stream's time, as broadcast factors "
                 "for the stream)")
    for lp in got.loops:
        hit = None if lp.kept else _covered_factors((lp.factor,), trf_frags)
        if hit is not None:
            fr, where = hit
            sizes = axis_sizes(w.lane, w.element, out_time, out_packet)
            return Violation(
                "OUTER-9", "a time factor that is not a TRF row must be a pure broadcast for the TRF",
                label=f"`{frag_text(fr, sizes)}` of out_time is held by the TRF {where} "
                      f"`{raw(getattr(w, where))}` but is not one of the rows `{text_of(split_normalized(w.element, r)[0])}`",
                help="walk the TRF only along its rows E_outer; lane fragments never appear in time")
    return None


def _joint_rule(s, w, out_time: Mapping, out_packet: Mapping, rule: CurrentRule) -> Violation | None:
    """OUTER-10: the joint mapping places each digit once."""
    rule.code = "OUTER-10"
    twice = mops.places_digit_twice(s.chip, s.cluster, s.slice, w.lane, out_time, out_packet)
    if twice is not None:
        sizes = axis_sizes(s.chip, s.cluster, s.slice, w.lane, out_time, out_packet)
        named = (("Chip", s.chip), ("Cluster", s.cluster), ("Slice", s.slice), ("Lane", w.lane),
                 ("out_time", out_time), ("out_packet", out_packet))
        names = [(holding(fr, named) or ["?"])[0] for fr in twice]
        a, b = twice
        own = b if names[1] in ("out_time", "out_packet") or names[0] not in ("out_time", "out_packet") else a
        where = names[1] if own is b else names[0]
        return Violation(
            "OUTER-10", "the contraction's joint mapping places a digit of an axis twice",
            label=f"`{frag_text(a, sizes)}` ({names[0]}) and `{frag_text(b, sizes)}` ({names[1]}) overlap",
            notes=("the joint mapping is [Chip, Cluster, Slice, Lane, out_time, out_packet]",),
            help=f"drop `{frag_text(own, sizes)}` from {where}: each digit of an axis has one place")
    return None


def _walk_size_rule(got, rule: CurrentRule) -> Violation | None:
    """OUTER-11: the coalesced TRF read walk fits the sequencer."""
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

