"""Redistribution rules REDIST-1..9 (docs/machine/topology.md "Redistributions").

A redistribution plan gives every target (chip, cluster) of the result one source (chip,
cluster) of the input and one cell offset into the input's Element: the sum, over the
sliced axes, of the selected position times the axis's cell stride. The plan's steps are
checked where they are written (REDIST-1 ... REDIST-6); the terminating `to_dm` is checked
by `check_redistribute` (REDIST-6 and the DMA rules of the copy it makes).

REDIST-1: a chip shuffle's pattern is a permutation of the tensor's chips.
REDIST-2: a slice names one digit range of the Element, one in-range position per target,
          and an output Element that is the Element without that digit range.
REDIST-3: a slice that produces a DM tensor moves by whole 8-byte words: the sliced axis's
          stride in the source Element is a multiple of 8 bytes.
REDIST-4: an asymmetric slice narrows the outermost digit range of the Element.
REDIST-5: sources and slice positions are Python ints known while tracing.
REDIST-6: every live target reads a live source (no padded chip or cluster), and a cluster
          swap needs exactly two clusters.
REDIST-7: a plan is not a tensor: it is consumed by `to_dm` or `to_dm_view` only.
REDIST-8: the plan's copy keeps the Chip and Cluster mappings and the number of slices
          (a relayout across them is a `to_dm` of the result).
REDIST-9: an asymmetric slice leaves no must-not-write padding (`#{!}`) in the Element below
          the axis it narrows: the Sub context's parallel copy writes that tail whole.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.mapping.cells import Padding
from ir.mapping.factors import PaddingFactor
from ir.mapping.nodes import Mapping, PaddingKind, written
from ir.rules.dma import DMA_DM_ALIGN, check_move
from ir.rules.view_writes import check_dm_write_align, read_padded
from ir.rules.views import tile_window

__all__ = ["permutation_fault", "indices_fault", "slice_step", "outermost_fault", "hole_below_fault", "placement_fault",
           "check_redistribute", "parse_sources", "parse_offsets"]


def _constant(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _constants(values: Any, what: str, stage: str) -> tuple[int, ...] | Violation:
    """The Python ints of `values` (REDIST-5 for a value known only at run time, TYPE-6 for
    something that is not a list of numbers)."""
    try:
        items = tuple(values)
    except TypeError:
        return Violation("TYPE-6", f"`{stage}` takes a list of ints as its {what}, not {values!r:.40}",
                         help=f"e.g. `.{stage}(..., [0, 1, 2, 3])`")
    for x in items:
        if not _constant(x):
            return Violation("REDIST-5", f"the {what} of `{stage}` must be Python ints known while tracing; "
                                         f"{x!r:.40} is not",
                             help="compute them from Python values (loop variables, constants), not from "
                                  "runtime scalars or tensors")
    return items


def permutation_fault(pattern: Any, chips: int, stage: str) -> tuple[int, ...] | Violation:
    """The pattern of a chip shuffle, or REDIST-1 / REDIST-5."""
    items = _constants(pattern, "source chips", stage)
    if isinstance(items, Violation):
        return items
    if sorted(items) != list(range(chips)):
        return Violation("REDIST-1", f"a chip shuffle of a tensor on {chips} chip(s) takes a permutation of "
                                     f"0..{chips - 1} (pattern[target] = source), not {list(items)}",
                         help=f"name every chip once, e.g. {list(range(1, chips)) + [0]}")
    return items


def indices_fault(indices: Any, targets: int, axis: Mapping, level: str, stage: str) -> tuple[int, ...] | Violation:
    """The slice positions, one per chip (cluster), or REDIST-2 / REDIST-5."""
    items = _constants(indices, "slice positions", stage)
    if isinstance(items, Violation):
        return items
    if len(items) != targets or any(not 0 <= i < axis.size for i in items):
        return Violation("REDIST-2", f"`{stage}` takes one position of `{axis}` (0..{axis.size - 1}) per {level} "
                                     f"of the tensor ({targets}), not {list(items)}",
                         help=f"e.g. {[i % axis.size for i in range(targets)]}")
    return items


@attrs.frozen
class SliceStep:
    """One slice of a plan: the source window with the digit left as padding, the cell
    stride of one step of the digit in the source Element, and the plan's new Element."""

    window: Mapping
    stride: int
    element: Mapping


