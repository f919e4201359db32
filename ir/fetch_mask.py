"""The Fetch Adapter's masking stage: `fetch_mask(out_time, out_packet)` zeroes padded cells.

The requested mappings are the fetch's own with the padding of one axis turned from `#`
(any value) into `#{0}` (zero): `R # 16` becomes `R #{0} 16`. The hardware masks by a
small configuration, not by the mapping: the fetch walks its sub-expressions (Time's, then
Packet's) as loops; `last_axis` names the loop of the masked axis's outermost
sub-expression, and one iteration of it is a *cell* (every position of the loops inside
it). Only the rightmost cell (RIGHTMOST), or the two rightmost (RIGHTMOST_TWO), of that loop
hold padding, and `counts` gives how many leading elements of each stay. In ITERATOR mode
the rightmost cell's count varies along an outer loop `iterator` of at most 8 iterations:
`counts[i]` at its iteration i (a padded axis whose padding reaches back more than two cells).
FMASK-1 refuses a request that changes anything else, FMASK-2 a padding the configuration
cannot describe, FMASK-3 one that needs a varying count along a loop of more than 8 iterations.
"""

from __future__ import annotations

import enum
import math

import attrs
import numpy as np

from ir.diagnostic import Violation
from ir.mapping.nodes import Mapping, Pad, PaddingKind, Pair, Symbol, written
from ir.valid_count import Sub, sub_expressions

__all__ = ["MaskDim", "FetchMaskConfig", "masked_axes", "derive_mask", "masked_mapping", "mask_keep",
           "MAX_MASK_COUNT", "MAX_ITERATOR_COUNTS"]

MAX_MASK_COUNT = 255  # a count is one byte
MAX_ITERATOR_COUNTS = 8  # the configuration holds 8 counts


class MaskDim(enum.Enum):
    """Which cells of `last_axis` the counts describe."""

    RIGHTMOST = "RIGHTMOST"
    RIGHTMOST_TWO = "RIGHTMOST_TWO"
    ITERATOR = "ITERATOR"


@attrs.frozen(kw_only=True)
class FetchMaskConfig:
    """`axis`: the masked axis; `last_axis`: the loop index (the packet is loop
    `len(time's sub-expressions)`, its own sub-expressions follow); `counts[0]` the rightmost
    cell's kept elements, `counts[1]` the second rightmost's (RIGHTMOST_TWO); in ITERATOR
    mode `counts[i]` the rightmost cell's at iteration i of loop `iterator` (printed only then)."""

    TEXT_STYLE = "struct"
    axis: Mapping
    last_axis: int
    dim: MaskDim
    counts: tuple[int, ...] = attrs.field(converter=tuple)
    iterator: int | None = attrs.field(default=None, metadata={"omit_default": True})


