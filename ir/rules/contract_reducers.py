"""Contraction Engine rules of the reducers (docs/machine/contraction.md): PACKET-1..4, TIME-1..4, LANE-1..6.

The Packet Reducer (`contract_packet`), the Time Reducer (`contract_time`) and the Lane
Folder (`contract_lane`). Each checker evaluates its rules in the order docs/machine/index.md lists
them and returns the first failure; a mapping operation that fails is a failure of the
rule that needed it.
"""

from __future__ import annotations

from ir.diagnostic import Violation
from ir.mapping import ops as mops
from ir.mapping.factors import AxisFactor, BroadcastFactor, Factor, PaddingFactor, RaggedFactor, factor_size
from ir.mapping.cells import Index, Padding
from ir.mapping.nodes import Mapping, PaddingKind, pair_all
from ir.rules.contract_geometry import (
    ACC_CELLS, ACC_COLS, LANE_BUS, LANES, OUTER_PACKET_BYTES, accumulator_cells, axis_sizes, lane_fold,
    lane_fold_f, packet_depth, reduced_packet, split_normalized, split_to_factors, text_of,
)
from ir.rules.contract_text import CurrentRule, bytes_text, factor_text, guarded, list_text, raw
from ir.rules.time_reduction import ordered_reduction, time_reduction
from ir.types import LaneMode

__all__ = ["check_packet", "check_time", "check_lane", "summed_packet_padding"]


# --- 9.2 contract_packet -------------------------------------------------------------------


def check_packet(op) -> Violation | None:
    """PACKET-1..4 (docs/machine/contraction.md)."""
    return guarded(lambda rule: _packet_rules(op.input.type, op.packet, rule), "PACKET-1")


def _packet_rules(t, out_packet: Mapping, rule: CurrentRule) -> Violation | None:
    p, d = t.packet, t.dtype
    bits = p.size * d.bits
    if bits % 8 or bits // 8 not in OUTER_PACKET_BYTES:
        return Violation("PACKET-1", "the Packet Reducer takes 32- or 64-byte packets",
                         label=f"input packet `{raw(p)}` is {bytes_text(p.size, d)}",
                         notes=("docs/machine/index.md predicate PKT-OUTER",))
    rule.code = "PACKET-2"
    n = out_packet.size
    if n > ACC_COLS:
        return Violation("PACKET-2", f"the reduced packet has {n} columns; the accumulator has {ACC_COLS}",
                         label=f"out_packet `{raw(out_packet)}` has size {n} > {ACC_COLS}",
                         notes=("docs/machine/index.md predicate PKT-REDUCE",),
                         help=_depth_help(p))
    rule.code = "PACKET-3"
    if n & (n - 1):
        return Violation("PACKET-3", f"the reduced packet must have a power-of-two size, not {n}",
                         label=f"out_packet `{raw(out_packet)}` has size {n}",
                         notes=("docs/machine/index.md predicate PKT-REDUCE",),
                         help=_depth_help(p))
    rule.code = "PACKET-4"
    if packet_depth(p, out_packet) is None:
        return Violation("PACKET-4", "out_packet is not what an adder tree leaves of the packet",
                         label=f"no tree depth reduces `{raw(p)}` to `{raw(out_packet)}`",
                         notes=("depth d sums adjacent groups of 2^d cells and leaves outer(split(P, 2^d)); "
                                "outermost padding may be added or left out",),
                         help=_depth_help(p))
    return None


def _unknown(cell: object) -> bool:
    """A padding cell whose contents are not known zeros (`#` or `#{!}`)."""
    return isinstance(cell, Padding) and cell.kind is not PaddingKind.ZERO


def summed_packet_padding(p: Mapping, out_packet: Mapping) -> Violation | None:
    """PACKET-5: the tree sums each group of 2^d adjacent cells; a group mixing live cells
    with padding of unknown contents puts that padding into a live sum (only `#{0}` padding
    is known to add nothing). The DSL asks this only of padding the fetch read from memory
    (`npu_opt.padding_sums`): the Collect Engine fills the padding it adds with zeros."""
    d = packet_depth(p, out_packet)
    if d is None:
        return None
    size = 2 ** d
    cells = [p.cell(i) for i in range(p.size)]
    for start in range(0, p.size, size):
        group = cells[start:start + size]
        bad = next((i for i, c in enumerate(group) if _unknown(c)), None)
        if bad is not None and any(isinstance(c, Index) for c in group):
            kind = group[bad].kind.marker
            return Violation("PACKET-5", "the adder tree would sum padding of unknown contents",
                             label=f"packet position {start + bad} of `{raw(p)}` is `{kind}` padding, summed "
                                   f"with live positions {start}..{start + size - 1}",
                             notes=("`#` padding holds whatever memory holds there (the cpu backend reads "
                                    "zeros, the chip does not); `#{0}` padding is known to be zero",),
                             help="zero the padding first with `.fetch_mask(...)` right after `fetch`, writing that "
                                  "axis's `#` as `#{0}` (docs/machine/fetch-mask.md), or pad so that no live "
                                  "sum reaches the padding")
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
    return guarded(lambda rule: _time_rules(op.input.type.time, op.time, rule), "TIME-1")


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


