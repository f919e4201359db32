"""The host array of an HBM tensor: which element positions a numpy array holds, and how.

The convention every executing backend follows at the boundary of `run` (docs page
"Kernel parameters and results"): the array has one dimension per top-level term of
the HBM element mapping (`m("A, B")` has two terms, `m("1")` one), outermost first;
a dimension is as long as its term has live positions, so padding (`PC # 8`) is not
part of the array and reads as zero in HBM, split digits (`A / 16`, `A % 4`) are
dimensions of their own, and a reordered element (`m("B, A")`) is a transposed array.
A broadcast term (`4`: positions that hold no axis) is a dimension of its full length
holding every copy; its copies must agree on input (`broadcast_dims` names them).

Both backends place the array into the element buffer with `live_positions`: host
index `i` along dimension `d` is the `i`-th live position of term `d`.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np

from ir.errors import NpuOptError
from ir.mapping.cells import LIVE
from ir.mapping.factors import RaggedFactor
from ir.mapping.nodes import Mapping, pair_items

__all__ = ["refuse_masked", "terms", "host_shape", "live_positions", "broadcast_dims", "element_index", "term_sizes",
           "place", "select", "joint_padding"]


def terms(element: Mapping) -> tuple[Mapping, ...]:
    """The top-level terms of an element mapping, outermost first."""
    return tuple(pair_items(element))


@functools.lru_cache(maxsize=256)
def live_positions(element: Mapping) -> tuple[np.ndarray, ...]:
    """Per term, the positions (in the term's own range) that hold data, ascending."""
    out = []
    for term in terms(element):
        status = term.cells(np.arange(term.size, dtype=np.int64)).status
        out.append(np.flatnonzero(status == LIVE).astype(np.int64))
    return tuple(out)


def host_shape(element: Mapping) -> tuple[int, ...]:
    """The shape of the host array: the live length of every term (`m("A, R # 8")` is (|A|, |R|))."""
    return tuple(len(p) for p in live_positions(element))


def broadcast_dims(element: Mapping) -> tuple[int, ...]:
    """Host dimensions whose term names no axis and is longer than one (pure broadcasts)."""
    return tuple(d for d, term in enumerate(terms(element)) if not term.axes() and len(live_positions(element)[d]) > 1)


def element_index(element: Mapping) -> tuple[np.ndarray, ...] | None:
    """The `np.ix_` index that selects the host array out of a buffer shaped by the term
    sizes, or None when every position of every term is live (then it is a plain reshape)."""
    live = live_positions(element)
    if all(len(p) == term.size for p, term in zip(live, terms(element))):
        return None
    return np.ix_(*live)


def term_sizes(element: Mapping) -> tuple[int, ...]:
    """The full length of every term (padding included): the buffer's element shape."""
    return tuple(term.size for term in terms(element))


@functools.lru_cache(maxsize=64)
def joint_padding(element: Mapping) -> np.ndarray | None:
    """The flat buffer positions that are padding of the element mapping though live in each
    of its terms (`T # 12 / 4, P, T # 12 % 4` at T = 10, 11), or None when there are none:
    the host array holds them, HBM reads them as zero."""
    if not any(isinstance(f, RaggedFactor) for f in element.factors()):  # padding only in whole terms
        return None
    status = element.cells(np.arange(element.size, dtype=np.int64)).status
    per_term = np.ones(term_sizes(element), bool)
    index = element_index(element)
    if index is not None:
        per_term[:] = False
        per_term[index] = True
    joint = (status != LIVE) & per_term.reshape(-1)
    return joint if joint.any() else None


def place(values: np.ndarray, element: Mapping) -> np.ndarray:
    """The flat element buffer (every position, padding zero) of a host array `values`."""
    index = element_index(element)
    pad = joint_padding(element)
    if index is None and pad is None:
        return values.reshape(-1)
    out = np.zeros(term_sizes(element), values.dtype)
    if index is None:
        out[...] = values
    else:
        out[index] = values
    out = out.reshape(-1)
    if pad is not None:
        out[pad] = 0
    return out


def select(flat: np.ndarray, element: Mapping) -> np.ndarray:
    """The host array held by a flat element buffer (the inverse of `place` on live cells)."""
    index = element_index(element)
    shaped = flat.reshape(term_sizes(element))
    return shaped if index is None else shaped[index]


def refuse_masked(what: str, array: Any) -> None:
    """USAGE for a numpy masked array (`numpy.ma`): a kernel reads every value, so its mask
    would be silently ignored (`what` names the parameter or buffer). A masked array exists
    only once `numpy.ma` is imported: until then the check imports nothing (`np.ma` would
    import it, 0.5 MiB, on a run's first call: issue 61, first-run memory)."""
    ma = sys.modules.get("numpy.ma")
    if ma is not None and isinstance(array, ma.MaskedArray):
        raise NpuOptError(f"{what} is a masked array (numpy.ma): a kernel reads every value and would ignore the "
                          "mask; pass `array.filled(value)` to choose what masked cells hold, or `array.data` for "
                          "them as they are", code="USAGE")
