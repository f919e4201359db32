"""`fetch_mask(out_time, out_packet)`: the Fetch Adapter's masking stage (ir.fetch_mask).

Offered right after `fetch`; the masked stream then takes the other adapters, `switch` or
`collect`, like a fetch stream. Imported by `npu_opt.stages` once its shared method bodies
exist (they are this stage's methods too).
"""

from __future__ import annotations

from typing import Any

from ir.fetch_mask_ops import FetchMask
from ir.location import Location
from ir.mapping.nodes import Mapping
from npu_opt import stages as _st
from npu_opt.stagebase import StreamStage, kind_error, next_stage, refuse_dead, stage_method

__all__ = ["fetch_mask", "FetchMaskStream"]


@stage_method("fetch_mask")
def fetch_mask(self: StreamStage, loc: Location, out_time: Any, out_packet: Any) -> Any:
    """Zero the padding of one axis: `out_time` / `out_packet` are the fetch's mappings with
    that axis's `#` written `#{0}`."""
    for name, value in (("out_time", out_time), ("out_packet", out_packet)):
        if not isinstance(value, Mapping):
            return refuse_dead(self, loc, "fetch_mask",
                               kind_error(f"`{name}` must be a mapping built by m(), not {type(value).__name__}"))
    return next_stage(self, loc, FetchMask, FetchMaskStream, out_time=out_time, out_packet=out_packet)


class FetchMaskStream(StreamStage):
    """After `fetch_mask`: the later adapters, `switch` or `collect`."""

    fetch_table_lookup = _st._fetch_table_lookup
    fetch_cast = _st._fetch_cast
    fetch_zero_point_sub = _st._fetch_zero_point_sub
    switch = _st._switch
    collect = _st._collect
