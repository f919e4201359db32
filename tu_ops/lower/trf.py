"""`to_trf` lowered to a TrfLoad (docs/reference/diagnostics.md).

The geometry (bytes per lane, the Flit1/Flit2 rule of TRFLD-4) is `ir.rules.collect`'s
`trf_geometry`, the same computation TRF-1..5 use. `base_row` is filled by the allocation
pass (visa/visa.lark, "TRF allocation"); VISA 1 always uses `region=FULL`.
"""

from __future__ import annotations

from typing import Any

from ir import ops as ir
from ir.errors import InternalError
from ir.rules.collect import trf_geometry
from ir.types import TrfType
from tu_ops.base import Ref
from tu_ops.enums import CELL_FORMATS, CollectFlits, FeedElementType, Region
from tu_ops.lower.dispatch import Site, feeds, lowers
from tu_ops.trf import TrfLoad

__all__ = ["trf_flits", "lower_trf"]


@feeds(ir.ToTrf)
def trf_flits(op: ir.ToTrf) -> CollectFlits:
    """collect_flits of a TRF load: Flit2 when bytes per lane are a multiple of 64."""
    stream = op.input.type
    geo = trf_geometry(stream.dtype, stream.time, op.lane, op.element)
    if geo is None:
        raise InternalError(f"{op.text()}: no TRF geometry")
    return CollectFlits(geo.collect_flits)


def lower_trf(op: ir.ToTrf, result: int, feed: int, out_type: TrfType, target: Any) -> TrfLoad:
    """The TrfLoad of `op` (numbered `result`) reading feed number `feed`."""
    stream = op.input.type
    geo = trf_geometry(stream.dtype, stream.time, op.lane, op.element)
    if geo is None:
        raise InternalError(f"{op.text()}: no TRF geometry")
    et = FeedElementType.of(stream.dtype)
    fmt = CELL_FORMATS.get(et)
    if fmt is None:
        raise InternalError(f"{op.text()}: {stream.dtype} has no TRF cell format")
    return TrfLoad(result=Ref(result), input=Ref(feed), element_type=et, cell_format=fmt,
                   lanes=geo.lanes, bytes_per_lane=geo.bytes_per_lane, region=Region.FULL, base_row=0,
                   collect_flits=CollectFlits(geo.collect_flits), input_type=stream, output_type=out_type,
                   loc=op.loc)


# --- declarations ------------------------------------------------------------------------------

@lowers(ir.ToTrf, into=TrfLoad)
def _trf_stage(op: ir.ToTrf, site: Site) -> TrfLoad:
    return lower_trf(op, site.result, site.src, site.type_of(op.result), site.target)
