"""Scatters with indices held in a tensor (docs/machine/dma.md "Scatter"): the dual of a gather.

`data.dma_scatter(index, HbmTensor[...], m("K"))` writes the DM tensor `data` into rows of a
new HBM tensor (zero elsewhere): the *key* axes (`m("K")`) of the data are replaced by the
output's one *scatter axis*, selected by the i32 index tensor whose axes are the key's:
`out[idx[k], p] = data[k, p]` (the last write wins for a repeated index). Index values are
byte offsets (row `r` is `r * row_bytes`). The other data axes (the payload) are the rest of
the output, whose element is the scatter axis then the payload, whole axes. The key `m("1")`
makes the whole data one row, placed by the one value of an index over `m("1")` (a KV-cache
update of one token).

The data, re-laid as the key axes then the payload in the output's order, is the *virtual
destination* a `to_hbm` would write (`virtual_rows`); the scatter then writes its rows.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.gather import _whole_axes, cells
from ir.mapping.nodes import Symbol, pair_all
from ir.spm import positions_axes
from ir.types import HbmType

__all__ = ["ScatterShape", "scatter_shape", "virtual_rows"]


@attrs.frozen
class ScatterShape:
    """The key the index runs over, the output's scatter axis and the payload rows carry."""

    key: tuple[tuple[str, int], ...]
    axis: str
    rows: int
    payload: tuple[tuple[str, int], ...]

    @property
    def row_cells(self) -> int:
        return cells(self.payload)

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
    extra = [a for a, _ in out_axes if a not in payload_names]
    if len(extra) != 1 or out_axes[0][0] != extra[0]:
        return Violation("SCATTER-4", f"the output `{out.element}` must be one scatter axis, outermost, then the "
                                      f"data's other axes ({', '.join(sorted(payload_names)) or 'none'})",
                         help="e.g. HbmTensor[dtype, Chip, m(\"C, D\")] for data over K, D and key K")
    payload = tuple(x for x in out_axes if x[0] != extra[0])
    return ScatterShape(idx, extra[0], out_axes[0][1], payload)


def virtual_rows(data: Any, shape: ScatterShape) -> HbmType:
    """The data as the HBM tensor of its rows in index order: the key axes, then the payload."""
    return HbmType(data.dtype, data.chip, pair_all([Symbol(a, n) for a, n in shape.key + shape.payload]))
