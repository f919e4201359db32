"""A lower bound of a synth GEMM candidate's makespan from its parameters alone, before its
kernel is built or traced (`Space.bound`, docs/tuning.md "Prune"): what the tuner's early
bound (driver/tune_eval.py `early_bound`: the launch, then the cycles of every DMA-context
record) must be at the least, from the numbers synth/gemm_text.py writes the kernel from.

The early bound sums each DMA record's cycles (tu_ops/dma_cost.py): a start-up per command,
then the slowest of the DMA Engine (one request of at most `request_bytes` per cycle), HBM
and DM. Of the records a candidate surely issues, this counts:

- one command (its start-up) per block load and per store its loops make
  (synth/tile_loops.py, synth/pairs.py, synth/trf_double.py): per batch step, each distinct
  block of `a` and `w` loaded once at the least (`reuse="all"`), the outer loop's block once
  per outer step and the inner one per tile (`"outer"`), both per tile (`"none"`), `w` and
  `a` once each with one tile, `w` twice (its two halves) and `a` once with the TRF
  double-buffered (with `k` in time blocks: `w` once, `a` once a chunk); a result piece stored per tile and piece. A block load or store is one `to_dm` / `to_hbm_view`
  call, one record of at least one command; a block cut into pieces or time blocks, a device
  transpose or a bias only adds records;
- the DMA Engine's movement of every operand byte once and every result byte once, at one
  request per packet: every cell of `a` and `w` enters DM and every cell of the result
  leaves it (of the result's rows, only the user's when synth/live_rows.py cuts the store) (a packet of `P` bytes is `ceil(P / request_bytes)` requests);
- the stores' HBM writes when a packet must leave part of a 256-byte unit: a DMA packet is
  contiguous on both sides and holds the cells of one slice (tu_ops/dma_commands.py: the
  slice loops lie outside the packet), so it is no longer than the longest run of a
  slice's block of results that is contiguous in the result's stored order. When that run
  is shorter than the HBM unit, every packet is a partial write (`partial_write_factor`
  units, aligned or not) and there are at least `bytes / run` of them.

Each term is the model's own formula on quantities that are no larger than the record's, so
the bound never exceeds the early bound (the tuner checks it on every candidate it traces).
None (no bound) for a GEMV, a `k` split over slices and a kernel of several chips, whose
records this does not count.
"""

from __future__ import annotations

import math
from typing import Any

from ir.dtypes import DType
from synth.gemm_text import gemm_names
from synth.live_rows import live_rows
from visa.schedule.model import launch_cycles

__all__ = ["candidate_bound", "store_run"]


def candidate_bound(spec: Any, point: dict[str, Any], rates: Any) -> int | None:
    """A lower bound of the schedule model's makespan of `spec`'s candidate `point` (the module
    docstring), in cycles under `rates`; None when this does not bound it."""
    if spec.form == "gemv" or spec.chips != 1:
        return None
    v = gemm_names(spec, point)
    if v["geo"].sk > 1:
        return None
    mt, nt, steps, pieces = v["mt"], v["nt"], v["steps"], v["pieces_n"]
    tiles = mt * nt
    outer = mt if v["order"] == "ij" else nt
    # with one tile `w` and `a` once each; the TRF double-buffered (synth/trf_double.py): `w` in two halves, `a` once,
    # or with `k` in time blocks `w` once and `a` a DMA a chunk
    per_reuse = {"all": mt + nt, "outer": outer + tiles, "none": 2 * tiles}
    geo = v["geo"]
    loads = (1 + geo.tb if geo.tb > 1 else 3) if geo.double else per_reuse[v["reuse"]] if tiles > 1 else 2
    commands = steps * (loads + tiles * pieces)

    elem = DType(spec.dtype_in).bits // 8
    size = spec.padded
    # each slice holds its rows of `a` with the whole `k`: the slices of a tile's row share them, a
    # copy each (`sn`, or fewer when the result is padded to the tile inside the kernel: only the
    # slices of real columns get one), unless the Switch Engine spreads the one copy moved (`a by
    # switch`); `w` alike along the tile's column
    real = {x: -(-size[v[i]] // v[e]) for x, i, e in (("sn", "ni", "c"), ("sm", "mi", "r"))}
    copies = {v["an"]: 1 if geo.a_switch else min(geo.sn, real["sn"]),
              v["wn"]: 1 if geo.switch else min(geo.sm, real["sm"])}
    load_bytes = sum(math.prod(size[i] for i in spec.stored(name)) * elem * copies[name] for name, _ in spec.operands)
    # every result row stored: the tile's, or only the user's (synth/live_rows.py)
    rows = {v["mi"]: live_rows(v) or size[v["mi"]]}
    out_bytes = math.prod(rows.get(i, size[i]) for i in spec.result[1]) * (DType(spec.result_dtype).bits // 8)

    request = rates("dma", "request_bytes")
    run = store_run(spec, v)
    # a store packet holds `run` bytes at most, and `request_bytes` make one request at most
    store_packets = -(-out_bytes // min(run, request))
    loading = math.ceil(load_bytes / rates("dma", "engine_bytes_per_cycle"))
    storing = math.ceil(store_packets * request / rates("dma", "engine_bytes_per_cycle"))
    unit = rates("hbm", "align_bytes")
    if run < unit:  # every store packet leaves part of its HBM unit: a read-modify-write each
        writes = store_packets * rates("hbm", "partial_write_factor") * unit
        storing = max(storing, math.ceil(writes / rates("hbm", "chip_bytes_per_cycle")))
    startups = commands * int(rates("dma", "startup_cycles"))
    return launch_cycles(rates) + startups + loading + storing


def store_run(spec: Any, v: dict[str, Any]) -> int:
    """The longest run of one slice's results contiguous in the result's stored order, in
    bytes: from the innermost index out, the slice's extent along each index, as long as it
    covers the whole index (a slice holds `r` rows along `m`, `c` columns along `n`, one
    batch element)."""
    size = spec.padded
    extent = {v["mi"]: v["r"], v["ni"]: v["c"]}
    run = DType(spec.result_dtype).bits // 8
    for i in reversed(spec.result[1]):
        e = min(extent.get(i, 1), size[i])
        run *= e
        if e < size[i]:
            break
    return run
