"""Staged DM redistributions (docs/machine/topology.md "Redistributions").

`t.chip_shuffle(pattern)`, `t.cluster_swap()`, `t.chip_slice(axis, element, positions)` and
`t.cluster_slice(axis, element, positions)` (on a `DmTensor` or a read view of one) start a
`DmRedistribute` plan; further steps compose into it, and `.to_dm(ctx.tdma, DmTensor[...])`
or `.to_dm_view(ctx.tdma, dst)` materialises it as one traced `Redistribute` (one DMA
record); the tile it reads or the write view it fills may be at a runtime start
(docs/runtime.md#runtime-tile-starts). The plan keeps, per target (chip, cluster) in
chip-major order, the source part it reads and the cell offset of the selected positions
in the source Element; the source window is the source Element with every sliced digit
range left as padding.

Steps come in the reference's order (shuffles, then chip slices, then cluster slices; a
chip shuffle before a cluster swap): another order is TYPE-1. `asymmetric_chip_slice` /
`asymmetric_cluster_slice` (on the Sub context) select an outermost digit range per chip
(cluster) and trace as the same op on their own.
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.redistribute_ops import Redistribute
from ir.rules.redistribute import hole_below_fault, indices_fault, outermost_fault, permutation_fault, placement_fault, slice_step
from ir.types import DmType
from npu_opt.dma import _check_engine, _resolve_dst
from npu_opt.fills import check_sub
from npu_opt.scalars import plain_number
from npu_opt.stagebase import Poisoned, location_of, refuse_call as _refuse
from npu_opt.tensor_data import DmTensorData
from npu_opt.trace import current
from npu_opt.views import destination_fault, dma_source
from ir.words import a_an

__all__ = ["DmRedistribute", "start", "asymmetric_slice"]

# the reference's stages: a step may follow those of a lower rank (a slice also its own kind)
_RANK = {"init": 0, "chip_shuffle": 1, "cluster_swap": 2, "chip_slice": 3, "cluster_slice": 4}


def _numbers(values: Any) -> Any:
    """A list of numpy integers as Python ints (anything else unchanged, for the rules)."""
    try:
        return [plain_number(x) for x in values]
    except TypeError:
        return values


class DmRedistribute:
    """A redistribution plan: not a tensor until `to_dm` / `to_dm_view` (REDIST-7)."""

    def __init__(self, src: Any, element: Any, window: Any, parts: list[tuple[int, int, int]], stage: str) -> None:
        self._src = src              # the tensor or read view the plan reads
        self._element = element      # the plan's Element (the declared output of its last slice)
        self._window = window        # the source Element, sliced digit ranges left as padding
        self._parts = parts          # per target: (source chip, source cluster, cell offset)
        self._stage = stage

    @property
    def type(self) -> DmType:
        t = self._src.type
        return DmType(t.dtype, t.chip, t.cluster, t.slice, self._element)

    def __repr__(self) -> str:
        return f"<DmRedistribute of {a_an(type(self._src).__name__)}: {self.type} after {self._stage}>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: _refuse(Violation(
            "REDIST-7", f"a redistribution plan has no `{name}`: it is not a tensor until `to_dm` or `to_dm_view` "
                        "copies it", help="end the plan with `.to_dm(ctx.tdma, DmTensor[...])` or "
                                          "`.to_dm_view(ctx.tdma, t.view_mut())`"), name)

    def _next(self, stage: str, **changes: Any) -> Any:
        if _RANK[stage] < _RANK[self._stage] or (_RANK[stage] == _RANK[self._stage] and "slice" not in stage):
            return _refuse(Violation("TYPE-1", f"`{stage}` cannot follow `{self._stage}` in a redistribution plan",
                                     help="write the steps in the order chip_shuffle, cluster_swap, chip_slice "
                                          "..., cluster_slice ..."), stage)
        fields = dict(element=self._element, window=self._window, parts=self._parts) | changes
        return DmRedistribute(self._src, fields["element"], fields["window"], fields["parts"], stage)

    def _regroup(self, source_of: Any) -> list[tuple[int, int, int]]:
        """Target (c, k) takes the entry of (c, k) = `source_of(c, k)` of this plan."""
        clusters = self._src.type.cluster.size
        out = []
        for t in range(len(self._parts)):
            chip, cluster = source_of(*divmod(t, clusters))
            out.append(self._parts[chip * clusters + cluster])
        return out

    def _moved(self, stage: str, source_of: Any) -> Any:
        """The step `stage` (a shuffle or the swap) that regroups the parts by `source_of`,
        refused when a target would read a part of a chip or cluster that does not exist."""
        parts = self._regroup(source_of)
        bad = placement_fault(self._src.type, [(c, k) for c, k, _ in parts], stage)
        return _refuse(bad, stage) if bad is not None else self._next(stage, parts=parts)

    def chip_shuffle(self, pattern: Any) -> Any:
        """Target chip c reads what chip `pattern[c]` holds in this plan (a permutation)."""
        items = permutation_fault(_numbers(pattern), self._src.type.chip.size, "chip_shuffle")
        if isinstance(items, Violation):
            return _refuse(items, "chip_shuffle")
        return self._moved("chip_shuffle", lambda c, k: (items[c], k))

    def cluster_swap(self) -> Any:
        """Each cluster reads what the other cluster holds in this plan (two clusters)."""
        t = self._src.type
        if t.cluster.size != 2:
            return _refuse(Violation("REDIST-6", f"`cluster_swap` swaps two clusters; `{t.cluster}` has "
                                                 f"{t.cluster.size}"), "cluster_swap")
        return self._moved("cluster_swap", lambda c, k: (c, k ^ 1))

    def _slice(self, stage: str, axis: Any, element: Any, positions: Any, dm_output: bool = True) -> Any:
        t = self._src.type
        per_chip = "chip" in stage
        step = slice_step(self._window, self._element, axis, element, t.dtype.bits, stage, dm_output)
        if isinstance(step, Violation):
            return _refuse(step, stage)
        targets = t.chip.size if per_chip else t.cluster.size
        items = indices_fault(_numbers(positions), targets, axis, "chip" if per_chip else "cluster", stage)
        if isinstance(items, Violation):
            return _refuse(items, stage)
        clusters = t.cluster.size
        parts = [(c, k, off + items[(tgt // clusters) if per_chip else (tgt % clusters)] * step.stride)
                 for tgt, (c, k, off) in enumerate(self._parts)]
        kind = "chip_slice" if per_chip else "cluster_slice"
        return self._next(kind, element=step.element, window=step.window, parts=parts)

    def chip_slice(self, axis: Any, element: Any, positions: Any) -> Any:
        """Target chip c keeps position `positions[c]` of `axis`; `element` is the Element without it."""
        return self._slice("chip_slice", axis, element, positions)

    def cluster_slice(self, axis: Any, element: Any, positions: Any) -> Any:
        """Target cluster k keeps position `positions[k]` of `axis`; `element` is the Element without it."""
        return self._slice("cluster_slice", axis, element, positions)

    def _emit(self, dst_type: Any, loc: Any, engine: str = "tdma", **into: Any) -> Any:
        tracer = current()
        sources = ",".join(f"{c}.{k}" for c, k, _ in self._parts)
        offsets = ",".join(str(off) for _, _, off in self._parts)
        op = Redistribute(src=dma_source(self._src), window=self._window, sources=sources, offsets=offsets,
                          engine=engine, result=tracer.value(dst_type), loc=loc, **into)
        tracer.emit(op)
        return DmTensorData.handle(op.result)

    def to_dm(self, dma: Any, dst: Any = None) -> Any:
        """The plan copied into a fresh DM tensor of the type `dst` (the plan's Chip and Cluster;
        its Slice and Element a DMA layout of the plan's)."""
        bad = _check_engine(dma, "to_dm")
        dst_type = bad or (_resolve_dst(dst, "dm", "to_dm") if dst is not None else self.type)
        if isinstance(dst_type, Violation):
            return _refuse(dst_type, "to_dm")
        return self._emit(dst_type, location_of("to_dm"))

    def to_dm_view(self, dma: Any, dst: Any) -> None:
        """The plan copied into the DM write view `dst` (the same one record)."""
        bad = _check_engine(dma, "to_dm_view")
        if bad is None and isinstance(dst, Poisoned):
            return
        bad = bad or destination_fault(dst, "dm", "to_dm_view")
        if bad is not None:
            _refuse(bad, "to_dm_view")
            return
        into = dst._base
        start, stride, limit = dst._runtime or (None, None, None)   # a tile at a runtime start
        result = self._emit(into.type, location_of("to_dm_view"), into=into.value, view=dst.type,
                            offset=dst._offsets, start=start, start_stride=stride, start_limit=limit)
        into.value = result.value


def _unmoved(src: Any) -> DmRedistribute:
    """The plan of no step over `src`: every target reads its own part, from offset 0."""
    t = src.type
    clusters = t.cluster.size
    parts = [(p // clusters, p % clusters, 0) for p in range(t.chip.size * clusters)]
    return DmRedistribute(src, t.element, t.element, parts, "init")


def start(src: Any, stage: str, *args: Any) -> Any:
    """The first step of a plan over the DM tensor or read view `src`."""
    if not isinstance(src.type, DmType):
        return _refuse(Violation("TYPE-6", f"`{stage}` redistributes a DM tensor"), stage)
    return getattr(_unmoved(src), stage)(*args)


def asymmetric_slice(src: Any, sub: Any, level: str, axis: Any, element: Any, positions: Any) -> Any:
    """`t.asymmetric_chip_slice(ctx.sub, axis, element, positions)` (or `_cluster_`): chip (cluster) i
    keeps position `positions[i]` of the Element's outermost digit range `axis`."""
    stage = f"asymmetric_{level}_slice"
    bad = check_sub(sub, stage)
    if bad is not None:
        return _refuse(bad, stage)
    t = src.type
    bad = outermost_fault(t.element, axis, stage) or hole_below_fault(t.element, axis, stage)
    if bad is not None:
        return _refuse(bad, stage)
    sliced = _unmoved(src)._slice(stage, axis, element, positions)
    if isinstance(sliced, Poisoned):
        return sliced
    return sliced._emit(sliced.type, location_of(stage), engine="sub")

