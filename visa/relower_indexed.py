"""Re-derive the indexed DMA records from their types (as `visa.relower` does for `dma`).

A `dma_gather`, `dma_scatter` or `dma_shuffle`: the traced op is rebuilt from the record's
types (and, for a shuffle, its pattern), checked by its trace rules and given the record its
types fix (`tu_ops.gather_records`); its DM-side addresses are then offset by the allocations
the verifier derived.

A `dma_spm`: the traced `to_spm` / `to_dm` is rebuilt and checked by its trace rules
(SPM-1..3), the record's commands are the ones its types fix (`tu_ops.dma_records.spm_record`),
its DM side at the derived allocation.

A `dma_redistribute`: the record its types and plan fields fix
(`tu_ops.dma_records.redistribute_record`), its DM-side addresses then offset by the
allocations the verifier derived; a `dma_relayout` record from its two types and its windows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ir import ops as ir
from ir.gather_ops import Gather, Scatter, Shuffle
from ir.mapping.nodes import Symbol, pair_all
from ir.spm import positions_axes
from ir.spm_ops import SpmToDm, ToSpm
from tu_ops.dma import moved
from tu_ops.dma_records import redistribute_record, relayout_record, spm_record
from tu_ops.gather_records import gather_record, scatter_record, shuffle_record
from visa.relower import Underivable, built, placed

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["expected_gather", "expected_scatter", "expected_shuffle", "expected_spm", "expected_redistribute",
           "expected_relayout"]


def _index_type(op: Any, types: dict[int, Any]) -> Any:
    t = types.get(op.index.id)
    if t is None:
        raise Underivable(op, f"the index {op.index} has no type")
    return t


def expected_gather(op: Any, types: dict[int, Any], dm_base: dict[int, int], target: Any) -> Any:
    """The GatherOp `gather_record` makes from `op`'s types, at the derived allocations."""
    index_t = _index_type(op, types)
    count = None if op.count is None else op.count.id
    if count is not None and count not in types:
        raise Underivable(op, f"the count {op.count} has no type")
    traced = Gather(src=ir.Value(op.src.id, op.input_type), index=ir.Value(op.index.id, index_t),
                    scaled=op.mode.name == "SCALED", prefix=op.prefix, result=ir.Value(op.result.id, op.output_type),
                    count=None if count is None else ir.Value(count, types[count]), loc=op.loc)
    low = built(op, lambda: gather_record(traced, op.result.id, op.src.id, op.index.id, target, count), traced)
    idx = dm_base.get(op.index.id, 0) if index_t.kind == "dm" else 0
    low = attrs.evolve(low, index_commands=moved(low.index_commands, idx))
    return placed(op, low, dst=dm_base.get(op.result.id, 0))


