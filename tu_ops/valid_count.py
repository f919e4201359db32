"""The packed commit's Valid Count Generator configuration (`pack=` of a `commit` record).

A `commit` record with `pack={filters=[...], clipper={...}}` is the sub context's valid-count
packing: every flit keeps its first `valid_size(t)` cells (ir.valid_count's formula) and the
kept cells are written back to back from `dest`, so its `write` plan is empty. CMT-6 checks
the configuration against the record's own stream type and destination.
"""

from __future__ import annotations

from typing import Any

import attrs

import numpy as np

from ir.valid_count import (MAX_SEQ_ENTRIES, MAX_TIME_FILTERS, Clipper, TimeFilter, derive_vcg, per_slice, slice_counts,
                            valid_sizes)
from ir.mapping.nodes import Resize
from ir.valid_count import VcgConfig
from ir.vector.intra_reduce import axis_padded
from tu_ops.enums import TuContext

__all__ = ["PackConfig", "pack_config", "pack_problem", "reduce_vcg", "reduce_vcg_problem"]


@attrs.frozen(kw_only=True)
class PackConfig:
    """The time filters and the packet clipper of one packed commit."""

    TEXT_STYLE = "struct"
    filters: tuple[TimeFilter, ...] = attrs.field(converter=tuple)
    clipper: Clipper


def pack_config(stream: Any) -> PackConfig:
    """The configuration the lowering writes for a (trace-valid) packed stream."""
    found = derive_vcg(stream.slice, stream.time, stream.packet)
    if not hasattr(found, "clipper"):
        raise ValueError(found.message)
    return PackConfig(filters=found.filters, clipper=found.clipper)


def _shape_problem(pack: PackConfig, steps: int, cells: int) -> str | None:
    if len(pack.filters) > MAX_TIME_FILTERS:
        return f"{len(pack.filters)} time filters; the generator has {MAX_TIME_FILTERS}"
    for name, seq in [("clipper", pack.clipper.seq)] + [(f"filter {k}", f.seq) for k, f in enumerate(pack.filters)]:
        if len(seq) > MAX_SEQ_ENTRIES:
            return f"the {name} sequencer has {len(seq)} entries, more than {MAX_SEQ_ENTRIES}"
        walked = 1
        for e in seq:
            walked *= e.size
        if seq and walked != steps:
            return f"the {name} sequencer walks {walked} time steps, the stream has {steps}"
    if not 1 <= pack.clipper.span <= cells:
        return f"clipper span {pack.clipper.span} not in [1, {cells}] cells of a packet"
    return None


def pack_problem(op: Any, target: Any, context: TuContext) -> str | None:
    """CMT-6: a packed commit runs in SUB, counts its stream's live prefix and stays in its tensor."""
    t, pack = op.input_type, op.pack
    if context is not TuContext.SUB:
        return "a packed commit runs only in the SUB context"
    if op.write.entries():
        return "a packed commit writes back to back; its write plan must be empty"
    bits = op.elem_bits(target)
    cells = op.valid_bytes * 8 // max(bits, 1)
    found = _shape_problem(pack, t.time.size, cells)
    if found:
        return found
    try:  # the counts are of the trimmed stream: the packet's first `valid_bytes`
        want = pack_config(attrs.evolve(t, packet=Resize(t.packet, cells).normalize()) if cells < t.packet.size else t)
    except ValueError as e:
        return f"the stream's counts cannot be generated: {e}"
    if want != pack:
        return "the configuration does not count the live cells of the input stream"
    vcg, size = pack_to_vcg(pack), op.output_type.element.size
    if per_slice(vcg):  # each slice packs its own run, at most the element
        total = int(slice_counts(vcg, np.arange(t.slice.size), t.time.size).sum(axis=1).max())
        if total > size:
            return f"a slice's packer keeps {total} cells, the tensor holds {size}"
    elif int(valid_sizes(vcg, t.time.size).sum()) != size:
        return f"the packer keeps {int(valid_sizes(vcg, t.time.size).sum())} cells per slice, the tensor holds {size}"
    size = op.alloc_bytes(target)
    c = target.constants
    if op.dest < 0 or op.dest % c.COMMIT_BASE or op.dest + size > c.DM_SLICE_BYTES:
        return f"destination [{op.dest}, {op.dest + size}) is not an 8-byte aligned range of the DM"
    return None


def pack_to_vcg(pack: PackConfig) -> Any:
    """The `ir.valid_count.VcgConfig` of a record's configuration."""
    return VcgConfig(pack.filters, pack.clipper)


def reduce_vcg(slice_: Any, time: Any, packet: Any, axis: str | None) -> PackConfig | None:
    """The VCG configuration an intra-slice reduce of `axis` over `(slice; time; packet)`
    needs (None when the axis has no padding to exclude). ValueError: it cannot be counted."""
    if axis is None or not axis_padded(axis, slice_, time, packet):
        return None
    found = derive_vcg(slice_, time, packet)
    if not hasattr(found, "clipper"):
        raise ValueError(found.message)
    return PackConfig(filters=found.filters, clipper=found.clipper)


def reduce_vcg_problem(step: Any, slice_: Any, time: Any, packet: Any, axis: str) -> str | None:
    """VEOP-7 on a reduce step's `vcg=`: exactly the configuration its stream needs, in the
    generator's capacity (3 filters, 8 entries a sequencer, each walking the stream's steps)."""
    have = getattr(step, "vcg", None)
    try:
        want = reduce_vcg(slice_, time, packet, axis)
    except ValueError as e:
        return f"the reduce of {axis} cannot be counted: {e}"
    if have is None:
        return None if want is None else f"the reduce of the padded axis {axis} carries no vcg= configuration"
    if want is None:
        return f"a vcg= configuration on the reduce of {axis}, which has no padding"
    found = _shape_problem(have, time.size, packet.size)
    if found:
        return f"vcg: {found}"
    if have != want:
        return f"the vcg= configuration does not count the live cells of the reduce of {axis}"
    return None