def _time_rules(pre: Mapping, out: Mapping, rule: CurrentRule) -> Violation | None:
    sizes = axis_sizes(pre, out)
    fp, fo = pre.factors(), out.factors()
    live_p, live_o = _run_view(fp, sizes, False), _run_view(fo, sizes, False)
    pre_list = f"the factors of the stream time are `{list_text(fp, sizes)}`"
    got = mops.divide(live_p, live_o)
    if got is None:
        bad = next((g for g in live_o if mops.divide(live_p, (g,)) is None), None)
        what = f"`{factor_text(bad, sizes)}`" if bad is not None else "its factors"
        return Violation("TIME-1", "contract_time may only keep factors of the stream's time",
                         label=f"out_time `{raw(out)}` keeps {what}, which is not a factor of the time "
                               f"`{raw(pre)}`",
                         notes=(pre_list,),
                         help="list the kept factors of the time in out_time; every other factor is summed")
    rule.code = "TIME-2"
    kept = [lp for lp in got.loops if lp.kept]
    for a, b in zip(kept, kept[1:]):
        if a.stride_n <= b.stride_n:
            return Violation("TIME-2", "contract_time must keep the time factors in the stream's order",
                             label=f"`{factor_text(a.factor, sizes)}` comes before `{factor_text(b.factor, sizes)}` "
                                   f"in the time `{raw(pre)}` but after it in out_time",
                             notes=(pre_list,),
                             help=f'use m("{list_text([lp.factor for lp in kept], sizes)}"), or reorder the '
                                  "time at fetch and collect")
    rule.code = "TIME-3"
    runs_p, runs_o = _run_view(fp, sizes, True), _run_view(fo, sizes, True)
    if ordered_reduction(runs_p, runs_o) is None:
        if mops.divide(runs_p, runs_o) is not None:
            return Violation("TIME-2", "contract_time must keep the time factors in the stream's order",
                             label=f"the broadcast or padding factors of out_time `{raw(out)}` are not in the "
                                   f"order of the time `{raw(pre)}`",
                             notes=(pre_list,))
        extra = [g for g in fo if isinstance(g, (BroadcastFactor, PaddingFactor)) and mops.divide(runs_p, (g,)) is None]
        what = f"`{list_text(extra, sizes)}`" if extra else "a broadcast or padding factor"
        return Violation("TIME-3", "out_time may not add padding or broadcast factors of its own",
                         label=f"out_time `{raw(out)}` has {what}, which the time `{raw(pre)}` does not have",
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
                             label=f"`{factor_text(own[0], sizes)}` pads a factor the time `{raw(pre)}` "
                                   "holds unpadded",
                             notes=(pre_list,),
                             help="write the kept factors as the time has them, without `#`; pad at fetch or "
                                  "collect instead")
        return Violation("TIME-4", "a kept padded time factor must keep its padded extent",
                         label=f"out_time `{raw(out)}` changes the padding of a kept factor of the time "
                               f"`{raw(pre)}`",
                         notes=(pre_list,),
                         help="keep a padded fragment whole, with the same `# p` as in the stream's time")
    return None


def _shares(a: RaggedFactor, b: RaggedFactor) -> bool:
    return any(mops.relation(x, y) != "disjoint" for x in mops.factor_frags(a) for y in mops.factor_frags(b))


# --- 9.4 contract_lane ---------------------------------------------------------------------


def check_lane(op) -> Violation | None:
    """LANE-1..6 (docs/machine/contraction.md)."""
    return guarded(lambda rule: _lane_rules(op.input.type, op.time, op.packet, op.mode, rule), "LANE-1")


