"""The public tensor classes (`HbmTensor`, `DmTensor`, `TrfTensor`, `VrfTensor`, the views) and
what a traced tensor handle offers, assembled above the operations they run.

Subscripting a tensor class gives a `TensorSpec`: the dtype and level mappings, kept as
written and validated lazily at the first stage or annotation that uses them, so the
diagnostic carries that stage's rule ID (docs/machine/index.md). Inside a trace, instances
of the same classes are handles on traced values and offer the DMA methods. A class here is
its data (npu_opt.tensor_data, npu_opt.views) with a method per operation, each the call of
its operation module's function; an operation makes a handle of these classes through the
data class (`DmTensorData.handle(value)`), so this module imports down only.
"""

from __future__ import annotations

from typing import Any

from npu_opt.addresses import DM, at_call
from npu_opt.dma import dma_to_dm, dma_to_hbm, make_view, shuffle
from npu_opt.fills import memset, pcopy
from npu_opt.gather import gather, scatter, split_type_args
from npu_opt.gather_plan import start_gather, start_scatter
from npu_opt.method_arguments import checked_arguments
from npu_opt.redistribute import asymmetric_slice, start
from npu_opt.resident import refuse_read_only
from npu_opt.spm import to_spm
from npu_opt.tensor_data import (DmTensorData, DmTensorViewData, HbmTensorData, TensorSpec, TrfTensorData,
                                 VrfTensorData)
from npu_opt.views import (DmReadViewData, DmTensorViewMutData, HbmTensorViewData, HbmTensorViewMutData, read_view,
                           rf_reshape, write_view)

__all__ = ["TensorSpec", "HbmTensor", "DmTensor", "DmTensorView", "TrfTensor", "VrfTensor"]


@checked_arguments
class DmaCopies:
    """The Tensor DMA copies out of an HBM or DM tensor, or out of a read view of one."""

    def to_dm(self, dma: Any, dst: Any = None) -> Any:
        """Tensor DMA of the cells into a fresh DM tensor of the layout `dst` (a `DmTensor[...]`)."""
        return dma_to_dm(self, dma, dst)

    def to_dm_at(self, dma: Any, dst: Any = None, address: Any = None) -> Any:
        """`to_dm` with the DM byte `address` last: checked, not honoured (npu_opt.addresses)."""
        return at_call("to_dm_at", DM, {"dma": dma, "dst": dst, "address": address},
                       lambda dma, dst: dma_to_dm(self, dma, dst))

    def to_hbm(self, dma: Any, dst: Any = None) -> Any:
        """Tensor DMA of the cells into a fresh HBM tensor (default layout: every axis whole,
        docs/porting.md); `dst` an HBM tensor (an in-out parameter) writes into it."""
        return dma_to_hbm(self, dma, dst)


@checked_arguments
class _DmMoves:
    """The staged moves a DM tensor and a view of one both start (the methods build a plan or
    a copy of `self`, a `DmTensor` or a `DmTensorView`)."""

    def to_spm(self, dma: Any, dst: Any = None) -> Any:
        """DM -> SPM Tensor DMA into the layout `dst` (an `SpmTensor[...]`, docs/machine/spm.md)."""
        return to_spm(self, dma, dst)

    def chip_shuffle(self, shuffle_pattern: Any) -> Any:
        """A redistribution plan: target chip t reads chip `shuffle_pattern[t]` (docs/machine/topology.md)."""
        return start(self, "chip_shuffle", shuffle_pattern)

    def cluster_swap(self) -> Any:
        """A redistribution plan: the two clusters exchange their data."""
        return start(self, "cluster_swap")

    def chip_slice(self, axis: Any, element: Any, positions: Any) -> Any:
        """A redistribution plan: chip c keeps position `positions[c]` of `axis` (`element` without it)."""
        return start(self, "chip_slice", axis, element, positions)

    def cluster_slice(self, axis: Any, element: Any, positions: Any) -> Any:
        """A redistribution plan: cluster k keeps position `positions[k]` of `axis`."""
        return start(self, "cluster_slice", axis, element, positions)


@checked_arguments
class _DmScatter:
    """The scatters out of a DM tensor and out of a read view of one (npu_opt.views.DmReadView)."""

    def dma_scatter(self, index: Any, output: Any = None, key: Any = None, element2: Any = None,
                    element3: Any = None) -> Any:
        """This DM tensor into the rows of a new HBM tensor `output` (a type) at the byte
        offsets of the i32 HBM tensor `index`, one per position of the `key` axes
        (`element2`, `element3`: the reference's type arguments, the output's and the
        index's elements, checked)."""
        return scatter(self, index, output, key, element2=element2, element3=element3)

    def dma_scatter_unscaled(self, index: Any, output: Any = None, key: Any = None) -> Any:
        """Refused (SCATTER-5): the reference declares it without an implementation."""
        return scatter(self, index, output, key, scaled=False)