def slice_step(window: Mapping, element: Mapping, axis: Any, out: Any, bits: int, stage: str,
               dm_output: bool = True) -> SliceStep | Violation:
    """A slice of `axis` out of the plan's `element` (the source `window` tiled alike), the
    declared output Element `out`: REDIST-2, then REDIST-3 for a DM-producing slice."""
    if not isinstance(axis, Mapping) or not isinstance(out, Mapping):
        return Violation("TYPE-6", f"`{stage}` takes the axis mapping, the output Element mapping and the "
                                   "positions", help=f'e.g. `.{stage}(m("B"), m("C, D"), [0, 1, 2, 3])`')
    here = tile_window(element, axis, 1)
    there = tile_window(window, axis, 1)
    if here is None or there is None:
        return Violation("REDIST-2", f"`{axis}` is not one digit range of the Element `{element}`",
                         help="slice an axis (or one digit of an axis) the Element holds whole")
    if not here[1].equivalent(out):
        return Violation("REDIST-2", f"slicing `{axis}` out of `{element}` leaves `{here[1]}`, not `{out}`",
                         help=f'declare the output Element as m("{written(here[1])}")')
    stride_bits = there[2] * bits
    if dm_output and stride_bits % (8 * DMA_DM_ALIGN):
        return Violation("REDIST-3", f"one step of `{axis}` is {stride_bits / 8:g} bytes of the source Element; a "
                                     f"slice into DM starts on {DMA_DM_ALIGN}-byte words",
                         label=f"`{axis}` in `{window}`",
                         help="slice an axis whose inner part is a multiple of 8 bytes (move the axis outward "
                              "in the Element, or pad the inner axes)")
    return SliceStep(there[0], there[2], out)


def outermost_fault(element: Mapping, axis: Any, stage: str) -> Violation | None:
    """REDIST-4: an asymmetric slice narrows the Element's outermost digit range."""
    factors = [f for f in element.factors()]
    found = tile_window(element, axis, 1) if isinstance(axis, Mapping) else None
    if found is None or not factors:
        return None  # REDIST-2 reports it
    first = factors[0]
    digit = [f for f in axis.factors() if getattr(f, "axis", None) is not None]
    if digit and getattr(first, "axis", None) == digit[0].axis and \
            first.step * first.extent == digit[0].step * digit[0].extent:
        return None
    return Violation("REDIST-4", f"`{stage}` narrows the outermost digit range of the Element; `{axis}` is not "
                                 f"outermost in `{element}`",
                     help="move the axis to the front of the Element first (a `to_dm` relayout), or use "
                          "`chip_slice` / `cluster_slice` ... `.to_dm(...)`, which slice any aligned axis")


def _bottom(f: Any) -> bool:
    """A factor holding must-not-write padding (`#{!}`)."""
    if isinstance(f, PaddingFactor):
        return f.kind is PaddingKind.BOTTOM
    cells = getattr(f, "cells", None) or ()
    return any(isinstance(c, Padding) and c.kind is PaddingKind.BOTTOM for c in cells)


