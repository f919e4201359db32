"""Tensor DMA rules DMA-1..6 (docs/machine/dma.md), and the DMA kind and burst the lowering uses.

A DMA is a global move: `sequence(memory = source, stream = destination)` over the joint
mappings (`[Chip, Element]` or `[Chip, Cluster, Slice, Element]`) gives one paired entry per
piece of the destination; the *burst* (docs/machine/dma.md) is the run of destination element
cells one contiguous source read can fill, and into DM it must be a multiple of 8 bytes.
"""

from __future__ import annotations

import functools
import math

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.errors import MappingError
from ir.mapping.factors import BroadcastFactor
from ir.mapping.nodes import Mapping, axis_sizes
from ir.mapping.ops import frag, places_digit_twice, relation, strides
from ir.mapping.ranges import inside_to_end
from ir.mapping.sequence import SequenceFailure, burst, sequence
from ir.rules.commit_text import m_text
from ir.rules.dma_rows import DMA_DM_ALIGN, joint, padding_moves, runs_with_padding
from ir.rules.dma_tail import check_padded_tail, interior_padding, live_run, tail_piece
from ir.rules.dma_text import factor_text, frag_text
from ir.rules.space import validate_type
from ir.types import DmType, HbmType

__all__ = ["check_dma", "check_move", "check_tensor_dma", "check_dma_for", "dma_kind", "dma_burst", "frag_text",
           "factor_text", "DMA_DM_ALIGN"]


def dma_kind(src_type: HbmType | DmType, dst_type: HbmType | DmType) -> str:
    """`HBM_TO_DM`, `DM_TO_HBM`, `DM_TO_DM` or `HBM_TO_HBM`."""
    a = "DM" if isinstance(src_type, DmType) else "HBM"
    b = "DM" if isinstance(dst_type, DmType) else "HBM"
    return f"{a}_TO_{b}"


def dma_burst(src_type: HbmType | DmType, dst_type: HbmType | DmType) -> int:
    """The burst of docs/machine/dma.md, in destination element cells."""
    return _burst(src_type.element, dst_type.element)


@functools.lru_cache(maxsize=1024)
def _burst(source: Mapping, dest: Mapping) -> int:
    return burst(source, dest)


def _aligned(cells: int, dtype: DType, unit: int = DMA_DM_ALIGN) -> bool:
    """Whether `cells` of `dtype` are a whole number of `unit`-byte words (1: whole bytes)."""
    return cells * dtype.bits % (8 * unit) == 0


# --- the rules ---------------------------------------------------------------------------


def check_tensor_dma(op) -> Violation | None:
    """DMA-1..6 of a `to_dm` / `to_hbm`, lowered by tu_ops/dma_commands.py: as `check_dma`, and a
    run with padding between live cells is DMA-4, a padded row the source pads alike moves
    whole (ir/rules/dma_rows.py)."""
    return check_dma(op, whole_rows=True)


def check_dma(op, whole_rows: bool = False) -> Violation | None:
    """DMA-1..6 for a ToDm / ToHbm op (`check_move` of its types), then the replicated axis of
    an inferred `to_dm`."""
    src, dst = op.src.type, op.result.type
    found = check_move(src, dst, whole_rows)
    return found or (_replicated_axis(src, dst) if getattr(op, "inferred", False) else None)


def check_move(src: HbmType | DmType, dst: HbmType | DmType, whole_rows: bool = False) -> Violation | None:
    """DMA-1..6 of a move from `src` to `dst` (a `to_dm` / `to_hbm`, or a DMA another op
    makes), first failure wins."""
    rules = [("DMA-1", _dma1), ("DMA-2", _dma2), ("DMA-3", _dma3), ("DMA-4", _dma4)]
    if whole_rows:
        rules.append(("DMA-4", runs_with_padding))
    if isinstance(dst, DmType):  # writes into HBM have no alignment rule (docs/machine/dma.md)
        rules += [("DMA-5", functools.partial(_dma5, whole_rows=whole_rows)), ("DMA-6", _dma6)]
    elif dst.dtype.bits < 8:  # ... but a DMA moves whole bytes, so 4-bit bursts must pair up
        rules += [("DMA-5", _dma5_whole_bytes)]
    for code, rule in rules:
        try:
            found = rule(src, dst)
        except MappingError as e:  # a level mapping without a factor form (overshooting cells)
            return Violation(code, f"the DMA is not well defined: {e.detail}",
                             notes=(f"source {src}", f"destination {dst}"),
                             help="write every level with digit ranges that stay inside their axes")
        if found is not None:
            return found
    return None


def check_dma_for(code: str, message: str, src: HbmType | DmType, dst: HbmType | DmType,
                  what: str) -> Violation | None:
    """DMA-1..6 of the move from `src` to `dst` another op makes (a gather's rows, a scatter's,
    an SPM copy), reported under that op's `code`: `message`, then the DMA rule's own message,
    and a note naming the DMA rule as one of `what`."""
    moved = check_move(src, dst)
    if moved is None:
        return None
    return Violation(code, f"{message}: {moved.message}", label=moved.label,
                     notes=(f"as {moved.code} of {what}",) + moved.notes, help=moved.help)


