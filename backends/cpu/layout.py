"""Buffers of the cpu backend: shapes, storage dtypes and live spatial rows (docs/machine/index.md).

Every value has one numpy buffer of the shape of docs/machine/index.md: `Hbm` (chip, element),
`Dm` (chip, cluster, slice, element), `Trf` (+ lane), `Stream` (chip, cluster, slice, time,
packet), `CStream` (chip, cluster, slice, lane, time, packet). Floats are stored as their
bit patterns (uint16 bf16, uint8 f8/f4, uint32 f32); integers as host values (i4 and i5 in
int8, i9 in int16). Every padding cell holds zero. Inside the three intermediate
contraction stages (`CStream`) the accumulator values are float32 / int32 numbers.
"""

from __future__ import annotations

import functools

import numpy as np

from backends.cpu import arena
from backends.cpu.keys import logical_pad
from ir.dtypes import DType
from ir.mapping.nodes import Mapping, pair_all
from ir.types import CStreamType, DmType, HbmType, StreamType, TrfType, Type, VrfType

__all__ = [
    "storage_dtype", "shape_of", "spatial_levels", "local_levels", "live_rows", "n_rows",
    "rows_view", "from_rows", "local_pad", "zero_padding", "zero_padding_in_place", "even_rows",
]

_STAGING = {"i5": np.dtype(np.int8), "i9": np.dtype(np.int16)}


def storage_dtype(dtype: DType) -> np.dtype:
    """numpy dtype of a buffer of `dtype`: bits for floats, host values for integers."""
    if dtype.value in _STAGING:
        return _STAGING[dtype.value]
    return dtype.bits_dtype if dtype.is_float else dtype.host_dtype


def spatial_levels(t: Type) -> tuple[Mapping, ...]:
    """The levels every Tensor Unit stage keeps: (chip, cluster, slice); (chip,) for HBM."""
    if isinstance(t, HbmType):
        return (t.chip,)
    return (t.chip, t.cluster, t.slice)


def local_levels(t: Type) -> tuple[Mapping, ...]:
    """The per-slice levels: (element), (lane, element), (time, packet), (lane, time, packet)."""
    if isinstance(t, (HbmType, DmType, VrfType)):
        return (t.element,)
    if isinstance(t, TrfType):
        return (t.lane, t.element)
    if isinstance(t, StreamType):
        return (t.time, t.packet)
    if isinstance(t, CStreamType):
        return (t.lane, t.time, t.packet)
    raise TypeError(f"no buffer layout for {t!r}")


def shape_of(t: Type) -> tuple[int, ...]:
    """Buffer shape of docs/machine/index.md: one dimension per level."""
    return tuple(mp.size for mp in (*spatial_levels(t), *local_levels(t)))


@functools.lru_cache(maxsize=512)
def _live_rows(levels: tuple[Mapping, ...]) -> np.ndarray:
    pad = logical_pad(levels)
    return np.flatnonzero(~pad)


def live_rows(t: Type) -> np.ndarray:
    """Flat indices of the live (chip, cluster, slice) positions, in order.

    Tensor Unit stages compute only these rows; padded slices stay zero."""
    return _live_rows(spatial_levels(t))


@functools.lru_cache(maxsize=512)
def _spatial(levels: tuple[Mapping, ...]) -> tuple[int, tuple[int, ...], np.ndarray, slice | None]:
    """(positions, their shape, live rows, the live rows as a slice or None) of spatial
    `levels`: found once per layout (a traced kernel steps the same types every run)."""
    rows = _live_rows(levels)
    return pair_all(list(levels)).size, tuple(mp.size for mp in levels), rows, _even(rows)


def even_rows(t: Type) -> slice | None:
    """The live spatial rows of `t` as a slice when they are evenly spaced, else None."""
    return _spatial(spatial_levels(t))[3]


def n_rows(t: Type) -> int:
    """Number of (chip, cluster, slice) positions, padding included."""
    return _spatial(spatial_levels(t))[0]