def hole_below_fault(element: Mapping, axis: Any, stage: str) -> Violation | None:
    """REDIST-9: below the outermost digit range `axis` an asymmetric slice narrows (REDIST-4
    holds), the Element has no must-not-write padding."""
    if not isinstance(axis, Mapping) or tile_window(element, axis, 1) is None:
        return None  # REDIST-2 reports it
    tail = list(element.factors())[1:]
    if not any(_bottom(f) for f in tail):
        return None
    rest = element.factors()[0]
    return Violation("REDIST-9", f"`{stage}` copies the Element below its axis whole; `{element}` has "
                                 f"must-not-write padding (`#{{!}}`) there",
                     label=f"below `{getattr(rest, 'axis', element)}`",
                     help="declare that padding `#` (it may be written) or `#{0}`, or slice with "
                          "`chip_slice` / `cluster_slice` ... `.to_dm(...)`")


def placement_fault(t: Any, sources: list[tuple[int, int]], stage: str) -> Violation | None:
    """REDIST-6: every live (chip, cluster) of `t` reads a live one."""
    clusters = t.cluster.size
    for target, (chip, cluster) in enumerate(sources):
        tc, tk = divmod(target, clusters)
        if isinstance(t.chip.cell(tc), Padding) or isinstance(t.cluster.cell(tk), Padding):
            continue
        if not (0 <= chip < t.chip.size and 0 <= cluster < clusters):
            return Violation("REDIST-6", f"target (chip {tc}, cluster {tk}) reads (chip {chip}, cluster {cluster}), "
                                         "which the tensor does not have")
        if isinstance(t.chip.cell(chip), Padding) or isinstance(t.cluster.cell(cluster), Padding):
            level = "chip" if isinstance(t.chip.cell(chip), Padding) else "cluster"
            return Violation("REDIST-6", f"target (chip {tc}, cluster {tk}) would read {level} "
                                         f"{chip if level == 'chip' else cluster} of `{getattr(t, level)}`, which "
                                         "is padding", label=f"in `{stage}`",
                             help=f"redistribute a tensor whose {level.title()} mapping names an axis on every "
                                  "position")
    return None


# --- the traced op ---------------------------------------------------------------------------


def parse_sources(text: str) -> list[tuple[int, int]]:
    """`"1.0,0.0"` -> [(1, 0), (0, 0)]: the (chip, cluster) each target reads."""
    return [tuple(int(x) for x in item.split(".")) for item in text.split(",")] if text else []  # type: ignore[misc]


def parse_offsets(text: str) -> list[int]:
    """`"0,128"` -> [0, 128]: each target's cell offset into the source Element."""
    return [int(x) for x in text.split(",")] if text else []


def check_redistribute(op: Any) -> Violation | None:
    """The fields of a `Redistribute` agree with its types; then the DMA rules of the copy
    from the selected window into the result, and REDIST-6."""
    t = op.src.type
    sources, offsets = parse_sources(op.sources), parse_offsets(op.offsets)
    parts = t.chip.size * t.cluster.size
    if len(sources) != parts or len(offsets) != parts or op.window.size != t.element.size:
        return Violation("REDIST-2", f"a redistribution of a tensor with {parts} (chip, cluster) part(s) names "
                                     f"{len(sources)} source(s) and {len(offsets)} offset(s) over a window of "
                                     f"{op.window.size} cells (the Element has {t.element.size})")
    bad = placement_fault(t, sources, op.STAGE)
    if bad is not None:
        return bad
    out = op.result.type if op.into is None else op.view
    if not (out.chip.equivalent(t.chip) and out.cluster.equivalent(t.cluster) and out.slice.size == t.slice.size):
        return Violation("REDIST-8", "a redistribution keeps the tensor's Chip and Cluster mappings and its number of "
                                     f"slices: `{t.chip}`, `{t.cluster}`, {t.slice.size} slices, not `{out.chip}`, "
                                     f"`{out.cluster}`, {out.slice.size}",
                         help="copy the plan with the same Chip and Cluster, then relayout the result with `to_dm`")
    dst = op.result.type if op.into is None else read_padded(op.view)
    selected = attrs.evolve(t, element=op.window)  # the input's type with the plan's window as its Element
    return check_move(selected, dst) or \
        (check_dm_write_align(op) if op.into is not None else None)