def _dma1(src, dst) -> Violation | None:
    if src.dtype == dst.dtype:
        return None
    return Violation("DMA-1", f"a DMA cannot change the dtype ({src.dtype} -> {dst.dtype})",
                     label=f"the source is {src.dtype}, the destination {dst.dtype}",
                     help="keep the dtype in the DMA and convert in the Tensor Unit (fetch_cast / cast) instead")


def _dma2(src, dst) -> Violation | None:
    if dst.chip.equivalent(src.chip) or isinstance(src, DmType) and isinstance(dst, DmType):
        return None  # DM -> DM may move data across chips (a relayout, docs/machine/topology.md)
    return Violation("DMA-2", "a DMA cannot change the Chip mapping",
                     label=f"the source Chip is {m_text(src.chip)} ({src.chip.size} chip(s)), the destination's "
                           f"{m_text(dst.chip)} ({dst.chip.size})",
                     help=f"use the source's Chip mapping {m_text(src.chip)} in the destination type")


def _dma3(src, dst) -> Violation | None:
    if not isinstance(dst, DmType):
        return None
    found = validate_type(dst, None, code="DMA-3")
    if found is not None:
        return attrs.evolve(found, label=found.label or f"in the destination {dst}")
    return None  # DM -> DM may change Chip, Cluster and Slice (a relayout, docs/machine/topology.md)


def _dma4(src, dst) -> Violation | None:
    sizes = axis_sizes(*src.levels(), *dst.levels())
    twice = places_digit_twice(*dst.levels())  # first: such a joint mapping has no factor form
    if twice is not None:
        a, b = twice
        return Violation("DMA-4", "the destination places a digit of an axis twice",
                         label=f"`{frag_text(a, sizes.get(a.axis))}` and `{frag_text(b, sizes.get(b.axis))}` "
                               f"overlap in the destination's joint mapping",
                         notes=(f"destination {dst}",),
                         help="each digit range of an axis may occur once across Chip, Cluster, Slice "
                              "and Element")
    found = sequence(joint(src), joint(dst))
    if isinstance(found, SequenceFailure):
        return Violation("DMA-4", "the destination layout cannot be filled from the source",
                         label=found.reason,
                         notes=(f"source {src}", f"destination {dst}"),
                         help="every destination digit range of a source axis must be a digit range of the "
                              "source's decomposition (split axes at the same boundaries)")
    dst_frags = frag(joint(dst))
    for fr in sorted(frag(joint(src))):
        if any(relation(fr, d) in ("equal", "inside") or inside_to_end(fr, d, sizes.get(fr.axis)) for d in dst_frags):
            continue
        if _covered(fr, dst_frags):
            parts = ", ".join(f"`{frag_text(d, sizes.get(d.axis))}`" for d in sorted(dst_frags) if d.axis == fr.axis)
            return Violation("DMA-4", "the destination splits an axis of the source at digits the source does not "
                                      "have (through its padding)",
                             label=f"`{frag_text(fr, sizes.get(fr.axis))}` of the source stands as {parts} in "
                                   "the destination, cut at digits inside its padding",
                             notes=(f"source {src}", f"destination {dst}"),
                             help="keep the axis in one level of the destination, or split it at the source's "
                                  "own digits (known difference kd-padded-dma)")
        return Violation("DMA-4", "a DMA never drops data, but the destination lacks part of the source",
                         label=f"`{frag_text(fr, sizes.get(fr.axis))}` of the source occurs nowhere in "
                               f"the destination",
                         notes=(f"source {src}", f"destination {dst}"),
                         help="place every source digit range somewhere in the destination "
                              "(moving part of a tensor needs a tile view, later scope)")
    return None


def _covered(fr, frags) -> bool:
    """Whether digit ranges of `fr`'s axis among `frags` chain from its low digit to past its
    high one (the axis is all there, only cut elsewhere: `R # 32 / 8` and `R # 32 % 8` of R13)."""
    at = fr.lo
    for d in sorted((d for d in frags if d.axis == fr.axis), key=lambda d: d.lo):
        if d.lo <= at < d.hi:
            at = d.hi
    return at >= fr.hi


def _replicated_axis(src, dst) -> Violation | None:
    """DMA-4 of a `to_hbm` whose layout the kernel's return annotation gave: an axis the
    source lacks would be filled with copies nobody asked for (a digit summed away, then
    returned in a layout that has it). Written out in `to_hbm`, the copies are asked for.
    Legal when the source already holds that many copies of each value (a broadcast Slice or
    Element, as a `memset` tensor has): the returned axes then name them, as the reference's
    DM -> HBM copy does (its `to_hbm` fills the axes the source lacks)."""
    held = {fr.axis for fr in frag(joint(src))}
    extra = sorted({d.axis for d in frag(joint(dst))} - held)
    if not extra:
        return None
    sizes = axis_sizes(*dst.levels())
    if _held_copies(src) >= math.prod(sizes.get(a, 1) for a in extra):
        return None   # the returned axes name copies the source holds (a broadcast Slice / Element: memset)
    axis = extra[0]
    return Violation("DMA-4", "the returned layout has an axis the tensor lacks: the DMA would replicate it",
                     label=f"the return annotation's layout has `{axis}`, which the source does not hold: "
                           f"every `{axis}` position would receive the same copy",
                     notes=(f"source {src}", f"destination {dst}"),
                     help=f"if a contraction summed `{axis}` away (contract_packet / contract_time), keep "
                          f"it there; to repeat the data on purpose, say so: "
                          f"`.to_hbm(ctx.tdma, HbmTensor[...])` with the layout written out")