def _changed(a: Mapping, b: Mapping, out: set[str]) -> bool:
    """Whether `b` is `a` with some `#` turned into `#{0}` (collecting those pads' axes)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Pad):
        if a.n != b.n or not _changed(a.operand, b.operand, out):
            return False
        if a.kind != b.kind:
            if (a.kind, b.kind) != (PaddingKind.TOP, PaddingKind.ZERO):
                return False
            out.update(a.operand.axes() or {"1"})
        return True
    if isinstance(a, Pair):
        return _changed(a.left, b.left, out) and _changed(a.right, b.right, out)
    kids_a, kids_b = a.children(), b.children()
    if not kids_a:
        return a == b
    same = attrs.evolve(a, **{f.name: getattr(b, f.name) for f in attrs.fields(type(a)) if f.name == "operand"})
    return same == b and len(kids_a) == len(kids_b) and all(_changed(x, y, out) for x, y in zip(kids_a, kids_b))


def masked_axes(time: Mapping, packet: Mapping, out_time: Mapping, out_packet: Mapping) -> set[str] | Violation:
    """FMASK-1: the axes whose padding the request turns to zero."""
    found: set[str] = set()
    if not (_changed(time, out_time, found) and _changed(packet, out_packet, found)):
        return Violation("FMASK-1", "`fetch_mask` may only turn padding `#` into `#{0}`",
                         label=f"(out_time {out_time.text()} ; out_packet {out_packet.text()}) is not "
                               f"(time {time.text()} ; packet {packet.text()}) with zeroed padding",
                         help=f'repeat the fetch\'s mappings with `#{{0}}` for the padding to zero, e.g. '
                              f'm("{written(time)}") with its `#` written `#{{0}}`')
    if not found:
        return Violation("FMASK-1", "`fetch_mask` zeroes no padding", label=f"out_packet {out_packet.text()}",
                         help="write `#{0}` for the padding the mask zeroes, or drop the call")
    return found


def _fault(detail: str, label: str) -> Violation:
    return Violation("FMASK-2", f"the fetch mask cannot describe this padding: {detail}", label=label,
                     help="mask one padded axis whose padding falls in the last one or two iterations of its "
                          "outermost sub-expression, e.g. `R #{0} 16` in the packet")


def _axis_valid(subs: list[Sub], axis: str) -> np.ndarray:
    """For every position of the loop nest, whether its index of `axis` is live."""
    idx = np.zeros([s.size for s in subs], np.int64)
    for k, s in enumerate(subs):
        shape = [1] * len(subs)
        shape[k] = s.size
        if s.axis == axis:  # its own trailing flit padding counts as padding of the axis
            step = np.where(np.arange(s.size) < s.span, np.arange(s.size) * s.stride, 1 << 40)
            idx = idx + step.reshape(shape)
    return (idx < next(s.axis_size for s in subs if s.axis == axis)).reshape(-1)


def _loops(time: Mapping, packet: Mapping) -> list[Sub] | Violation:
    """The fetch's loops: Time's sub-expressions, the packet as one loop of one iteration, then
    the packet's sub-expressions."""
    subs: list[Sub] = []
    for mapping, where in ((time, "time"), (packet, "packet")):
        got = sub_expressions(mapping, where)
        if isinstance(got, Violation):
            return got
        subs += got + ([Sub(None, 1, 0, 1, 1)] if where == "time" else [])
    return subs


def _split(subs: list[Sub], k: int) -> tuple[int, int, int]:
    return math.prod(s.size for s in subs[:k]), subs[k].size, math.prod(s.size for s in subs[k + 1:])


def _config_at(valid: np.ndarray, subs: list[Sub], k: int, axis: Symbol, most: int) -> FetchMaskConfig | str:
    """The configuration with `last_axis = k`, or why loop k cannot carry the padding."""
    outer, n, inner = _split(subs, k)
    cells = valid.reshape(outer, n, inner)
    counts = cells.sum(axis=2)
    prefix = np.arange(inner)[None, None, :] < counts[:, :, None]
    if not np.array_equal(prefix, cells) or not np.all(counts == counts[:1]):
        return "the kept elements of a cell are not its leading ones"
    row = counts[0]
    partial = [i for i in range(n) if row[i] < inner]
    if len(partial) > most or partial != list(range(n - len(partial), n)):
        return f"{len(partial)} cells hold padding; a mask describes the last one or two"
    if any(row[i] > MAX_MASK_COUNT for i in partial):
        return f"a cell keeps more than {MAX_MASK_COUNT} elements"
    if len(partial) == 2:
        return FetchMaskConfig(axis=axis, last_axis=k, dim=MaskDim.RIGHTMOST_TWO, counts=(int(row[-1]), int(row[-2])))
    return FetchMaskConfig(axis=axis, last_axis=k, dim=MaskDim.RIGHTMOST, counts=(int(row[-1]) if partial else inner,))


def derive_mask(time: Mapping, packet: Mapping, axes: set[str]) -> FetchMaskConfig | Violation:
    """FMASK-2: the configuration that zeroes the padding of the one masked axis: the innermost
    loop, from the axis's outermost sub-expression outwards, whose last cell holds it all (else
    whose last two cells do)."""
    label = f"(time {time.text()} ; packet {packet.text()})"
    if len(axes) != 1 or "1" in axes:
        return _fault(f"it masks {', '.join(sorted(axes))}; a mask zeroes one padded axis", label)
    (name,) = axes
    subs = _loops(time, packet)
    if isinstance(subs, Violation):
        return _fault(subs.message, label)
    kx = next(i for i, s in enumerate(subs) if s.axis == name)
    valid = _axis_valid(subs, name)
    why = ""
    for most in (1, 2):  # one partial cell if any loop allows it, else two
        for k in range(kx, -1, -1):
            found = _config_at(valid, subs, k, Symbol(name, subs[kx].axis_size), most)
            if isinstance(found, FetchMaskConfig):
                return found
            why = why or found
    found = _iterator_config(valid, subs, name, Symbol(name, subs[kx].axis_size), label)
    return found if found is not None else _fault(why, label)


