"""Sampled checks that an operand's values differ along a digit of its layout.

Before a contraction compares an operand's values along a digit in full (to find the digits
they repeat along: `contract_fast._value_independent`), a few scattered cells are compared
with the cells one step further along it, at places drawn once per layout with a fixed
seed. One difference among them proves the values do not repeat there, which is the common
answer (issue 61: the full comparison of a 9-axis view took 20-40 us, three a contraction
each run); no difference leaves the question to the full comparison.
"""

from __future__ import annotations

import functools
from typing import Protocol

import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.cpu.gathers import Gather, cells_view
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.lru import MISSING, Lru

__all__ = ["SAMPLES", "apart", "differs", "sampled"]

SAMPLES = 64
"""Cells `contract_fast._repeats` compares at fixed scattered places before comparing every cell."""


@functools.lru_cache(maxsize=256)
def sampled(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, int]:
    """The element offsets, in a view of `shape` and element `strides` (rows, n, ...), of
    `SAMPLES` places spread over it (drawn once, with a fixed seed) at position 0 of axis 1
    and at a later one, and the offset of its last cell."""
    rng = np.random.default_rng(len(shape))
    at = [rng.integers(0, n, SAMPLES) for n in shape]
    rest = sum(i * st for k, (i, st) in enumerate(zip(at, strides)) if k != 1)
    last = sum((n - 1) * st for n, st in zip(shape, strides))
    return rest, rest + rng.integers(1, shape[1], SAMPLES) * strides[1], last


def differs(view: np.ndarray) -> bool:
    """Whether `SAMPLES` scattered cells of `view` (rows, n, ...; n > 1) differ from their
    position 0 along axis 1: two takes from the memory it spans (an index array per axis took
    as long as comparing a whole row); False when its strides are not all whole and >= 0."""
    steps = tuple(st // view.itemsize for st in view.strides)
    if view.size == 0 or any(st < 0 or st % view.itemsize for st in view.strides):
        return False
    first, later, last = sampled(view.shape, steps)
    flat = as_strided(view, (last + 1,), (view.itemsize,), writeable=False)
    return bool((flat.take(first) != flat.take(later)).any())


@functools.lru_cache(maxsize=256)
def _apart_samples(shape: tuple[int, ...], steps: tuple[int, ...],
                   axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, int]:
    """For a view of `shape` and element `steps`: the element offsets of `SAMPLES` places
    (drawn once, with a fixed seed) at position 0 of each axis of `axes`, and of the same
    places at a later position of that axis, every axis's in one array each; and the offset
    of its last cell."""
    rng = np.random.default_rng(len(shape))
    firsts, laters = [], []
    for axis in axes:
        at = [rng.integers(0, n, SAMPLES) if k != axis else 0 for k, n in enumerate(shape)]
        first = sum(i * st for i, st in zip(at, steps))
        firsts.append(first)
        laters.append(first + rng.integers(1, shape[axis], SAMPLES) * steps[axis])
    return np.concatenate(firsts), np.concatenate(laters), sum((n - 1) * st for n, st in zip(shape, steps))


_APART: Lru = Lru(256)  # `_base_places` by the lazy form, the base's shape and the gather


class Operand(Protocol):
    """What `apart` reads of a contraction operand (`contract_fast._Operand`)."""

    lazy: LazyRows | None

    @property
    def raw(self) -> np.ndarray: ...

    def in_place(self, gather: Gather) -> tuple[np.ndarray, tuple[int, ...]] | None: ...


def apart(op: Operand, gather: Gather, candidates: tuple[int, ...]) -> bool:
    """Whether the operand's values differ along every candidate digit at some of `SAMPLES`
    scattered cells (then they repeat along none: `contract_fast._value_independent` is
    empty), by one take of each side from an affine read at offsets drawn once per layout.
    False when that does not tell (a repeat, a read by index, a negative stride); the exact
    check then runs. (Issue 61: the stationary operand of `drawn_s101_0`, new each tile,
    took 0.3 ms a tile in views and takes per digit and the run's memo key.)"""
    found = _places(op, gather, candidates)
    if found is None:
        return False
    flat, first, later, n_axes = found
    return bool((flat.take(first) != flat.take(later)).reshape(n_axes, SAMPLES).any(axis=1).all())


def _places(op: Operand, gather: Gather, candidates: tuple[int, ...]) -> tuple | None:
    """`_apart_view`; of a move not copied yet whose base is C-contiguous, its base's memory
    as a flat view and the places as offsets into it, found once per layout (`_base_places`):
    no strided view made each run (issue 61: ~0.15 ms a call, four a run of `drawn_s101_0`)."""
    lazy = op.lazy
    if lazy is None or not lazy.base.flags.c_contiguous:
        return _apart_view(op, gather, candidates)
    base = lazy.base
    key = (lazy.form, lazy.n_dst, base.shape, base.dtype.str, gather, candidates)
    places = _APART.get(key, MISSING)
    if places is MISSING:
        places = _APART.put(key, _base_places(op, base, gather, candidates))
    return None if places is None else (base.reshape(-1), *places)


def _apart_view(op: Operand, gather: Gather,
                candidates: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    """(the memory an affine read of the operand spans, from its first cell, as a flat view;
    the element offsets in it of `SAMPLES` places at position 0 of each candidate axis and
    of the same places further along it; the number of axes), or None when the read is not
    one `apart` can sample."""
    found = op.in_place(gather)
    if found is not None:
        view = found[0]
    elif op.lazy is None and gather.offset is not None:
        view = cells_view(op.raw, gather)
    else:
        return None
    item, axes = view.itemsize, tuple(1 + gather.digits.index(k) for k in candidates)
    if view.size == 0 or any(st < 0 or st % item for st in view.strides) or any(view.shape[a] < 2 for a in axes):
        return None
    first, later, last = _apart_samples(view.shape, tuple(st // item for st in view.strides), axes)
    return as_strided(view, (last + 1,), (item,), writeable=False), first, later, len(axes)


def _base_places(op: Operand, base: np.ndarray, gather: Gather, candidates: tuple[int, ...]) -> tuple | None:
    """`_apart_view`'s places as element offsets into the lazy operand's base (C-contiguous),
    read-only: (first, later, number of axes), or None."""
    found = _apart_view(op, gather, candidates)
    if found is None:
        return None
    flat, first, later, n_axes = found
    start = (flat.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // base.itemsize
    first, later = first + start, later + start
    for a in (first, later):
        a.setflags(write=False)
    return first, later, n_axes
