"""Where every cell of a contraction's `[Lane, out_time, out_packet]` reads its operands
(`OuterPlan`), the first table of the contraction's plan (backends/cpu/contract_plan.py):
the stream cell of every (out_time, out_packet) cell, and the TRF cell of every cell held
per digit of the cells it depends on (issue 61, first-run memory)."""

from __future__ import annotations

import functools

import attrs
import numpy as np

from ir.errors import InternalError
from ir.mapping.nodes import Mapping

from backends.cpu import moves

__all__ = ["OuterPlan"]


@attrs.frozen
class OuterPlan:
    """Where every cell of `[Lane, out_time, out_packet]` reads its operands: `sidx`
    (out_time, out_packet) into the per-slice stream `(T, P)` (int32 when it fits; made
    from `stream_form` on each reading); `trf_at`
    into the per-slice TRF `(Lane, Element)` (int32 when the TRF's cells allow) and `live_at`
    (False on padding, None when every cell is live), both held per digit of the cells'
    factor form and broadcast along the digits they do not depend on (`moves.match_factored`:
    kept in the cache, issue 61); `tidx` / `live` are them as (lane, out_time, out_packet)
    arrays, made on each reading (the reference paths')."""

    stream_form: tuple[int, ...]  # (T, tiling, pack, P, flit): `sidx` made on each reading, not kept
    trf_at: np.ndarray
    live_at: np.ndarray | None
    shape: tuple[int, int, int]

    @property
    def sidx(self) -> np.ndarray:
        """The stream cell of every (out_time, out_packet) cell (2 MiB on drawn_s1_3, so not
        kept in the cache: issue 61)."""
        t_size, tiling, pack, p_size, flit = self.stream_form
        _, o_size, q_size = self.shape
        dtype = np.int32 if t_size * p_size <= np.iinfo(np.int32).max else np.int64  # no int64 table
        o = np.arange(o_size, dtype=dtype)[:, None]
        q = np.arange(q_size, dtype=dtype)[None, :]
        return (o // tiling) * (pack * p_size) + ((q // flit) * p_size + q % flit)

    @property
    def tidx(self) -> np.ndarray:
        return np.ascontiguousarray(self.trf_at).reshape(self.shape)

    @property
    def live(self) -> np.ndarray | None:
        return None if self.live_at is None else np.ascontiguousarray(self.live_at).reshape(self.shape)


@functools.lru_cache(maxsize=64)
def _outer_plan(t_size: int, p_size: int, tiling: int, pack: int, flit: int,
                lane: Mapping, element: Mapping, out_time: Mapping, out_packet: Mapping) -> OuterPlan:
    # docs/machine/contraction.md: the stream time step t = (o // tiling) * pack + q // flit, largest at the last cell
    if ((out_time.size - 1) // tiling) * pack + (out_packet.size - 1) // flit >= t_size or flit > p_size:
        raise InternalError("contract_outer: the stream adapter reads past the stream")
    trf_levels, pre_levels = (lane, element), (lane, out_time, out_packet)
    space = moves.key_space(moves.joint_frag(trf_levels))  # the levels' own past the table limit
    plan = moves.match_factored(space, trf_levels, pre_levels, "contract_outer")  # int32: kept in the cache
    return OuterPlan((t_size, tiling, pack, p_size, flit), plan.index, plan.live, (lane.size, out_time.size, out_packet.size))
