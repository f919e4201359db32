"""The schedule's lanes and colours come from the engines' own declarations (tu_ops.engines)."""

from __future__ import annotations

from tu_ops.base import TuOp
from tu_ops.engines import ENGINES, Engine
from visa.schedule.trace import _ENGINES


def _record_classes(cls=TuOp):
    for sub in cls.__subclasses__():
        yield sub
        yield from _record_classes(sub)


def test_every_declared_engine_has_a_lane_rank_and_its_own_colour():
    declared = {getattr(c, "ENGINE", None) for c in _record_classes()} - {None}
    assert declared <= set(ENGINES), declared - set(ENGINES)
    assert _ENGINES == tuple(e.name for e in ENGINES)
    colours = [e.color for e in ENGINES]
    assert len(set(colours)) == len(colours) and Engine("x").color not in colours

