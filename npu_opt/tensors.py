"""Tensor types (`HbmTensor[...]`, `DmTensor[...]`, `TrfTensor[...]`) and traced tensor handles.

Subscripting a tensor class gives a `TensorSpec`: the dtype and level mappings, kept as
written and validated lazily at the first stage or annotation that uses them, so the
diagnostic carries that stage's rule ID (docs/machine/index.md). Inside a trace, instances
of the same classes are handles on traced values and offer the DMA methods.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.mapping.nodes import Mapping
from ir.types import DmType, HbmType, TrfType, VrfType

__all__ = ["TensorSpec", "HbmTensor", "DmTensor", "DmTensorView", "TrfTensor", "VrfTensor"]

# kind -> the tensor class's name, its IR type and the items of its subscript
_KINDS = {"hbm": ("HbmTensor", HbmType, ("dtype", "chip", "element")),
          "dm": ("DmTensor", DmType, ("dtype", "chip", "cluster", "slice", "element")),
          "trf": ("TrfTensor", TrfType, ("dtype", "chip", "cluster", "slice", "lane", "element")),
          "vrf": ("VrfTensor", VrfType, ("dtype", "chip", "cluster", "slice", "element"))}


@attrs.frozen
class TensorSpec:
    """A subscripted tensor type such as `DmTensor[bf16, Chip, Cluster, Slice, m("A")]`."""

    kind: str
    items: tuple[Any, ...]

    def __str__(self) -> str:
        return f"{_KINDS[self.kind][0]}[{', '.join(_item_text(x) for x in self.items)}]"

    def new(self) -> Any:
        """`HbmTensor[...].new()` / `DmTensor[...].new()`: a fresh tensor of zeros (docs/views.md)."""
        from npu_opt.views import new_tensor

        return new_tensor(self)

    def alloc(self, device: Any) -> Any:
        """`DmTensor[...].alloc(device)`: SRAM kept across launches on an `npu_opt.Device`, a
        `DmBuffer` to pass for a `DmTensor[...]` / `Mut[DmTensor[...]]` parameter (docs/parameters.md)."""
        from npu_opt.resident import alloc

        return alloc(self, device)

    def resolve(self) -> HbmType | DmType | TrfType | VrfType | Violation:
        """The IR type, or a TYPE-6 violation when the subscript has the wrong shape."""
        label, cls, names = _KINDS[self.kind]
        if len(self.items) != len(names):
            return Violation("TYPE-6", f"{label}[...] takes {len(names)} items ({', '.join(names)}), got "
                             f"{len(self.items)}", help=f"write {label}[{', '.join(names)}]")
        dtype, *maps = self.items
        if not isinstance(dtype, DType):
            return Violation("TYPE-6", f"the first item of {label}[...] must be a dtype such as bf16 or i8, not "
                             f"{type(dtype).__name__}")
        for name, mp in zip(names[1:], maps):
            if not isinstance(mp, Mapping):
                return Violation("TYPE-6", f"the {name} level of {label}[...] must be a mapping built by m(), not "
                                 f"{type(mp).__name__}", help=f'wrap it: m("{mp}")' if isinstance(mp, str) else None)
        return cls(dtype, *maps)


def _item_text(x: Any) -> str:
    return f'm("{x}")' if isinstance(x, Mapping) else str(x)


class _TensorClass:
    """What every tensor class shares: subscripting it gives its type (a `TensorSpec`; the
    `SpmTensor` of npu_opt.spm gives its own spec), and an instance is a traced value's handle."""

    KIND = ""

    def __class_getitem__(cls, items: Any) -> TensorSpec:
        if not isinstance(items, tuple):
            items = (items,)
        return TensorSpec(cls.KIND, items)

    def __init__(self, value: Any, *, writable: bool = True, label: str | None = None) -> None:
        self.value = value
        self.writable = writable  # False for a parameter not marked in-out (rule PARAM-1)
        self.label = label  # the parameter's name, for a tensor that is one

    @property
    def type(self) -> Any:
        return self.value.type

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.value}: {self.value.type}>"


class DmaCopies:
    """The Tensor DMA copies out of an HBM or DM tensor, or out of a read view of one."""

    def to_dm(self, dma: Any, dst: Any = None) -> Any:
        """Tensor DMA of the cells into a fresh DM tensor of the layout `dst` (a `DmTensor[...]`)."""
        from npu_opt.dma import dma_to_dm

        return dma_to_dm(self, dma, dst)

    def to_hbm(self, dma: Any, dst: Any = None) -> Any:
        """Tensor DMA of the cells into a fresh HBM tensor (default layout: every axis whole,
        docs/porting.md); `dst` an HBM tensor (an in-out parameter) writes into it."""
        from npu_opt.dma import dma_to_hbm

        return dma_to_hbm(self, dma, dst)


