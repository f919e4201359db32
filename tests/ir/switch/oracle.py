"""A naive oracle for stream data, written from the mapping cells alone.

A stream array `x[slice, time, packet]` holds, at each position whose three cells are
live, the element of one logical tensor that the merged index names. `tensor_value` is
that tensor (a fixed pseudo-random function of the index), `stream_array` fills a stream
from it (padding positions get a marker that no element takes), and `expected_live`
lists, cell by cell in a plain Python loop, what a correct engine output must hold.
Nothing here calls the code under test.
"""

from __future__ import annotations

import numpy as np

from ir.mapping.cells import Index
from ir.mapping.nodes import Mapping

PAD_MARK = -1


def _weights(axes: list[str]) -> dict[str, int]:
    return {a: 1_000_003 * (i + 1) + 7919 * i * i for i, a in enumerate(sorted(axes))}


def tensor_value(index: dict[str, int], weights: dict[str, int]) -> int:
    """The tensor element at `index`: a fixed injective-enough mix of its coordinates."""
    return sum(weights[a] * (v + 1) for a, v in index.items() if a in weights) % (2**31 - 1)


def merge(*cells) -> dict[str, int] | None:
    """The index a position names (coordinates of one axis add up), None if any is padding."""
    out: dict[str, int] = {}
    for c in cells:
        if not isinstance(c, Index):
            return None
        for a in c:
            out[a] = out.get(a, 0) + c[a]
    return out


def cell_list(mp: Mapping) -> list:
    return [mp.cell(p) for p in range(mp.size)]


def stream_array(slice_: Mapping, time: Mapping, packet: Mapping, axes: list[str]) -> np.ndarray:
    """The stream of the tensor over `axes` under these mappings."""
    weights = _weights(axes)
    cs, ct, cp = cell_list(slice_), cell_list(time), cell_list(packet)
    x = np.full((len(cs), len(ct), len(cp)), PAD_MARK, dtype=np.int64)
    for s, a in enumerate(cs):
        for t, b in enumerate(ct):
            for p, c in enumerate(cp):
                index = merge(a, b, c)
                if index is not None:
                    x[s, t, p] = tensor_value(index, weights)
    return x


def expected_live(slice_: Mapping, time: Mapping, packet: Mapping, axes: list[str]) -> list[tuple]:
    """`(s, t, p, value)` for every live output position; axes outside `axes` (broadcast
    tiles) do not change the element."""
    weights = _weights(axes)
    out = []
    cs, ct, cp = cell_list(slice_), cell_list(time), cell_list(packet)
    for s, a in enumerate(cs):
        for t, b in enumerate(ct):
            for p, c in enumerate(cp):
                index = merge(a, b, c)
                if index is not None:
                    out.append((s, t, p, tensor_value(index, weights)))
    return out