@checked_arguments
class HbmTensor(DmaCopies, HbmTensorData, assembles=HbmTensorData):
    """An HBM tensor: `HbmTensor[dtype, Chip, Element]`; in a trace, offers `to_dm`, `to_hbm`."""

    def view(self) -> Any:
        """A read view (`HbmTensorView`): tile it, copy it out (docs/views.md)."""
        return read_view(self)

    def view_mut(self) -> Any:
        """A write view (`HbmTensorViewMut`): the destination of `to_hbm_view` (docs/views.md)."""
        return write_view(self)

    def reshape(self, *levels: Any) -> Any:
        """`t.view().reshape(chip, element)` or `t.reshape(HbmTensor[dtype, chip, element])`:
        the read view relabelled (sizes and addresses kept)."""
        return self.view().reshape(*levels)

    def hbm_chip_shuffle(self, dma: Any, chip_dim: Any = None, shuffle_pattern: Any = ()) -> Any:
        """A new HBM tensor whose chip t holds chip `shuffle_pattern[t]` of this one."""
        return shuffle(self, dma, chip_dim, shuffle_pattern, "chip", "hbm_chip_shuffle")

    def hbm_cluster_shuffle(self, dma: Any, cluster_dim: Any = None, shuffle_pattern: Any = ()) -> Any:
        """Refused (SHUFFLE-3): an HBM tensor has no Cluster level."""
        return shuffle(self, dma, cluster_dim, shuffle_pattern, "cluster", "hbm_cluster_shuffle")

    def dma_gather_scaled(self, index: Any, dst: Any = None, index_element: Any = None) -> Any:
        """Rows of this table into DM at the byte offsets of the i32 HBM tensor `index`
        (`index_element`: the reference's `Element3`, the index's element, checked)."""
        return gather(self, index, dst, scaled=True, index_types=(("index_element", index_element, "element"),))

    def dma_gather_scaled_at(self, index: Any, dst: Any = None, index_element: Any = None,
                             address: Any = None) -> Any:
        """`dma_gather_scaled` with the DM byte `address` last: checked, not honoured (npu_opt.addresses)."""
        return at_call("dma_gather_scaled_at", DM,
                       {"index": index, "dst": dst, "index_element": index_element, "address": address},
                       lambda **values: self.dma_gather_scaled(**values))

    def dma_gather_unscaled(self, index: Any, *type_args: Any, dst: Any = None, idx_cluster: Any = None,
                            idx_slice: Any = None, idx_element: Any = None) -> Any:
        """Rows of this table into DM at the row numbers of the i32 DM tensor `index`:
        `dma_gather_unscaled(index, DmTensor[...])`, or with the reference's type arguments in
        its order, `(index, m(IdxCluster), m(IdxSlice), m(IdxElement), DmTensor[...])` (the
        index's levels, checked)."""
        dst, (idx_cluster, idx_slice, idx_element) = split_type_args(type_args, dst,
                                                                     (idx_cluster, idx_slice, idx_element))
        return gather(self, index, dst, scaled=False, index_types=(
            ("idx_cluster", idx_cluster, "cluster"), ("idx_slice", idx_slice, "slice"),
            ("idx_element", idx_element, "element")))

    def gather(self, indexed_axis: Any = None, payload: Any = None) -> Any:
        """The staged gather (v0.9): `.gather(m("K"), m("D")).by_byte_offsets(index).to_dm(...)`."""
        return start_gather(self, indexed_axis, payload)


