"""The Valid Count Generator (VCG): how many leading cells of each flit are real data.

The chip tags every flit `(slice, time step t)` with a `valid_size`. It is computed by up to
three *time filters* and one *packet clipper*, each walking the time steps with a sequencer
(one `size : stride` entry per sub-expression of Time):

- a time filter follows one padded axis X that lives in Time only: the step is valid when
  `idx(t) = sum(digit_k(t) * stride_k) < |X|`;
- the packet clipper follows the padded axis P whose innermost run lives in Packet:
  `valid_size(t) = clamp(|P| - idx(t), 0, span)`, `span` the live cells of P per packet.

A flit any time filter rejects has `valid_size = 0`; otherwise the clipper decides (the
whole live packet when no axis is clipped). This module derives that configuration from a
stream's mappings and refuses, with a VCG rule, the placements it cannot express. Every
configuration it returns is checked, cell by cell, against the mapping's own cells (a
mismatch is an ICE), so the counts it produces are exactly the live prefix of every flit.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from ir.diagnostic import Violation
from ir.errors import InternalError
from ir.mapping.cells import LIVE
from ir.mapping.nodes import Broadcast, Mapping, Modulo, Pad, Pair, Stride, Symbol, pair_all, pair_items
from ir.mapping.ops import Entry, coalesce
from ir.valid_count_slice import FilterMode, slice_filter, slice_weights

__all__ = ["Sub", "TimeFilter", "Clipper", "VcgConfig", "FilterMode", "sub_expressions", "derive_vcg", "valid_sizes",
           "slice_counts", "per_slice", "checked_slices", "packed_rows", "live_prefix", "MAX_TIME_FILTERS", "MAX_SEQ_ENTRIES"]

MAX_TIME_FILTERS = 3
MAX_SEQ_ENTRIES = 8


@attrs.frozen
class Sub:
    """One sub-expression of a mapping: `size` positions stepping `stride` through axis
    `axis` (None: a broadcast, no axis), `span` of them before any trailing flit padding."""

    axis: str | None
    size: int
    stride: int
    axis_size: int
    span: int


def _sub(node: Mapping, pad_name: str) -> Sub | None:
    """The sub-expression `node` is, or None when it is not of the form `X [# n] [/ s] [% m] [# f]`."""
    if isinstance(node, Symbol):
        return Sub(node.name, node.size, 1, node.axis_size, node.size)
    if isinstance(node, Broadcast):
        return Sub(None, node.n, 0, 1, node.n)
    if isinstance(node, Pad):
        if isinstance(node.operand, Broadcast) and node.operand.n == 1:  # `1 # n`: pure padding
            return Sub(pad_name, node.n, 1, 1, node.n)
        inner = _sub(node.operand, pad_name)
        if inner is None or inner.span != inner.size:
            return None
        if isinstance(node.operand, Symbol):  # `X # n`: the axis padded
            return Sub(inner.axis, node.n, 1, inner.axis_size, node.n)
        return attrs.evolve(inner, size=node.n)  # trailing flit padding after a run
    if isinstance(node, (Stride, Modulo)):
        inner = _sub(node.operand, pad_name)
        if inner is None or inner.span != inner.size or inner.axis is None:
            return None
        if isinstance(node, Stride):
            size = -(-inner.size // node.n)
            return Sub(inner.axis, size, inner.stride * node.n, inner.axis_size, size)
        size = min(inner.size, node.n)
        return Sub(inner.axis, size, inner.stride, inner.axis_size, size)
    return None


def sub_expressions(mapping: Mapping, where: str) -> list[Sub] | Violation:
    """The sub-expressions of `mapping`, major to minor, or a VCG-2 refusal."""
    items = pair_items(mapping)
    out = []
    for k, item in enumerate(items):
        sub = _sub(item, f"{where}#{k}")
        if sub is None:
            return Violation("VCG-2", f"the valid count generator cannot read `{item.text()}` in {where}",
                             label=f"{where} {mapping.text()}",
                             help="write each padded axis as sub-expressions `X # n / s % m`")
        out.append(sub)
    return out


@attrs.frozen
class TimeFilter:
    """A time filter: the slice id's bits `slice_mask` against `slice_thres`, then
    `sum(digit_k * seq_k.stride) < thres` (`ir.valid_count_slice`). The slice fields are
    printed only when set: a filter of an axis that lives in Time alone reads `{seq, thres}`."""

    TEXT_STYLE = "struct"
    seq: tuple[Entry, ...] = attrs.field(converter=tuple)
    thres: int
    slice_mask: int = attrs.field(default=0, metadata={"omit_default": True})
    slice_thres: int = attrs.field(default=0, metadata={"omit_default": True})
    mode: FilterMode = attrs.field(default=FilterMode.SLICE_MAJOR, metadata={"omit_default": True})

    def valid(self, slices: np.ndarray, steps: int) -> np.ndarray:
        """(slices, steps) booleans: the chip's comparison for every slice id and time step."""
        masked = (np.asarray(slices, np.int64) & self.slice_mask)[:, None]
        in_time = (_digits(self.seq, steps) < self.thres)[None, :]
        below = masked < self.slice_thres
        if self.mode is FilterMode.SLICE_MAJOR:
            return below | ((masked == self.slice_thres) & in_time)
        return below | in_time