def _held_copies(src) -> int:
    """How many copies of each value a DM source holds within a chip: the product of the
    broadcast factors of its Cluster, Slice and Element (1 for an HBM source)."""
    if not isinstance(src, DmType):
        return 1
    return math.prod(f.extent for level in (src.cluster, src.slice, src.element) for f in level.factors()
                     if isinstance(f, BroadcastFactor))


def _dma5(src, dst, whole_rows: bool = False) -> Violation | None:
    b = dma_burst(src, dst)
    live = live_run(dst, b)
    if _aligned(b, dst.dtype) and _aligned(live, dst.dtype):
        found = sequence(joint(src), joint(dst))
        if not found or not found.pieces[0]:
            return None
        tail = tail_piece(found.pieces[0], [e.stride for e in found.levels[0]])
        if tail is not None and (0, tail[0]) in found.whole and interior_padding(found.pieces[0][tail[0]]):
            return None  # the source holds that run alike: it moves whole, padding onto padding
        return check_padded_tail(found.pieces[0], [e.stride for e in found.levels[0]], src, dst, DMA_DM_ALIGN)
    if whole_rows and _aligned(b, dst.dtype) and padding_moves(src, dst):
        return None
    if _aligned(b, dst.dtype):
        shown = f"{live * dst.dtype.bits / 8:g}"
        return Violation(
            "DMA-5", f"a DMA into DM writes bursts of a multiple of {DMA_DM_ALIGN} bytes; padding is not "
                     f"transferred, so this burst moves {live} cell(s) = {shown} byte(s)",
            label=f"the burst of {b} cells ends in padding; only {live} x {dst.dtype} = {shown} byte(s) move",
            help="make the live innermost part of the DM element at least 8 bytes (e.g. pad with a "
                 "live-sized axis, or keep the tensor in HBM and broadcast it in the Tensor Unit)")
    shown = f"{b * dst.dtype.bits / 8:g}"
    return Violation(
        "DMA-5", f"a DMA into DM writes bursts of a multiple of {DMA_DM_ALIGN} bytes; this burst is "
                 f"{b} cell(s) = {shown} byte(s)",
        label=f"burst is {b} x {dst.dtype} = {shown} byte(s)",
        notes=(f"the burst is the longest prefix of the destination element {m_text(dst.element)} that "
               f"matches the source element {m_text(src.element)} cell by cell (Top padding matches anything)",),
        help=f"keep the source's innermost axis innermost in DM (e.g. {m_text(src.element)}) and transpose in "
             f"the Tensor Unit or in the DM -> HBM transfer, which has no alignment rule")


def _dma5_whole_bytes(src, dst) -> Violation | None:
    """Into HBM there is no alignment rule, but a transfer is made of whole bytes: a burst
    of a 4-bit type must be an even number of cells, and so must every destination stride
    at or past it (design: found by the differential test, where such a kernel passed the
    trace and then could not be lowered)."""
    b = dma_burst(src, dst)
    fs = dst.element.factors()
    strides_ok = all(_aligned(st, dst.dtype, 1) for st in strides(fs) if st >= b)
    if _aligned(b, dst.dtype, 1) and strides_ok:
        return None
    shown = f"{b * dst.dtype.bits / 8:g}"
    return Violation(
        "DMA-5", f"a DMA moves whole bytes, but this {dst.dtype} transfer has a burst of {b} cell(s) = "
                 f"{shown} byte(s)",
        label=f"burst is {b} x {dst.dtype} = {shown} byte(s)",
        notes=(f"the burst is the longest prefix of the destination element {m_text(dst.element)} that "
               f"matches the source element {m_text(src.element)} cell by cell",),
        help="keep pairs of 4-bit values together: make the innermost destination digit range the "
             "source's innermost (an even number of cells), or transpose in the Tensor Unit")


def _dma6(src, dst) -> Violation | None:
    b = dma_burst(src, dst)
    fs = dst.element.factors()
    for f, s in zip(fs, strides(fs)):
        if s < b or _aligned(s, dst.dtype):
            continue
        shown = f"{s * dst.dtype.bits / 8:g}"
        return Violation(
            "DMA-6", f"a DMA into DM places every burst at a multiple of {DMA_DM_ALIGN} bytes, but a "
                     f"destination factor has a stride of {shown} bytes",
            label=f"factor `{factor_text(f)}` of {m_text(dst.element)} is {s} x {dst.dtype} = {shown} bytes apart "
                  f"(burst {b} cell(s))",
            help=f"pad the inner part of the destination element so that its rows are a multiple of "
                 f"{DMA_DM_ALIGN} bytes")
    return None