def expected_scatter(op: Any, types: dict[int, Any], dm_base: dict[int, int], target: Any) -> Any:
    """The ScatterOp `scatter_record` makes from `op`'s types (the key is the index's axes), its
    DM source at the derived allocation."""
    index_t = _index_type(op, types)
    if index_t.kind not in ("hbm", "spm") or (index_t.kind == "spm" and positions_axes(index_t) is None):
        raise Underivable(op, f"the index {op.index} is neither HBM byte offsets nor an SPM list of positions")
    key = index_t.element if index_t.kind == "hbm" else pair_all([Symbol(a, n) for a, n in positions_axes(index_t)])
    into = None if op.into is None else op.into.id
    window = None if op.src_view is None else (op.input_type, op.src_offset or 0)   # out of a tile
    page = {}
    if op.dst_view is not None:   # into one page: its type and first cell
        bits = target.bits_of(op.output_type.dtype) or op.output_type.dtype.bits
        page = {"view": op.view_types()[1], "offset": (op.dst_offset or 0) * 8 // bits}
    traced = Scatter(src=ir.Value(op.src.id, op.view_types()[0]), index=ir.Value(op.index.id, index_t),
                     key=key, result=ir.Value(op.result.id, op.output_type), loc=op.loc,
                     into=None if into is None else ir.Value(into, op.output_type), **page)
    low = built(op, lambda: scatter_record(traced, op.result.id, op.src.id, op.index.id, target, into, window),
                traced)
    low = attrs.evolve(low, **{f"{side}_start{x}": getattr(op, f"{side}_start{x}")   # the runtime starts, as read
                               for side in ("src", "dst") for x in ("", "_bytes", "_limit")})
    return placed(op, low, src=dm_base.get(op.src.id, 0))


def expected_shuffle(op: Any, types: dict[int, Any], dm_base: dict[int, int], target: Any) -> Any:
    """The ShuffleOp `shuffle_record` makes from `op`'s type and pattern, at the derived allocations."""
    traced = Shuffle(src=ir.Value(op.src.id, op.input_type), level=op.level.value, dim=len(op.pattern),
                     pattern=",".join(map(str, op.pattern)), result=ir.Value(op.result.id, op.output_type), loc=op.loc)
    low = built(op, lambda: shuffle_record(traced, op.result.id, op.src.id, target), traced)
    if op.input_type.kind != "dm":
        return placed(op, low)
    return placed(op, low, dm_base.get(op.src.id, 0), dm_base.get(op.result.id, 0))


def expected_spm(op: Any, types: dict[int, Any], dm_base: dict[int, int], target: Target) -> Any:
    """The SpmDmaOp `op`'s types fix (`tu_ops.dma_records.spm_record`), at the derived allocations."""
    into_spm = op.output_type.kind == "spm"
    cls = ToSpm if into_spm else SpmToDm
    src_t = op.view_types()[0]   # the tile a `to_spm` reads, when it reads one
    window = None if op.src_view is None else (op.input_type, op.src_offset or 0)
    traced = cls(src=ir.Value(op.src.id, src_t), result=ir.Value(op.result.id, op.output_type), loc=op.loc)
    low = built(op, lambda: spm_record(op.result, op.src, src_t, op.output_type, target, op.loc, window), traced)
    low = attrs.evolve(low, **{f: getattr(op, f) for f in ("src_start", "src_start_bytes", "src_start_limit")})
    if into_spm:  # the DM side's allocation
        return placed(op, low, src=dm_base.get(op.src.id, 0))
    return placed(op, low, dst=dm_base.get(op.result.id, 0))


def expected_redistribute(op: Any, types: dict[int, Any], dm_base: dict[int, int], target: Target) -> Any:
    """The RedistributeOp `op`'s types, views, sources and offsets fix, at
    the allocations its facts name (a write into a view: at its tensor's)."""
    into = None if op.into is None else (op.into.id, op.dst_view, op.dst_offset)
    low = built(op, lambda: redistribute_record(op.result.id, op.src.id, op.input_type, op.src_view,
                                                op.src_offset, op.sources, op.offsets, op.output_type, op.engine,
                                                target, op.loc, into))
    low = attrs.evolve(low, **{f"{side}_start{x}": getattr(op, f"{side}_start{x}")   # the runtime starts, as read
                               for side in ("src", "dst") for x in ("", "_bytes", "_limit")})
    return placed(op, low, *(0 if a is None else a.base for a in (op.src_alloc, op.dst_alloc)))


def expected_relayout(op: Any, types: dict[int, Any], dm_base: dict[int, int], target: Target) -> Any:
    """The DmaRelayoutOp the lowering makes from `op`'s two types, and its windows when it
    reads or writes one (the copy checked as one into a fresh tensor of the write view's type)."""
    src_t, dst_t = op.view_types()
    traced = ir.ToDm(src=ir.Value(op.src.id, src_t), result=ir.Value(op.result.id, dst_t), loc=op.loc)
    into = None if op.into is None else (op.into.id, op.dst_view, op.dst_offset)
    low = built(op, lambda: relayout_record(op.result.id, op.src.id, op.input_type, op.output_type, target, op.loc,
                                            op.src_view, op.src_offset or 0, into), traced)
    return placed(op, low, dm_base.get(op.src.id, 0), dm_base.get(op.result.id, 0))
