"""What the Switch and Transpose Engines do to data, element by element, on numpy arrays.

A stream's data is an array indexed `[slice, time, packet...]` (positions of its Slice,
Time and Packet mappings). These functions take a legal switch or transpose (the rules
in `ir.switch.rules`, `ir.switch.custom` and `ir.transpose.rules` accepted it) and return
the output stream's array. They are the one definition the cpu backend and the VISA
interpreter are both meant to call.

The named switch configurations are written from the engine's description alone (cut the
slice and time positions into their digits, reorder, copy along the tiles), never from
the mappings; CUSTOM_BROADCAST follows the routes its mappings define. Output positions
the engine does not write (a dropped padding column of the transpose, a padded row
lane) hold `fill`.
"""

from __future__ import annotations

import numpy as np

from ir.diagnostic import Violation
from ir.mapping.nodes import Mapping
from ir.switch.config import (
    Broadcast01, Broadcast1, CustomBroadcast, Forwarding, InterTranspose, SwitchVariant, Transpose,
    TransposedBroadcast1,
)
from ir.switch.custom import route_table
from ir.transpose.params import TransposeParams

__all__ = ["switch_data", "named_switch_data", "custom_switch_data", "packet_map", "transpose_data", "transpose_cells", "turned_tiles"]


def named_switch_data(x: np.ndarray, config: SwitchVariant) -> np.ndarray:
    """The data movement of a named configuration on `x[slice, time, packet...]`."""
    if isinstance(config, Forwarding):
        return x.copy()
    n_slice, n_time, packet = x.shape[0], x.shape[1], x.shape[2:]
    s1, s0 = config.slice1, config.slice0
    s2 = n_slice // (s1 * s0)
    if isinstance(config, Broadcast01):
        t0 = config.time0
        v = x.reshape(s2, s1, s0, n_time // t0, t0, *packet)
        # [s2, s1, s0, t1, t0] -> [s2, X, Y | t1, s1, t0, s0]
        out = v.transpose(0, 3, 1, 4, 2, *range(5, v.ndim))
        out = np.broadcast_to(out[:, None, None], (s2, s1, s0, *out.shape[1:]))
        return _written(out, (n_slice, n_time * s1 * s0, *packet))
    if isinstance(config, (Broadcast1, TransposedBroadcast1)):  # one slice digit moves to the innermost Time
        v = x.reshape(s2, s1, s0, n_time, *packet)
        moved, kept = (1, 2) if isinstance(config, Broadcast1) else (2, 1)  # BROADCAST1 moves s1, the other s0
        out = v.transpose(0, kept, 3, moved, *range(4, v.ndim))  # [s2, kept, t, moved]
        out = np.broadcast_to(out[:, None], (s2, v.shape[moved], *out.shape[1:]))  # [s2, tile, kept | t, moved]
        return _written(out, (n_slice, n_time * v.shape[moved], *packet))
    if isinstance(config, Transpose):
        v = x.reshape(s2, s1, s0, n_time, *packet)
        return _written(v.transpose(0, 2, 1, *range(3, v.ndim)), x.shape)
    if isinstance(config, InterTranspose):
        t0 = config.time0
        v = x.reshape(s2, s1, s0, n_time // (s1 * t0), s1, t0, *packet)
        # [s2, s1, s0, t2, t1, t0] -> [s2, t1, s0 | t2, t0, s1]
        out = v.transpose(0, 4, 2, 3, 5, 1, *range(6, v.ndim))
        return _written(out, x.shape)
    raise TypeError(f"not a named switch configuration: {config!r}")


def _written(cells: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A new C-order array of `shape` holding `cells` (a transposed or broadcast view) in C
    order, written once: `cells.reshape(shape).copy()` copies twice when the reshape of the
    view is itself a copy (a first run held the output twice, issue 61)."""
    out = np.empty(shape, cells.dtype)
    out.reshape(cells.shape)[...] = cells
    return out


def custom_switch_data(x: np.ndarray, in_slice: Mapping, in_time: Mapping, out_slice: Mapping,
                       out_time: Mapping, fill: int = 0) -> np.ndarray:
    """CUSTOM_BROADCAST: output slice s' at step (carried c, moved m) reads input slice
    `route[s', m]` at input step c. Slots that read nothing hold `fill`."""
    table = route_table(in_slice, in_time, out_slice, out_time)
    if isinstance(table, Violation):
        raise ValueError(f"not a legal custom switch: {table}")
    plan, src = table  # src[s', m]
    m_size = plan.moved_size
    carried = out_time.size // m_size
    out = np.full((out_slice.size, carried, m_size, *x.shape[2:]), fill, dtype=x.dtype)
    ok = src >= 0
    rows, moved = np.nonzero(ok)
    out[rows, :, moved] = x[src[ok], :carried]
    return out.reshape(out_slice.size, out_time.size, *x.shape[2:])


def switch_data(x: np.ndarray, in_slice: Mapping, in_time: Mapping, out_slice: Mapping,
                out_time: Mapping, config: SwitchVariant, fill: int = 0) -> np.ndarray:
    """The output array of a legal switch on `x[slice, time, packet...]`."""
    if isinstance(config, CustomBroadcast):
        return custom_switch_data(x, in_slice, in_time, out_slice, out_time, fill)
    return named_switch_data(x, config)


def packet_map(in_slice: Mapping, in_time: Mapping, out_slice: Mapping, out_time: Mapping,
               config: SwitchVariant) -> np.ndarray:
    """map[s', t']: the input packet `s * T + t` (slice s, step t of one ring of `T` steps)
    that output slice s' holds at step t' of a legal switch, -1 where it holds none (a custom
    broadcast's empty slots). A switch moves whole packets and never looks at them, so this
    is `switch_data` run on the packet numbers (a packet of one number: a number a packet,
    not a cell), int32 when they fit."""
    n = in_slice.size * in_time.size
    ids = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64).reshape(in_slice.size, in_time.size, 1)
    return np.ascontiguousarray(switch_data(ids, in_slice, in_time, out_slice, out_time, config, fill=-1)[..., 0])


_COLUMN_COPIES = 4
"""Tiles of at most this many input rows are turned a column of the result at a time
(`transpose_data`); for more rows one transposed copy is faster (8 rows: 0.42 vs 0.55 ms)."""


def transpose_data(x: np.ndarray, params: TransposeParams, out_time_size: int, fill: int = 0,
                   out: np.ndarray | None = None) -> np.ndarray:
    """The Transpose Engine on `x[slice, time, flit]`: unpack the valid elements, gather
    packets_per_col packets into a row, transpose each [in_rows x in_cols] tile, keep
    out_rows of its rows, pad each row of in_rows elements to one flit. `out`: a C-contiguous
    array of the result's shape (slice, out_time_size, flit) to write it into."""
    n_slice, n_time, flit = x.shape
    p = params
    outer = n_time // (p.in_rows * p.packets_per_col)
    tiles = turned_tiles(x, p)   # [s, outer, out_rows, in_rows]
    if out is None:
        out = np.empty((n_slice, outer, p.out_rows, flit), dtype=x.dtype)
    else:
        out = out.reshape(n_slice, outer, p.out_rows, flit)
    if p.in_rows < flit:  # the padding cells: one contiguous fill first, a fifth of the time of a
        out.fill(fill)    # strided fill of the cells after each row's (issue 61, per-op overhead)
    if p.in_rows <= _COLUMN_COPIES:  # column j of each out row is row j of the tile: a few copies of
        for j in range(p.in_rows):   # runs read in order beat numpy's 4-cell transposed inner loop
            out[..., j] = tiles[..., j]  # row j of each tile (issue 61: 0.83 -> 0.63 ms on drawn_s101_2's 4 x 16 tiles)
    else:
        out[..., :p.in_rows] = tiles
    return out.reshape(n_slice, out_time_size, flit)


def turned_tiles(x: np.ndarray, p: TransposeParams) -> np.ndarray:
    """The turned tiles of `x[slice, time, flit]`, a view [slice, tile, out_rows, in_rows]."""
    n_slice, n_time, _ = x.shape
    outer = n_time // (p.in_rows * p.packets_per_col)
    v = x[:, :, :p.valid_size_per_packet].reshape(n_slice, outer, p.in_rows, p.in_cols)
    return v.transpose(0, 1, 3, 2)[:, :, :p.out_rows, :]


def transpose_cells(x: np.ndarray, params: TransposeParams) -> np.ndarray:
    """`transpose_data`'s written cells only: [slice, out time, in_rows], each output flit's
    first `in_rows` cells (its others are the padding `transpose_data` fills)."""
    tiles = turned_tiles(x, params)
    return np.ascontiguousarray(tiles).reshape(x.shape[0], -1, params.in_rows)