class _DmMoves:
    """The staged moves a DM tensor and a view of one both start (the methods build a plan or
    a copy of `self`, a `DmTensor` or a `DmTensorView`)."""

    def to_spm(self, dma: Any, dst: Any = None) -> Any:
        """DM -> SPM Tensor DMA into the layout `dst` (an `SpmTensor[...]`, docs/machine/spm.md)."""
        from npu_opt.spm import to_spm

        return to_spm(self, dma, dst)

    def chip_shuffle(self, shuffle_pattern: Any) -> Any:
        """A redistribution plan: target chip t reads chip `shuffle_pattern[t]` (docs/machine/topology.md)."""
        from npu_opt.redistribute import start

        return start(self, "chip_shuffle", shuffle_pattern)

    def cluster_swap(self) -> Any:
        """A redistribution plan: the two clusters exchange their data."""
        from npu_opt.redistribute import start

        return start(self, "cluster_swap")

    def chip_slice(self, axis: Any, element: Any, positions: Any) -> Any:
        """A redistribution plan: chip c keeps position `positions[c]` of `axis` (`element` without it)."""
        from npu_opt.redistribute import start

        return start(self, "chip_slice", axis, element, positions)

    def cluster_slice(self, axis: Any, element: Any, positions: Any) -> Any:
        """A redistribution plan: cluster k keeps position `positions[k]` of `axis`."""
        from npu_opt.redistribute import start

        return start(self, "cluster_slice", axis, element, positions)


class _DmScatter:
    """The scatters out of a DM tensor and out of a read view of one (npu_opt.views.DmReadView)."""

    def dma_scatter(self, index: Any, output: Any = None, key: Any = None, element2: Any = None,
                    element3: Any = None) -> Any:
        """This DM tensor into the rows of a new HBM tensor `output` (a type) at the byte
        offsets of the i32 HBM tensor `index`, one per position of the `key` axes
        (`element2`, `element3`: the reference's type arguments, the output's and the
        index's elements, checked)."""
        from npu_opt.gather import scatter

        return scatter(self, index, output, key, element2=element2, element3=element3)

    def dma_scatter_unscaled(self, index: Any, output: Any = None, key: Any = None) -> Any:
        """Refused (SCATTER-5): the reference declares it without an implementation."""
        from npu_opt.gather import scatter

        return scatter(self, index, output, key, scaled=False)


class HbmTensor(DmaCopies, _TensorClass):
    """An HBM tensor: `HbmTensor[dtype, Chip, Element]`; in a trace, offers `to_dm`, `to_hbm`."""

    KIND = "hbm"

    def view(self) -> Any:
        """A read view (`HbmTensorView`): tile it, copy it out (docs/views.md)."""
        from npu_opt.views import read_view

        return read_view(self)

    def view_mut(self) -> Any:
        """A write view (`HbmTensorViewMut`): the destination of `to_hbm_view` (docs/views.md)."""
        from npu_opt.views import write_view

        return write_view(self)

    def reshape(self, *levels: Any) -> Any:
        """`t.view().reshape(chip, element)` or `t.reshape(HbmTensor[dtype, chip, element])`:
        the read view relabelled (sizes and addresses kept)."""
        return self.view().reshape(*levels)
    def hbm_chip_shuffle(self, dma: Any, chip_dim: Any = None, shuffle_pattern: Any = ()) -> Any:
        """A new HBM tensor whose chip t holds chip `shuffle_pattern[t]` of this one."""
        from npu_opt.dma import shuffle

        return shuffle(self, dma, chip_dim, shuffle_pattern, "chip", "hbm_chip_shuffle")

    def hbm_cluster_shuffle(self, dma: Any, cluster_dim: Any = None, shuffle_pattern: Any = ()) -> Any:
        """Refused (SHUFFLE-3): an HBM tensor has no Cluster level."""
        from npu_opt.dma import shuffle

        return shuffle(self, dma, cluster_dim, shuffle_pattern, "cluster", "hbm_cluster_shuffle")

    def dma_gather_scaled(self, index: Any, dst: Any = None, index_element: Any = None) -> Any:
        """Rows of this table into DM at the byte offsets of the i32 HBM tensor `index`
        (`index_element`: the reference's `Element3`, the index's element, checked)."""
        from npu_opt.gather import gather

        return gather(self, index, dst, scaled=True, index_types=(("index_element", index_element, "element"),))

    def dma_gather_unscaled(self, index: Any, *type_args: Any, dst: Any = None, idx_cluster: Any = None,
                            idx_slice: Any = None, idx_element: Any = None) -> Any:
        """Rows of this table into DM at the row numbers of the i32 DM tensor `index`:
        `dma_gather_unscaled(index, DmTensor[...])`, or with the reference's type arguments in
        its order, `(index, m(IdxCluster), m(IdxSlice), m(IdxElement), DmTensor[...])` (the
        index's levels, checked)."""
        from npu_opt.gather import gather, split_type_args

        dst, (idx_cluster, idx_slice, idx_element) = split_type_args(type_args, dst,
                                                                     (idx_cluster, idx_slice, idx_element))
        return gather(self, index, dst, scaled=False, index_types=(
            ("idx_cluster", idx_cluster, "cluster"), ("idx_slice", idx_slice, "slice"),
            ("idx_element", idx_element, "element")))

    def gather(self, indexed_axis: Any = None, payload: Any = None) -> Any:
        """The staged gather (v0.9): `.gather(m("K"), m("D")).by_byte_offsets(index).to_dm(...)`."""
        from npu_opt.gather_plan import start_gather

        return start_gather(self, indexed_axis, payload)