@checked_arguments
class DmTensor(_DmMoves, _DmScatter, DmaCopies, DmTensorData, assembles=DmTensorData):
    """A DM tensor: `DmTensor[dtype, Chip, Cluster, Slice, Element]`."""

    def view(self) -> DmTensorView:
        """A read view of this tensor, the argument of `begin`."""
        return make_view(self)

    def view_mut(self) -> Any:
        """A write view (`DmTensorViewMut`): the destination of `to_dm_view` (docs/views.md);
        PARAM-1 for a read-only resident parameter (`DmTensor[...]`, not `Mut[...]`)."""
        if not self.writable:
            return refuse_read_only(self, "view_mut")
        return write_view(self)

    def reshape(self, *levels: Any) -> Any:
        """`t.view().reshape(chip, cluster, slice, element)`, or the target type
        `t.reshape(DmTensor[dtype, chip, cluster, slice, element])`: the read view relabelled."""
        return self.view().reshape(*levels)

    def to_dm_pcopy(self, sub: Any, dst: Any = None) -> Any:
        """DM -> DM parallel copy on the Sub context into the layout `dst` (docs/views.md)."""
        return pcopy(self, sub, dst)

    def to_dm_pcopy_at(self, sub: Any, dst: Any = None, address: Any = None) -> Any:
        """`to_dm_pcopy` with the DM byte `address` last: checked, not honoured (npu_opt.addresses)."""
        return at_call("to_dm_pcopy_at", DM, {"sub": sub, "dst": dst, "address": address},
                       lambda sub, dst: pcopy(self, sub, dst))

    def asymmetric_chip_slice(self, sub: Any, axis: Any, element: Any, positions: Any) -> Any:
        """A new DM tensor: chip c keeps position `positions[c]` of the outermost `axis` (on ctx.sub)."""
        return asymmetric_slice(self, sub, "chip", axis, element, positions)

    def asymmetric_cluster_slice(self, sub: Any, axis: Any, element: Any, positions: Any) -> Any:
        """A new DM tensor: cluster k keeps position `positions[k]` of the outermost `axis` (on ctx.sub)."""
        return asymmetric_slice(self, sub, "cluster", axis, element, positions)


@checked_arguments
class DmTensorView(_DmMoves, DmTensorViewData, assembles=DmTensorViewData):
    """A view of a DM tensor; pass it to `ctx.main.begin` / `ctx.sub.begin`."""

    def dm_cluster_shuffle(self, dma: Any, cluster_dim: Any = None, shuffle_pattern: Any = ()) -> Any:
        """A new DM tensor whose cluster t holds cluster `shuffle_pattern[t]` of this one."""
        return shuffle(self, dma, cluster_dim, shuffle_pattern, "cluster", "dm_cluster_shuffle")

    def dm_chip_shuffle(self, dma: Any, chip_dim: Any = None, shuffle_pattern: Any = ()) -> Any:
        """A new DM tensor whose chip t holds chip `shuffle_pattern[t]` of this one."""
        return shuffle(self, dma, chip_dim, shuffle_pattern, "chip", "dm_chip_shuffle")


@checked_arguments
class _RegisterFileTensor:
    """A TRF or VRF tensor: its words relabelled by `reshape`."""

    def reshape(self, *levels: Any) -> Any:
        """The same register-file words under the target type `TrfTensor[...]` / `VrfTensor[...]`
        (or its level mappings; the reference's `unsafe { v.reshape() }`): every level keeps its
        size (npu_opt.views.rf_reshape)."""
        return rf_reshape(self, levels)


class TrfTensor(_RegisterFileTensor, TrfTensorData, assembles=TrfTensorData):
    """A TRF tensor: `TrfTensor[dtype, Chip, Cluster, Slice, Lane, Element]`."""


class VrfTensor(_RegisterFileTensor, VrfTensorData, assembles=VrfTensorData):
    """A VRF tensor: `VrfTensor[dtype, Chip, Cluster, Slice, Element]` (i32 or f32), made by
    `.to_vrf(element)`; pass it as the operand of `vector_fxp`, `vector_clip` or
    `vector_fp_binary`."""


# The views (npu_opt.views holds their data: tiles, reshapes, the copies into a write view).
class HbmTensorView(DmaCopies, HbmTensorViewData, assembles=HbmTensorViewData):
    """A read view of an HBM tensor (`t.view()`)."""


class DmReadView(DmaCopies, _DmScatter, DmReadViewData, DmTensorView, assembles=DmReadViewData):
    """A read view of a DM tensor (`t.view()`), the argument of `begin` when untiled.
    It scatters like a tensor: the reference's `unsafe { t.reshape() }` of a DM tensor is a
    tensor, which npu-opt spells as this view (docs/porting.md)."""


@checked_arguments
class HbmTensorViewMut(HbmTensorViewMutData, assembles=HbmTensorViewMutData):
    """A write view of an HBM tensor (`t.view_mut()`)."""

    def scatter(self, indexed_axis: Any = None, payload: Any = None) -> Any:
        """The staged scatter (v0.9): `.scatter(m("C"), m("D")).by_byte_offsets(index).from_dm(...)`."""
        return start_scatter(self, indexed_axis, payload)


@checked_arguments
class DmTensorViewMut(DmTensorViewMutData, assembles=DmTensorViewMutData):
    """A write view of a DM tensor (`t.view_mut()`)."""

    def memset(self, sub: Any, value: Any) -> None:
        """Set every live cell of the view to `value`, on the Sub context."""
        memset(self, sub, value)
