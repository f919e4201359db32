"""The commands of a DmaOp, as its two types fix them (docs/reference/diagnostics.md, docs/ci.md
1.2 "DMA commands"): what the lowering of `to_dm` / `to_hbm` (`lower_dma`) and of every
DMA-like step writes, and what the VISA verifier compares a parsed record with.

One command per live `(chip, cluster)` of the DM side (the destination of HBM -> DM and
DM -> DM, the source of DM -> HBM; for HBM -> HBM one per chip of the destination), with
`dmn = 0`. The entries are the factors of the DM side's `[Slice, Element]` factor form
(matched against the other side by `sequence`, the matcher DMA-4 uses) without `PaddingFactor`
factors, in bytes: a slice step is `DM_SLICE_BYTES`. The innermost entry is the packet,
the burst of docs/machine/dma.md (`ir.rules.dma.dma_burst`), or its largest divisor within
`DMA_MAX_PACKET`. Entries coalesce, size-1 entries drop, and a command is split only as
DMAOP-2 and DMAOP-3 require. DM-side bases are relative to the tensor's allocation, which
the allocation pass adds.

A DM -> HBM copy whose destination has live digits the DM source lacks replicates them
(docs/machine/dma.md: destination axes the source does not have are broadcast): each such live
factor of the destination's element factor form (the HBM destination matched against the
source by `sequence`, at source stride 0) adds an entry of source stride 0 and its
destination byte stride, outermost, in the destination's factor order (`broadcast_loops`).
HBM -> HBM copies get these entries from the match itself.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ir.errors import InternalError
from ir.mapping.cells import Padding
from ir.mapping.factors import BroadcastFactor, PaddingFactor
from ir.mapping.ops import strides
from ir.mapping.sequence import sequence
from ir.rules.dma import dma_burst, dma_kind
from ir.rules.dma_tail import interior_padding, live_steps, merged_padding, padded_tail, tail_piece
from ir.types import DmType
from tu_ops.base import Alloc, Ref
from tu_ops.dma import DmaCommand, DmaEntry, DmaOp
from tu_ops.enums import DmaKind
from ir.memo import memo

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["dma_record", "lower_dma", "hbm_bytes", "dm_bytes", "broadcast_loops", "whole_run_cells"]

Loop = tuple[int, int, int]  # (size, DM-side stride in bits, other-side joint cell stride)


def hbm_bytes(t: Any, bits: int) -> int:
    """Bytes of an HBM tensor (its joint mapping)."""
    return -(-t.chip.size * t.element.size * bits // 8)


def dm_bytes(t: DmType, bits: int) -> int:
    """Bytes of a DM tensor in every slice: bytes(Element, D)."""
    return -(-t.element.size * bits // 8)


def _exact(nbits: int, what: str) -> int:
    if nbits % 8:
        raise InternalError(f"DMA {what} of {nbits} bits is not whole bytes")
    return nbits // 8


class _Other:
    """The side the DM side is matched against: converts its joint cell strides to bytes."""

    def __init__(self, t: Any, bits: int, dm_slice: int) -> None:
        self.t, self.bits, self.dm_slice = t, bits, dm_slice
        self.is_dm = isinstance(t, DmType)
        self.elems = t.element.size
        self.slices = t.slice.size if self.is_dm else 1

    def base(self, cells: int) -> int:
        """Byte address of joint cell `cells` (relative to the tensor)."""
        if not self.is_dm:
            return _exact(cells * self.bits, "address")
        slice_index = cells // self.elems % self.slices
        return slice_index * self.dm_slice + _exact(cells % self.elems * self.bits, "address")

    def loops(self, n: int, s: int) -> list[tuple[int, int, int]]:
        """A loop of `n` steps `s` joint cells apart as (size, factor k, byte stride) pieces,
        outer first: the loop splits where a DM source's element ends and its slices begin."""
        if s == 0 or not self.is_dm:
            return [(n, 1, _exact(s * self.bits, "stride"))]
        e = self.elems
        if s % e == 0 and (n - 1) * (s // e) < self.slices:
            return [(n, 1, s // e * self.dm_slice)]
        if (n - 1) * s < e:
            return [(n, 1, _exact(s * self.bits, "stride"))]
        if e % s == 0 and n % (e // s) == 0:
            k = e // s
            outer = self.loops(n // k, e)
            return [(m, f * k, b) for m, f, b in outer] + [(k, 1, _exact(s * self.bits, "stride"))]
        raise InternalError(f"a DMA loop of {n} x {s} cells crosses the slices of its DM source unevenly")


def _copy_bytes(hbm_t: Any, bits: int) -> int:
    """The bytes between two chips' copies of an HBM destination whose Chip is a pure
    broadcast (`m("4")`: every chip holds its own copy, rule 11, and chip c writes copy c);
    0 for any other Chip (an axis Chip already counts each chip's copy in its cells)."""
    factors = hbm_t.chip.factors()
    if hbm_t.chip.size > 1 and factors and all(isinstance(f, BroadcastFactor) for f in factors):
        return _exact(hbm_t.element.size * bits, "address")
    return 0


def _partitions(mapping: Any, pieces: tuple, entries: tuple) -> list[tuple[int, int]]:
    """(position, other-side joint cell offset) of every live position of one spatial level."""
    sizes = [p.extent for p in pieces]
    out = []
    for p in range(mapping.size):
        if isinstance(mapping.cell(p), Padding):
            continue
        offset, rest = 0, p
        for size, e in zip(reversed(sizes), reversed(entries)):
            offset += rest % size * e.stride
            rest //= size
        out.append((p, offset))
    return out


def _live_steps(piece: Any) -> int:
    """Steps of a DM-side piece that hold data: a ragged piece (`X # p`) transfers its live
    run only, since padding is not transferred."""
    if interior_padding(piece):  # DMA-4 refuses it first (ir/rules/dma_rows.runs_with_padding)
        raise InternalError(f"a ragged DM piece {piece} with interior padding has no DMA loop")
    return live_steps(piece)


def _dm_loops(found: Any, level: int, unit_bits: int, tail: Any = None) -> list[Loop]:
    """DM-side loops of one stream level (PaddingFactor pieces left out), outer to inner: size, own
    stride in bits (`unit_bits` per step of the level), other-side joint cell stride. `tail(piece,
    other stride, live steps, cells inside)` may widen the tail's ragged or pure padding piece to
    its padded extent (`dma_tail.tail_piece`: the innermost one, or one with only whole digits
    inside); a widened padding piece is a loop of its own."""
    pieces, entries = found.pieces[level], found.levels[level]
    if tail is not None:  # a padded row that factors reads as one ragged piece, which may widen
        pieces, entries = merged_padding(pieces, entries)
    live = any(not isinstance(piece, PaddingFactor) for piece in pieces)
    widened = tail_piece(pieces, [e.stride for e in entries]) if tail is not None and live else None
    out = []
    unmerged = len(pieces) == len(found.pieces[level])  # a merge shifts the pieces after it
    whole = {i for lvl, i in found.whole if lvl == level and unmerged and interior_padding(pieces[i])}
    for k, (piece, entry, stride) in enumerate(zip(pieces, entries, strides(pieces))):
        if k in whole:  # the other side holds it alike: padding onto padding
            n = piece.extent
        else:
            n = _live_steps(piece)
            if widened is not None and k == widened[0]:
                n = tail(piece, entry.stride, n, widened[1])
        if n > 1 or not isinstance(piece, PaddingFactor):  # a pure padding piece moves only when widened
            out.append((n, stride * unit_bits, entry.stride))
    return out


def whole_run_cells(src_t: Any, dst_t: Any) -> tuple[int, ...] | None:
    """Per spatial-and-element level of the DM side (Slice and Element; an HBM destination's
    Element), the cells the commands move when a run with padding inside moves whole (the
    other side holds it alike, `SequenceResult.whole`), padding onto padding; None when none
    does. The VISA verifier counts a DMA's bytes with it (visa/verify_dma.py)."""
    own_dm = isinstance(dst_t, DmType) or not isinstance(src_t, DmType)
    own, other_t = (dst_t, src_t) if own_dm else (src_t, dst_t)
    found = sequence(list(other_t.levels()), list(own.levels()))
    if not found or not any(interior_padding(found.pieces[lvl][i]) for lvl, i in found.whole):
        return None
    levels = (2, 3) if isinstance(own, DmType) else (1,)
    return tuple(math.prod(p.extent if (lvl, i) in found.whole and interior_padding(p) else live_steps(p)
                           for i, p in enumerate(found.pieces[lvl])) for lvl in levels)


def broadcast_loops(src_t: Any, dst_t: Any) -> list[tuple[int, int]]:
    """(live steps, destination joint cell stride) of every live factor of a DM -> HBM
    destination's element level whose digits the DM source lacks, in the destination's
    factor order (outer first); empty for other DMA directions."""
    if not isinstance(src_t, DmType) or isinstance(dst_t, DmType):
        return []
    found = sequence(list(src_t.levels()), list(dst_t.levels()))
    if not found:
        return []
    level = len(found.pieces) - 1  # the HBM destination's element level
    pieces, entries = found.pieces[level], found.levels[level]
    out = []
    for piece, entry, stride in zip(pieces, entries, strides(pieces)):
        if isinstance(piece, PaddingFactor) or entry.stride != 0:
            continue
        n = _live_steps(piece)
        if n > 1:
            out.append((n, stride))
    return out


def _packet(elem: list[Loop], burst: int, cell_bits: int) -> tuple[int, list[Loop]]:
    """Peel the packet (at most `burst` cells, contiguous on both sides) off the innermost
    element loops; returns (packet cells, the loops left outside it)."""
    cur, need = 1, burst
    loops = list(elem)
    while loops and need > 1:
        n, own, other = loops[-1]
        if cur * cell_bits != own or other != cur:
            break
        if need % n == 0:
            loops.pop()
            cur, need = cur * n, need // n
            continue
        k = math.gcd(n, need)
        if k > 1:
            loops[-1] = (n // k, own * k, other * k)
            cur *= k
        break
    return cur, loops


def _largest_divisor(n: int, limit: int, step: int) -> int:
    best = 1
    for d in range(1, math.isqrt(n) + 1):
        if n % d:
            continue
        for c in (d, n // d):
            if c <= limit and c % step == 0 and c > best:
                best = c
    return best


def _coalesce(entries: list[DmaEntry]) -> list[DmaEntry]:
    """Drop size-1 entries; merge neighbours contiguous on both sides (visa/visa.lark)."""
    out: list[DmaEntry] = []
    for e in entries:
        if e.size == 1:
            continue
        last = out[-1] if out else None
        if last is not None and last.src_stride == e.size * e.src_stride and last.dst_stride == e.size * e.dst_stride:
            out[-1] = DmaEntry(last.size * e.size, e.src_stride, e.dst_stride)
            continue
        out.append(e)
    return out


def _limit_sizes(entries: list[DmaEntry], max_iter: int) -> list[DmaEntry]:
    """DMAOP-2: split entries larger than SEQ_MAX_ITER into nested loops."""
    out: list[DmaEntry] = []
    for e in entries:
        stack = [e]
        while stack:
            x = stack.pop(0)
            if x.size <= max_iter:
                out.append(x)
                continue
            k = _largest_divisor(x.size, max_iter, 1)
            if k == 1:
                raise InternalError(f"a DMA loop of {x.size} steps cannot be split under {max_iter}")
            outer = DmaEntry(x.size // k, x.src_stride * k, x.dst_stride * k)
            stack = [outer, DmaEntry(k, x.src_stride, x.dst_stride)] + stack
    return out


def dma_record(result: Ref, src: Ref, src_t: Any, dst_t: Any, target: Target, loc: Any = None) -> DmaOp:
    """The DmaOp copying `src_t` into `dst_t`, its DM-side bases relative to allocation 0."""
    body = _dma_body(src_t, dst_t, target)
    if isinstance(body, str):
        raise ValueError(f"the DMA is not placeable ({body})")
    kind, commands, src_alloc, dst_alloc = body
    return DmaOp(result=result, src=src, kind=kind, element_type=src_t.dtype, commands=commands, input_type=src_t,
                 output_type=dst_t, src_alloc=src_alloc, dst_alloc=dst_alloc, loc=loc)


def lower_dma(op: Any, result: int, src: int, src_t: Any, dst_t: Any, target: Target, record: Any = dma_record) -> Any:
    """The `record` (`dma_record`, or a record of its signature) of traced `op` copying `src_t`
    into `dst_t`, numbered `%result`: types it has no record for are an internal error at `op`."""
    try:
        return record(Ref(result), Ref(src), src_t, dst_t, target, op.loc)
    except ValueError as e:
        raise InternalError(f"{op.text()}: {e}") from None


@memo(512)
def _dma_body(src_t: Any, dst_t: Any, target: Target) -> tuple | str:
    """(kind, commands, source alloc, destination alloc) of a DMA between the two types on
    `target`, or the reason it is not placeable. A function of its three arguments alone
    (every one immutable and compared by value, mappings with their axis sizes), so the
    identical DMAs of a tile loop are computed once; the records hold no value ids."""
    c = target.constants
    kind = DmaKind[dma_kind(src_t, dst_t)]
    bits = target.bits_of(src_t.dtype) or src_t.dtype.bits
    dm_is_dst = isinstance(dst_t, DmType) or not isinstance(src_t, DmType)
    own, other_t = (dst_t, src_t) if dm_is_dst else (src_t, dst_t)
    own_dm = isinstance(own, DmType)
    levels = list(own.levels())
    found = sequence(list(other_t.levels()), levels)
    if not found:
        return found.reason
    other = _Other(other_t, bits, c.DM_SLICE_BYTES)
    spatial = 3 if own_dm else 1  # chip, cluster, slice (DM) / chip (HBM)
    slice_loops = _dm_loops(found, 2, 8 * c.DM_SLICE_BYTES) if own_dm else []
    tail = (lambda piece, stride, live, inner: padded_tail(piece, stride, live, other_t, bits, c.DMA_DM_ALIGN,
                                                           inner)) if kind.into_dm else None
    elem = _dm_loops(found, spatial, bits, tail)
    packet_cells, elem = _packet(elem, dma_burst(src_t, dst_t), bits)
    packet_bytes = _exact(packet_cells * bits, "packet")
    inner: list[DmaEntry] = []
    if packet_bytes > c.DMA_MAX_PACKET:
        step = c.DMA_DM_ALIGN if kind.into_dm else 1
        cell = max(1, bits // 8)
        p = _largest_divisor(packet_bytes, c.DMA_MAX_PACKET, math.lcm(step, cell))
        inner.append(DmaEntry(packet_bytes // p, p, p))
        packet_bytes = p
    outer = []
    if not dm_is_dst:  # DM -> HBM: replicate along the destination digits the source lacks
        for n, dst_cells in broadcast_loops(src_t, dst_t):
            outer.append(DmaEntry(n, 0, _exact(dst_cells * bits, "stride")))
    for n, own_bits, other_cells in slice_loops + elem:
        for m, k, other_b in other.loops(n, other_cells):
            own_b = _exact(own_bits * k, "stride")
            a, b = (other_b, own_b) if dm_is_dst else (own_b, other_b)
            outer.append(DmaEntry(m, a, b))
    entries = _limit_sizes(_coalesce(outer + inner), c.SEQ_MAX_ITER)
    packet = [DmaEntry(packet_bytes, 1, 1)] if packet_bytes > 1 else []
    commands = []
    chips = _partitions(own.chip, found.pieces[0], found.levels[0])
    clusters = _partitions(own.cluster, found.pieces[1], found.levels[1]) if own_dm else [(0, 0)]
    own_chip_bytes = 0 if own_dm else _exact(own.element.size * bits, "address")  # an HBM side counts chips
    copy_bytes = _copy_bytes(other_t, bits) if not dm_is_dst else 0
    for chip, chip_off in chips:
        for cluster, cluster_off in clusters:
            base = other.base(chip_off + cluster_off) + chip * copy_bytes
            commands += _split(chip, cluster, base, entries, packet, packet_bytes, dm_is_dst, c.SEQ_MAX_ENTRIES,
                               chip * own_chip_bytes)
    src_alloc = None if isinstance(src_t, DmType) else Alloc(0, hbm_bytes(src_t, bits))
    dst_alloc = None if isinstance(dst_t, DmType) else Alloc(0, hbm_bytes(dst_t, bits))
    return kind, tuple(commands), src_alloc, dst_alloc


def _split(chip: int, cluster: int, other_base: int, entries: list[DmaEntry], packet: list[DmaEntry],
           packet_bytes: int, dm_is_dst: bool, max_entries: int, own_base: int = 0) -> list[DmaCommand]:
    """DMAOP-2: commands of at most `max_entries` entries, peeling outer loops into commands.
    `own_base` is the DM side's (or HBM destination's) first address: its chip's copy in HBM."""
    bases = [(0, own_base) if dm_is_dst else (own_base, 0)]  # (src, dst) offsets of the first cells
    while len(entries) + len(packet) > max_entries:
        e, entries = entries[0], entries[1:]
        bases = [(s + i * e.src_stride, d + i * e.dst_stride) for s, d in bases for i in range(e.size)]
    out = []
    for s, d in bases:
        src_base, dst_base = (other_base + s, d) if dm_is_dst else (s, other_base + d)
        out.append(DmaCommand(part=(chip, cluster, 0), src_base=src_base, dst_base=dst_base,
                              packet_bytes=packet_bytes, entries=tuple(entries + packet)))
    return out