def _iterator_at(valid: np.ndarray, subs: list[Sub], j: int, k: int) -> list[int] | None:
    """The rightmost cell of loop k keeps a prefix whose length depends only on the iteration
    of loop j (< k), every other cell whole: those lengths, else None."""
    sizes = [s.size for s in subs]
    shape = (math.prod(sizes[:j]), sizes[j], math.prod(sizes[j + 1:k]), sizes[k], math.prod(sizes[k + 1:]))
    cells = valid.reshape(shape)
    if not cells[:, :, :, :-1, :].all():
        return None
    last = cells[:, :, :, -1, :]
    counts = last.sum(axis=-1)
    prefix = np.arange(shape[4])[None, None, None, :] < counts[..., None]
    if not np.array_equal(prefix, last) or not np.all(counts == counts[:1, :, :1]):
        return None
    return [int(c) for c in counts[0, :, 0]]


def _iterator_config(valid: np.ndarray, subs: list[Sub], name: str, axis: Symbol, label: str
                     ) -> FetchMaskConfig | Violation | None:
    """ITERATOR mode: the first loop j of the axis (outermost first) and loop k inside it whose
    rightmost cell's count varies along j only. FMASK-3 when that loop is longer than the 8
    counts the configuration holds."""
    for j, sub in enumerate(subs):
        if sub.axis != name:
            continue
        for k in range(j + 1, len(subs)):
            counts = _iterator_at(valid, subs, j, k)
            if counts is None or max(counts) > MAX_MASK_COUNT:
                continue
            if len(counts) > MAX_ITERATOR_COUNTS:
                return Violation("FMASK-3", f"the kept count varies along a loop of {len(counts)} iterations; "
                                 f"the mask holds {MAX_ITERATOR_COUNTS} counts", label=label,
                                 help=f"split {name} so that the loop its padding varies along has at most "
                                      f"{MAX_ITERATOR_COUNTS} iterations, or pad it to whole cells")
            return FetchMaskConfig(axis=axis, last_axis=k, dim=MaskDim.ITERATOR, counts=counts, iterator=j)
    return None


def mask_keep(time: Mapping, packet: Mapping, config: FetchMaskConfig) -> np.ndarray:
    """(time steps, packet cells) booleans the configured mask keeps (the chip's reading)."""
    subs = _loops(time, packet)
    if config.dim is MaskDim.ITERATOR:
        return _iterator_keep(subs, config).reshape(time.size, packet.size)
    outer, n, inner = _split(subs, config.last_axis)
    keep = np.ones((outer, n, inner), bool)
    keep[:, n - 1, config.counts[0]:] = False
    if config.dim is MaskDim.RIGHTMOST_TWO:
        keep[:, n - 2, config.counts[1]:] = False
    return keep.reshape(time.size, packet.size)


def _iterator_keep(subs: list[Sub], config: FetchMaskConfig) -> np.ndarray:
    """ITERATOR: the rightmost cell of `last_axis` keeps `counts[i]` elements at iteration i
    of loop `iterator` (a configuration naming a loop that is not outer to it keeps all)."""
    j, k = config.iterator, config.last_axis
    sizes = [s.size for s in subs]
    keep = np.ones(sizes, bool)
    if j is None or not 0 <= j < k < len(subs) or len(config.counts) != sizes[j]:
        return keep
    inner = math.prod(sizes[k + 1:])
    shaped = keep.reshape(math.prod(sizes[:j]), sizes[j], math.prod(sizes[j + 1:k]), sizes[k], inner)
    for i, c in enumerate(config.counts):
        shaped[:, i, :, -1, c:] = False
    return shaped


def masked_mapping(node: Mapping, axis: str) -> Mapping:
    """`node` with the padding of `axis` written `#{0}` (the mask's result type)."""
    if isinstance(node, Pad):
        inner = masked_mapping(node.operand, axis)
        kind = PaddingKind.ZERO if node.kind is PaddingKind.TOP and axis in node.operand.axes() else node.kind
        return Pad(inner, node.n, kind)
    if isinstance(node, Pair):
        return Pair(masked_mapping(node.left, axis), masked_mapping(node.right, axis))
    if isinstance(node, Symbol) or not node.children():
        return node
    return attrs.evolve(node, operand=masked_mapping(node.operand, axis))
