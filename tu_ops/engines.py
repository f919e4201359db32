"""The engines a record runs on in the schedule model (visa/schedule), and the cost
formulas several record classes share.

Every record class declares, next to its fields (tu_ops.base.TuOp):

- `ENGINE`: the `Engine` it occupies while its step runs (a lane of the timeline);
- `busy_cycles(rate, target)`: its busy cycles on that engine, where `rate(section, key)`
  reads the model's rates (tu_ops/targets/<target>.schedule.toml);
- `cost_counters(target)`: what it adds to the artifact's cost counters (visa/visa.lark).

An engine marked `shared` is one per slice for all contexts: a MAIN and a SUB record on
it never run at once (scheduling/schedule.md of the reference book: a main and a sub
Vector Engine operation cannot occupy that resource simultaneously).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import attrs

__all__ = ["Engine", "Rate", "ceil_div", "stream_cycles", "no_cycles", "no_counters", "FETCH", "TRF", "VRF_LOAD",
           "CONTRACTION", "PACKET_REDUCER", "TIME_REDUCER", "LANE_FOLDER", "VECTOR", "CAST", "TRANSPOSE",
           "COMMIT", "DMA", "SEQUENCER", "ENGINES"]

Rate = Callable[[str, str], float]
"""`rate("tensor_unit", "packets_per_cycle")`: one number of the schedule model's rates."""


@attrs.frozen
class Engine:
    """A hardware engine of a slice: its timeline name, whether all contexts share it, and
    the colour of its bars on the schedule page."""

    name: str
    shared: bool = False
    color: str = "#999999"


FETCH = Engine("fetch", color="#59a14f")
TRF = Engine("trf", color="#edc948")
VRF_LOAD = Engine("vrf_load", color="#bab0ac")
CONTRACTION = Engine("contraction", color="#e15759")
PACKET_REDUCER = Engine("packet_reducer", color="#ff9d9a")
TIME_REDUCER = Engine("time_reducer", color="#d4a6c8")
LANE_FOLDER = Engine("lane_folder", color="#9c755f")
VECTOR = Engine("vector", shared=True, color="#76b7b2")
CAST = Engine("cast", color="#b07aa1")
TRANSPOSE = Engine("transpose", color="#8cd17d")
COMMIT = Engine("commit", color="#f28e2b")
DMA = Engine("dma", color="#4e79a7")
SEQUENCER = Engine("sequencer", color="#d37295")  # runtime scalars and guards (tu_ops.runtime)

ENGINES = (FETCH, TRF, VRF_LOAD, CONTRACTION, PACKET_REDUCER, TIME_REDUCER, LANE_FOLDER, CAST, VECTOR,
           TRANSPOSE, COMMIT, DMA, SEQUENCER)
"""Every engine, in pipeline order: the order of the schedule's lanes (`visa.schedule.trace`)."""


def ceil_div(a: float, b: float) -> int:
    """ceil(a / b) for a rate quotient (0 when `a` is 0; a float error of 1e-9 is rounded away)."""
    return int(math.ceil(a / b - 1e-9)) if a else 0


def stream_cycles(op: Any, rate: Rate, target: Any) -> int:
    """A pipeline stage: one packet of its input stream per cycle."""
    return ceil_div(op.input_type.time.size, rate("tensor_unit", "packets_per_cycle"))


def no_cycles(op: Any, rate: Rate, target: Any) -> int:
    """A record the model counts as taking no time (a tensor of zeros, a memset)."""
    return 0


def no_counters(op: Any, target: Any) -> dict[str, int]:
    """A record that moves no DM, HBM or TRF bytes and does no MAC the counters count."""
    return {}
