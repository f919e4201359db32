"""`to_trf` lowered to a TrfLoad (docs/reference/diagnostics.md): the record fills its geometry
from its types (`TrfLoad.of_types`, `ir.rules.collect.trf_geometry`, the computation TRF-1..5
use). `base_row` is filled by the allocation pass (visa/visa.lark, "TRF allocation")."""

from __future__ import annotations

from ir import ops as ir
from ir.errors import InternalError
from ir.rules.collect import trf_geometry
from tu_ops.base import Ref
from tu_ops.enums import CollectFlits
from tu_ops.lower.tables import Site, feeds, lowers
from tu_ops.trf import TrfLoad

__all__ = ["trf_flits"]


@feeds(ir.ToTrf)
def trf_flits(op: ir.ToTrf) -> CollectFlits:
    """collect_flits of a TRF load: Flit2 when bytes per lane are a multiple of 64."""
    stream = op.input.type
    geo = trf_geometry(stream.dtype, stream.time, op.lane, op.element)
    if geo is None:
        raise InternalError(f"{op.text()}: no TRF geometry")
    return CollectFlits(geo.collect_flits)


@lowers(ir.ToTrf, into=TrfLoad)
def _trf_stage(op: ir.ToTrf, site: Site) -> TrfLoad:
    return TrfLoad.of_types(Ref(site.result), Ref(site.src), op.input.type, site.type_of(op.result), op.loc)