class DmTensor(_DmMoves, _DmScatter, DmaCopies, _TensorClass):
    """A DM tensor: `DmTensor[dtype, Chip, Cluster, Slice, Element]`."""

    KIND = "dm"

    def view(self) -> DmTensorView:
        """A read view of this tensor, the argument of `begin`."""
        from npu_opt.dma import make_view

        return make_view(self)

    def view_mut(self) -> Any:
        """A write view (`DmTensorViewMut`): the destination of `to_dm_view` (docs/views.md);
        PARAM-1 for a read-only resident parameter (`DmTensor[...]`, not `Mut[...]`)."""
        from npu_opt.views import write_view

        if not self.writable:
            from npu_opt.resident import refuse_read_only

            return refuse_read_only(self, "view_mut")
        return write_view(self)

    def reshape(self, *levels: Any) -> Any:
        """`t.view().reshape(chip, cluster, slice, element)`, or the target type
        `t.reshape(DmTensor[dtype, chip, cluster, slice, element])`: the read view relabelled."""
        return self.view().reshape(*levels)
    def to_dm_pcopy(self, sub: Any, dst: Any = None) -> Any:
        """DM -> DM parallel copy on the Sub context into the layout `dst` (docs/views.md)."""
        from npu_opt.fills import pcopy

        return pcopy(self, sub, dst)

    def asymmetric_chip_slice(self, sub: Any, axis: Any, element: Any, positions: Any) -> Any:
        """A new DM tensor: chip c keeps position `positions[c]` of the outermost `axis` (on ctx.sub)."""
        from npu_opt.redistribute import asymmetric_slice

        return asymmetric_slice(self, sub, "chip", axis, element, positions)

    def asymmetric_cluster_slice(self, sub: Any, axis: Any, element: Any, positions: Any) -> Any:
        """A new DM tensor: cluster k keeps position `positions[k]` of the outermost `axis` (on ctx.sub)."""
        from npu_opt.redistribute import asymmetric_slice

        return asymmetric_slice(self, sub, "cluster", axis, element, positions)


class DmTensorView(_DmMoves, _TensorClass):
    """A view of a DM tensor; pass it to `ctx.main.begin` / `ctx.sub.begin`."""

    KIND = "dm"

    def dm_cluster_shuffle(self, dma: Any, cluster_dim: Any = None, shuffle_pattern: Any = ()) -> Any:
        """A new DM tensor whose cluster t holds cluster `shuffle_pattern[t]` of this one."""
        from npu_opt.dma import shuffle

        return shuffle(self, dma, cluster_dim, shuffle_pattern, "cluster", "dm_cluster_shuffle")

    def dm_chip_shuffle(self, dma: Any, chip_dim: Any = None, shuffle_pattern: Any = ()) -> Any:
        """A new DM tensor whose chip t holds chip `shuffle_pattern[t]` of this one."""
        from npu_opt.dma import shuffle

        return shuffle(self, dma, chip_dim, shuffle_pattern, "chip", "dm_chip_shuffle")


class _RegisterFileTensor(_TensorClass):
    """A TRF or VRF tensor: its words relabelled by `reshape`."""

    def reshape(self, *levels: Any) -> Any:
        """The same register-file words under the target type `TrfTensor[...]` / `VrfTensor[...]`
        (or its level mappings; the reference's `unsafe { v.reshape() }`): every level keeps its
        size (npu_opt.views.rf_reshape)."""
        from npu_opt.views import rf_reshape

        return rf_reshape(self, levels)


class TrfTensor(_RegisterFileTensor):
    """A TRF tensor: `TrfTensor[dtype, Chip, Cluster, Slice, Lane, Element]`."""

    KIND = "trf"


class VrfTensor(_RegisterFileTensor):
    """A VRF tensor: `VrfTensor[dtype, Chip, Cluster, Slice, Element]` (i32 or f32), made by
    `.to_vrf(element)`; pass it as the operand of `vector_fxp`, `vector_clip` or
    `vector_fp_binary`."""

    KIND = "vrf"