@attrs.frozen
class Clipper:
    """The packet clipper: `clamp(axis_size - idx(t), 0, span)` live cells per flit."""

    TEXT_STYLE = "struct"
    seq: tuple[Entry, ...] = attrs.field(converter=tuple)
    axis_size: int
    span: int


@attrs.frozen
class VcgConfig:
    """The VCG configuration of one stream: its time filters and its packet clipper."""

    filters: tuple[TimeFilter, ...]
    clipper: Clipper


def _max_index(subs: list[Sub], axis: str) -> int:
    return sum((s.size - 1) * s.stride for s in subs if s.axis == axis)


def _padded_axes(subs: list[Sub]) -> list[str]:
    """Axes whose positions reach past their live size, in order of first appearance."""
    seen: list[str] = []
    for s in subs:
        if s.axis is not None and s.axis not in seen and _max_index(subs, s.axis) >= s.axis_size:
            seen.append(s.axis)
    return seen


def _seq(time: list[Sub], axis: str) -> tuple[Entry, ...]:
    """The sequencer of `axis` over Time: one entry per sub-expression, merged where they walk
    as one (a run of other axes, at stride 0, is one entry)."""
    return coalesce(Entry(s.size, s.stride if s.axis == axis else 0) for s in time)


def _packet_clipper(time: list[Sub], packet: list[Sub], padded: list[str], loc: str) -> Clipper | Violation:
    """The clipper of the one padded axis in Packet (VCG-2 when Packet mixes it with others)."""
    clipped = [s for s in packet if s.axis in padded]
    if not clipped and len(packet) == 1:  # the live run, then any trailing flit padding
        return Clipper((), packet[0].span, packet[0].span)
    if not clipped and all(s.span == s.size for s in packet):
        live = math.prod(s.size for s in packet)
        return Clipper((), live, live)
    if not clipped:
        return Violation("VCG-2", "trailing padding inside a packet of several axes", label=f"packet {loc}",
                         help="pad the packet only after its last axis, e.g. `(A, B) # 8`")
    run = clipped[0]
    if len(packet) != 1 or run.stride != 1:
        return Violation("VCG-2", "a padded axis in Packet must be the packet's only, innermost run",
                         label=f"packet {loc}",
                         help="the packet clipper counts a prefix: write the packet as `X # n % span` "
                              "(optionally `# 8`), with no other axis beside it")
    return Clipper(_seq(time, run.axis), run.axis_size, run.span)


def _filters(padded: list[str], clipped: set[str], clipper: Clipper, subs: tuple[list[Sub], list[Sub], list[Sub]],
             loc: str) -> tuple[list[TimeFilter], Clipper] | Violation:
    """One time filter per padded axis the clipper does not count; an axis with a Slice part
    gets its slice fields (and takes over a clipper whose every packet is full or empty)."""
    s_subs, t_subs, p_subs = subs
    in_slice = {s.axis for s in s_subs}
    weights = slice_weights([s.size for s in s_subs])
    filters: list[TimeFilter] = []
    for x in padded:
        live = next(s.axis_size for s in s_subs + t_subs + p_subs if s.axis == x)
        if x not in in_slice:
            if x not in clipped:
                filters.append(TimeFilter(_seq(t_subs, x), live))
            continue
        scale = 1
        if x in clipped:  # Slice and Packet: only when no packet is partial (VCG-10)
            scale, clipper = clipper.span, Clipper((), clipper.span, clipper.span)
        got = slice_filter(x, live, s_subs, weights, t_subs, s_subs + t_subs + p_subs, loc, scale)
        if isinstance(got, Violation):
            return got
        seq, thres, mask, at, mode = got
        filters.append(TimeFilter(seq, thres, mask, at, mode))
    return filters, clipper