def _lane_rules(t, out_time: Mapping, out_packet: Mapping, mode: LaneMode, rule: CurrentRule) -> Violation | None:
    p, lane = t.packet, t.lane
    if p.size > ACC_COLS:
        return Violation("LANE-1", f"the Lane Folder takes at most {ACC_COLS} columns",
                         label=f"the packet `{raw(p)}` has {p.size} columns")
    rule.code = "LANE-2"
    if out_packet.size != LANE_BUS:
        return Violation("LANE-2", f"contract_lane emits one flit of {LANE_BUS} 32-bit values per cycle",
                         label=f"out_packet `{raw(out_packet)}` has size {out_packet.size}, not {LANE_BUS}",
                         notes=("docs/machine/index.md predicate PKT-FLIT",))
    rule.code = "LANE-3"
    f, expected = lane_fold_f(lane, p, mode)
    if out_packet.factors() != expected:
        want = text_of(lane_fold(lane, p, mode)[1])
        return Violation("LANE-3", f"out_packet is not the {mode.name} lane packet",
                         label=f"out_packet `{raw(out_packet)}`, expected `{want}`",
                         notes=(_mode_note(mode, lane, p),),
                         help=f'use m("{want}")')
    rule.code = "LANE-4"
    f_size = factor_size(f)
    if out_time.size % f_size or split_to_factors(out_time, f_size)[1] != f:
        f_map = lane_fold(lane, p, mode)[0]
        fix = f'use m("{text_of(pair_all([t.time, f_map]))}")'
        if out_time.size % f_size:
            label = (f"out_time `{raw(out_time)}` has {out_time.size} steps, not a multiple of size(F) = {f_size} "
                     f"(F = `{text_of(f_map)}`)")
        else:
            label = f"inner part `{text_of(split_normalized(out_time, f_size)[1])}` of out_time is not F = `{text_of(f_map)}`"
        return Violation("LANE-4", "out_time must end with the folded factors F", label=label,
                         notes=(_mode_note(mode, lane, p),), help=fix)
    rule.code = "LANE-5"
    if split_to_factors(out_time, f_size)[0] != t.time.factors():
        f_map = lane_fold(lane, p, mode)[0]
        outer = split_normalized(out_time, f_size)[0]
        return Violation("LANE-5", "out_time must begin with the stream's time",
                         label=f"outer part `{text_of(outer)}` of out_time is not the "
                               f"time `{raw(t.time)}`",
                         help=_lane5_help(t, outer, f_map))
    rule.code = "LANE-6"
    return _capacity(t, mode)


def _lane5_help(t, outer: Mapping, f_map: Mapping) -> str:
    """LANE-5's fix. When out_time names an axis that contract_time summed away, the fix is at
    contract_time: the plain `use m(time, F)` alone sums that axis, and a layout that still has
    it afterwards gets copies (issue 28 item 3; the DMA now refuses that, DMA-4)."""
    plain = f'use m("{text_of(pair_all([t.time, f_map]))}")'
    if t.pre_time is None:
        return plain
    try:
        loops = time_reduction(t.pre_time, t.time).loops
    except ValueError:
        return plain
    wanted = mops.axes_of(outer) - mops.axes_of(t.time)
    summed = [lp for lp in loops if not lp.keep and isinstance(lp.factor, AxisFactor) and lp.factor.axis in wanted]
    if not summed:
        return plain
    sizes = axis_sizes(t.pre_time)
    keep = list_text([lp.factor for lp in loops if lp.keep or lp in summed], sizes)
    f_text = text_of(f_map)
    lane = keep if f_text == "1" else f"{keep}, {f_text}"
    names = ", ".join(sorted({f"`{lp.factor.axis}`" for lp in summed}))
    return (f"contract_time summed {names} away; to keep it, write `.contract_time(m(\"{keep}\"))` and use "
            f'm("{lane}") here (contract_time keeps factors in the stream\'s order: reorder at the commit or '
            f"the DMA); to sum it, {plain}")


def _mode_note(mode: LaneMode, lane: Mapping, p: Mapping) -> str:
    if mode is LaneMode.INTERLEAVED:
        return f"INTERLEAVED: F = the packet `{raw(p)}`, out_packet = pad(Lane, 8) with Lane `{raw(lane)}`"
    return (f"SEQUENTIAL: (P_hi, P_lo) = split(pad(P, 8k), 8) of the packet `{raw(p)}`; "
            f"F = [Lane, P_hi] with Lane `{raw(lane)}`, out_packet = P_lo")


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
    where = (f"IT = {it}: `{list_text(inside, sizes)}` is kept inside the summed factor "
             f"`{factor_text(red.loops[first].factor, sizes)}` of the time `{raw(t.pre_time)}`")
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
