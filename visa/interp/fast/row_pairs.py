"""The integer contraction over the distinct pairs of its operands' rows (a speed shortcut,
`visa.interp.fast.speed`; issue 61 item 2).

When both operands of an integer contraction know which of their rows are equal (a switch
broadcast held by its rows, `visa.interp.fast.switch_rows`, names each row's stored row; a
TRF load of such rows notes it, `visa.interp.fast.copies`), row r's sums depend only on
its pair (stream class, weight class). The pairs of a broadcast GEMM are grids: every
stream class of a group of rows meets every weight class of the group (`a and w by
switch`: the slices of one batch element hold every (row block, column block) pair). The
groups are the connected parts of the graph whose edges are the rows' pairs; when every
part is a full grid of the same size (or at most half of its pairs go unused), one
batched matmul of (part, stream class) x (part, weight class) gives every row's sums,
each computed once, and `place` says which of them is row r's. Integer sums are exact in
any order (`ir.exact_sum`), so the bits are those of the row-by-row sums.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from visa.interp.shortcuts import frozen

__all__ = ["pair_grid", "grid_axes"]


def _parts(si: np.ndarray, wi: np.ndarray, ns: int, nw: int) -> np.ndarray:
    """The connected part of every stream class (0..ns-1) and weight class (ns..ns+nw-1)
    of the graph whose edges are the rows' (si[r], ns + wi[r]): the lowest class in it."""
    label = np.arange(ns + nw)
    while True:
        low = np.minimum(label[si], label[ns + wi])
        new = label.copy()
        np.minimum.at(new, si, low)
        np.minimum.at(new, ns + wi, low)
        new = new[new]              # jump to the label's own label: fewer rounds
        if np.array_equal(new, label):
            return label
        label = new


def pair_grid(hs: np.ndarray, hw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`_grid` of the rows' classes, remembered (a switch's and a load's rows are the same
    every run)."""
    return _remembered(np.asarray(hs, np.int64).tobytes(), np.asarray(hw, np.int64).tobytes())


@functools.lru_cache(maxsize=256)
def _remembered(hs: bytes, hw: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    return frozen(_grid(np.frombuffer(hs, np.int64), np.frombuffer(hw, np.int64)))


def _grid(hs: np.ndarray, hw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(the stream rows to multiply (parts, stream classes a part), the weight rows (parts,
    weight classes a part), each row's sums among the parts' (part, stream class, weight
    class) products, flat) for rows whose stream row hs[r] and weight row hw[r] name their
    class (the first row holding the same values); None when the parts differ in shape
    or more than half of the products would go unused."""
    us, si = np.unique(hs, return_inverse=True)
    uw, wi = np.unique(hw, return_inverse=True)
    si, wi = si.reshape(-1), wi.reshape(-1)
    ns, nw = us.size, uw.size
    label = _parts(si, wi, ns, nw)
    parts, part = np.unique(label, return_inverse=True)
    part = part.reshape(-1)
    n_s, n_w = np.bincount(part[:ns], minlength=parts.size), np.bincount(part[ns:], minlength=parts.size)
    if (n_s != n_s[0]).any() or (n_w != n_w[0]).any() or 2 * hs.size < parts.size * n_s[0] * n_w[0]:
        return None
    s_order = np.argsort(part[:ns], kind="stable")      # stream classes part by part
    w_order = np.argsort(part[ns:], kind="stable")
    s_at, w_at = np.empty(ns, np.int64), np.empty(nw, np.int64)
    s_at[s_order] = np.arange(ns) % n_s[0]               # each class's place in its part
    w_at[w_order] = np.arange(nw) % n_w[0]
    place = (part[si] * n_s[0] + s_at[si]) * n_w[0] + w_at[wi]
    return us[s_order].reshape(parts.size, -1), uw[w_order].reshape(parts.size, -1), place


_AXES: dict[int, tuple[np.ndarray, tuple[int, int, int] | None]] = {}
"""id(place) -> (place, `_axes` of it): the check runs once per `pair_grid` result (those
are remembered, so a contraction meets the same `place` every run); the entry holds
`place`, so its id is not reused while the entry exists."""


def grid_axes(pairs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[int, int, int] | None:
    """The order of the axes (part, stream class, weight class) in which the rows of
    `pairs` (`pair_grid`) run through the products: `axes` with row r's sums the
    products' grid transposed to `axes`, in C order (the rows can be written from the
    grid's view, no gather by `place`); None when no order does. Checked once per `pairs`."""
    place = pairs[2]
    hit = _AXES.get(id(place))
    if hit is not None and hit[0] is place:
        return hit[1]
    if len(_AXES) >= 256:
        _AXES.pop(next(iter(_AXES), None), None)  # as memo.py: another thread may empty it first
    found = _axes(place, (pairs[0].shape[0], pairs[0].shape[1], pairs[1].shape[1]))
    _AXES[id(place)] = (place, found)
    return found


def _axes(place: np.ndarray, dims: tuple[int, int, int]) -> tuple[int, int, int] | None:
    """`grid_axes` over the products' grid `dims` (parts, stream classes, weight classes)."""
    if place.size != dims[0] * dims[1] * dims[2]:
        return None                 # some pairs go unused: a row's sums are gathered
    grid = np.arange(place.size).reshape(dims)
    for axes in itertools.permutations(range(3)):
        if np.array_equal(grid.transpose(axes).reshape(-1), place):
            return axes
    return None
