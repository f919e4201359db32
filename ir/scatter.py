"""Scatters with indices held in a tensor (docs/machine/dma.md "Scatter"): the dual of a gather.

`data.dma_scatter(index, HbmTensor[...], m("K"))` writes the DM tensor `data` into rows of a
new HBM tensor (zero elsewhere): the *key* axes (`m("K")`) of the data are replaced by the
output's *scatter axes*, selected by the i32 index tensor whose axes are the key's:
`out[o, idx[k], p] = data[o, k, p]` (the last write wins for a repeated index). Index values
are byte offsets (position `r` is `r * row_bytes`). The other data axes are the rest of the
output, whose element is whole axes: the *outer* axes, the scatter region (one axis or several
consecutive ones), then the *payload*, one contiguous row. The key `m("1")` makes the whole
data one row, placed by the one value of an index over `m("1")` (a KV-cache update of one
token).

The data, re-laid as the outer axes, the key axes, then the payload in the output's order,
is the *virtual destination* a `to_hbm` would write (`virtual_rows`); the scatter then
writes its rows.

A scatter may write into a tile of an HBM tensor that is one position of its outermost axis
(a *page*: `cache.view_mut().tile(m("P"), 1, m("1 #{!} 4, C, D"), p)`, `p` maybe a runtime
start): the page is a tensor of the rest of the element, its cells one contiguous run at
`p * size` cells, and the index's byte offsets count from the page's first byte (`page_of`).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.gather import RegionRows, _whole_axes, cells, read_digits
from ir.mapping.nodes import Symbol, pair_all, pair_items
from ir.spm import positions_axes
from ir.types import HbmType

__all__ = ["ScatterShape", "scatter_shape", "virtual_rows", "page_of"]


@attrs.frozen
class ScatterShape(RegionRows):
    """The key the index runs over, the output's scatter axis and the payload rows carry."""

    key: tuple[tuple[str, int], ...]
    axis: str
    rows: int
    payload: tuple[tuple[str, int], ...]
    outer: tuple[tuple[str, int], ...] = ()    # output axes before the scatter region: one row per position
    region: tuple[tuple[str, int], ...] = ()   # the scatter axes (one, or several consecutive), `rows` positions
    splits: tuple[tuple[str, int, int], ...] = ()   # (axis, size, low digit): an output axis read as two digits

    @property
    def count(self) -> int:
        return cells(self.key)


def scatter_shape(data: Any, key: Any, index: Any, out: HbmType) -> ScatterShape | Violation:
    """The key, scatter axis and payload of a scatter, or its SCATTER-3 / SCATTER-4 violation."""
    data_axes = data.cluster.axes() | data.slice.axes() | data.element.axes()
    key_axes = _whole_axes(key)
    one_row = key_axes == () and key.size == 1   # key `1`: the whole data is the one row one index value names
    if key_axes is None or not (key_axes or one_row) or not {a for a, _ in key_axes} <= data_axes:
        return Violation("SCATTER-3", f"the scatter key `{key}` must be whole axes of the data",
                         help="name the data axes the index runs over, e.g. m(\"K\")")
    idx = _whole_axes(index.element) if index.kind == "hbm" else positions_axes(index)   # SPM: the list's domain
    if idx is None or sorted(idx) != sorted(key_axes):
        return Violation("SCATTER-3", f"the index's element `{index.element}` must list the key's axes "
                                      f"({', '.join(a for a, _ in key_axes)}), one index per key position")
    out_axes = _whole_axes(out.element)
    if out_axes is None:
        return Violation("SCATTER-4", f"the output's element `{out.element}` must list whole axes")
    payload_names = data_axes - {a for a, _ in key_axes}
    if not payload_names <= {a for a, _ in out_axes}:
        missing = sorted(payload_names - {a for a, _ in out_axes})
        return Violation("SCATTER-4", f"data axis {missing[0]} is neither in the key nor in the output")
    read = read_digits(out_axes, (data.cluster, data.slice, data.element), "SCATTER-4")
    if isinstance(read, Violation):
        return read
    out_axes, splits, kept = read
    payload_names = (payload_names - {a for a, _, _ in splits}) | kept
    names = [a for a, _ in out_axes]
    extra = [a for a in names if a not in payload_names]
    first = names.index(extra[0]) if extra else 0
    if not extra or names[first:first + len(extra)] != extra:
        what = "no axis" if not extra else f"axes {', '.join(extra)} that are not consecutive"
        return Violation("SCATTER-4", f"the output `{out.element}` has {what} besides the data's other axes "
                                      f"({', '.join(sorted(payload_names)) or 'none'}): an index value names one "
                                      "position of one consecutive region of the output's axes",
                         help="e.g. HbmTensor[dtype, Chip, m(\"A, C, D\")] for data over A, K, D and key K")
    region = out_axes[first:first + len(extra)]
    return ScatterShape(idx, ", ".join(extra), cells(region), out_axes[first + len(extra):],
                        outer=out_axes[:first], region=region, splits=splits)


def virtual_rows(data: Any, shape: ScatterShape) -> HbmType:
    """The data as the HBM tensor of its rows in index order: the output's axes outside the
    scatter region, the key axes, then the payload (each row's contiguous bytes)."""
    return HbmType(data.dtype, data.chip, pair_all([shape.term(a, n) for a, n in shape.outer + shape.key + shape.payload]))


def page_of(base: HbmType, view: Any, offsets: tuple[int, ...]) -> tuple[HbmType, int] | None:
    """(the page's own type, its first cell in the element) of the write view `view` of the HBM
    tensor type `base` shifted by `offsets` cells per level, when the view is one position of
    the element's outermost axis (`1 #{!} n, rest`, the rest as in the tensor); None otherwise."""
    if view.kind != "hbm" or offsets[0] or not view.chip.equivalent(base.chip) or view.dtype != base.dtype:
        return None
    own, tiled = pair_items(base.element), pair_items(view.element)
    if len(own) < 2 or len(own) != len(tiled) or not isinstance(own[0], Symbol):
        return None
    if tiled[0].axes() or tiled[0].size != own[0].size or not pair_all(tiled[1:]).equivalent(pair_all(own[1:])):
        return None
    page = HbmType(base.dtype, base.chip, pair_all(own[1:]))
    return page, offsets[-1]