def rows_view(buf: np.ndarray, t: Type) -> np.ndarray:
    """The live spatial rows of a buffer as an array (rows, *local)."""
    levels = spatial_levels(t)
    total, _, rows, even = _spatial(levels)
    flat = buf.reshape(total, *buf.shape[len(levels):])
    if len(rows) == len(flat):
        return flat
    return flat[even] if even is not None else flat[rows]


def _even(rows: np.ndarray) -> slice | None:
    """The live rows as a slice when they are evenly spaced (then views need no copy)."""
    if len(rows) == 0:
        return None
    step = int(rows[1] - rows[0]) if len(rows) > 1 else 1
    if step > 0 and np.array_equal(rows, rows[0] + step * np.arange(len(rows))):
        return slice(int(rows[0]), int(rows[-1]) + 1, step)
    return None


def from_rows(values: np.ndarray, t: Type) -> np.ndarray:
    """A full buffer of type `t` holding `values` in its live spatial rows, zero elsewhere."""
    levels = spatial_levels(t)
    total, spatial_shape, rows, even = _spatial(levels)
    if len(rows) == total:
        return values.reshape(*spatial_shape, *values.shape[1:])
    shape, dtype = (total, *values.shape[1:]), values.dtype
    if len(rows) * 4 <= total:  # mostly padding rows: fresh zero pages, only the live rows written
        out = arena.zeros(shape, dtype, sparse=True)
    elif even is not None and even.step == 1:  # one run of live rows: zero only the rows around it
        out = arena.empty(shape, dtype)
        out[:even.start] = 0
        out[even.stop:] = 0
    else:  # the padding rows kept zero from a run before (issue 61: drawn_s103_0's result, 192
        # live rows of 512 in runs of 12, zeroed 4 MiB every run before its DMA to the host)
        out, zeroed = arena.empty_noted(shape, dtype, ("zero off rows", levels))
        if not zeroed:
            out.fill(0)
    out[even if even is not None else rows] = values
    return out.reshape(*spatial_shape, *values.shape[1:])


def new_rows(t: Type, tail: tuple[int, ...], dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(buffer, live rows): a new buffer of type `t` (cells `tail` per spatial row) whose
    padding rows hold zero, and its live rows (rows, *tail) as a writeable view when
    they are one run (else a new array, to be placed with `from_rows`); a handler fills
    the live rows in place instead of copying a result into `from_rows`."""
    total, spatial_shape, rows, even = _spatial(spatial_levels(t))
    if len(rows) == total:
        even = slice(0, total, 1)
    if even is None or even.step != 1:
        live = np.empty((len(rows), *tail), dtype)
        return live, live
    out = arena.empty((total, *tail), dtype)
    out[:even.start] = 0
    out[even.stop:] = 0
    return out.reshape(*spatial_shape, *tail), out[even]


@functools.lru_cache(maxsize=256)
def local_pad(levels: tuple[Mapping, ...]) -> np.ndarray:
    """The padding flag of every per-slice cell of these local levels (kept: a traced kernel
    steps the same types every run)."""
    pad = logical_pad(levels)
    pad.setflags(write=False)
    return pad


def zero_padding(out: np.ndarray, t: Type) -> np.ndarray:
    """The full buffer `out` of type `t` with its padding cells and padding rows set to zero."""
    rows = np.zeros(n_rows(t), bool)
    rows[live_rows(t)] = True
    pad = ~rows[:, None] | local_pad(local_levels(t))[None, :]
    return np.where(pad.reshape(out.shape), np.zeros((), out.dtype), out)


def zero_padding_in_place(out: np.ndarray, t: Type) -> np.ndarray:
    """`zero_padding` written into `out` itself (a C-contiguous buffer its caller owns): no
    mask or copy of the whole buffer (a switch's 32 MiB result took 48 MiB more, issue 61)."""
    cells = out.reshape(n_rows(t), -1)
    rows = np.ones(n_rows(t), bool)
    rows[live_rows(t)] = False
    cells[rows] = 0
    local = local_pad(local_levels(t))
    if local.any():
        cells[:, local] = 0
    return out