def derive_vcg(slice_: Mapping, time: Mapping, packet: Mapping) -> VcgConfig | Violation:
    """The VCG configuration of a stream `(slice; time; packet)`, or the VCG rule it breaks."""
    t_subs = sub_expressions(time, "time")
    if isinstance(t_subs, Violation):
        return t_subs
    p_subs = sub_expressions(packet, "packet")
    if isinstance(p_subs, Violation):
        return p_subs
    stream_axes = {s.axis for s in t_subs + p_subs if s.axis is not None}
    s_subs = sub_expressions(slice_, "slice") if slice_.axes() & stream_axes else []
    if isinstance(s_subs, Violation):
        return s_subs
    padded = [x for x in _padded_axes(t_subs + p_subs + s_subs) if x in stream_axes]
    clipper = _packet_clipper(t_subs, p_subs, padded, packet.text())
    if isinstance(clipper, Violation):
        return clipper
    s_padded = [s if s.axis in padded else attrs.evolve(s, axis=None) for s in s_subs]
    found = _filters(padded, {s.axis for s in p_subs}, clipper, (s_padded, t_subs, p_subs), slice_.text())
    if isinstance(found, Violation):
        return found
    filters, clipper = found
    if len(filters) > MAX_TIME_FILTERS:
        return Violation("VCG-3", f"{len(filters)} padded axes in Time need {len(filters)} time filters; "
                         f"the generator has {MAX_TIME_FILTERS}", label=f"time {time.text()}",
                         help="pad fewer axes, or merge padded axes into one")
    longest = max([len(f.seq) for f in filters] + [len(clipper.seq)])
    if longest > MAX_SEQ_ENTRIES:
        return Violation("VCG-4", f"counting Time takes a sequencer of {longest} entries; the generator's "
                         f"have {MAX_SEQ_ENTRIES}", label=f"time {time.text()}",
                         help="keep a padded axis's sub-expressions of Time together, so the others merge")
    config = VcgConfig(tuple(filters), clipper)
    live_prefix(config, time, packet, slice_ if per_slice(config) else None)
    return config


def _digits(seq: tuple[Entry, ...], steps: int) -> np.ndarray:
    """idx(t) for every time step t: the mixed-radix digits of t times the entry strides."""
    t = np.arange(steps, dtype=np.int64)
    idx = np.zeros(steps, np.int64)
    for e in reversed(seq):
        idx += (t % e.size) * e.stride
        t //= e.size
    return idx


def per_slice(config: VcgConfig) -> bool:
    """Whether the counts of `config` depend on the slice (a filter reads the slice id)."""
    return any(f.slice_mask for f in config.filters)


def slice_counts(config: VcgConfig, slices: np.ndarray, steps: int) -> np.ndarray:
    """`valid_size(s, t)` (slices, steps) for every slice id of `slices`: the chip's formula."""
    c = config.clipper
    if c.seq:
        base = np.clip(c.axis_size - _digits(c.seq, steps), 0, c.span)
    else:
        base = np.full(steps, min(c.axis_size, c.span), np.int64)
    out = np.broadcast_to(base[None, :], (len(slices), steps))
    for f in config.filters:
        out = np.where(f.valid(slices, steps), out, 0)
    return out


def packed_rows(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Each row's kept cells back to back, then zeros: (rows, cells) -> (rows, most kept)."""
    order = np.argsort(~keep, axis=1, kind="stable")
    most = int(keep.sum(axis=1).max(initial=0))
    out = np.take_along_axis(values, order[:, :most], axis=1)
    filled = np.arange(most)[None, :] < keep.sum(axis=1)[:, None]
    return np.where(filled, out, np.zeros((), values.dtype))


def valid_sizes(config: VcgConfig, steps: int) -> np.ndarray:
    """`valid_size(t)` of every time step of slice 0 (every slice's, when not `per_slice`)."""
    return slice_counts(config, np.zeros(1, np.int64), steps)[0]


def live_cells(time: Mapping, packet: Mapping) -> np.ndarray:
    """(time steps, packet cells) booleans: which cells of the stream are live data."""
    both = Pair(time, packet)
    status = both.cells(np.arange(both.size)).status
    return (status == LIVE).reshape(time.size, packet.size)


def checked_slices(slice_: Mapping, axes: set[str]) -> np.ndarray:
    """Slice ids whose Slice items of other axes are live (the others hold no data at all)."""
    items = pair_items(slice_)
    weights = slice_weights([i.size for i in items])
    ids = np.arange(slice_.size, dtype=np.int64)
    ok = np.ones(slice_.size, bool)
    for item, w in zip(items, weights):
        if not item.axes() & axes:
            live = item.cells(np.arange(item.size)).status == LIVE
            ok &= live[(ids // w) % item.size]
    return ok


def live_prefix(config: VcgConfig, time: Mapping, packet: Mapping, slice_: Mapping | None = None) -> None:
    """The counts of `config` mark exactly the live cells of `(time; packet)` (of every
    slice of `slice_` that holds data, when given); a configuration that does not is this
    module's bug (an ICE), never the kernel's."""
    if slice_ is None:
        counts = valid_sizes(config, time.size)[None, :]
        live = live_cells(time, packet)[None]
        rows = np.ones(1, bool)
    else:
        counts = slice_counts(config, np.arange(slice_.size), time.size)
        both = pair_all([slice_, time, packet])
        live = (both.cells(np.arange(both.size)).status == LIVE).reshape(slice_.size, time.size, packet.size)
        rows = checked_slices(slice_, time.axes() | packet.axes())
    want = np.arange(packet.size)[None, None, :] < counts[:, :, None]
    if not np.array_equal(want[rows], live[rows]):
        where = "" if slice_ is None else f"slice {slice_.text()} ; "
        raise InternalError(f"the valid count generator miscounts ({where}time {time.text()} ; packet {packet.text()})")
