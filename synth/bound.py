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

`space_bound` gives the same numbers at a fraction of the price, for a tuner that bounds
every candidate of a space before the sweep: what depends on the spec alone (names, padded
sizes, operand bytes) is computed once per space, a placement's geometry once per placement,
and a candidate's own numbers straight from its levers instead of from every name the kernel's
text needs (`gemm_names`). `candidate_bound` stays the plain statement of the bound; the tests
hold the two equal on drawn spaces.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ir.dtypes import DType
from synth.gemm_text import gemm_names, gemm_roles, kept
from synth.live_rows import live_rows
from synth.overlap import pieces_ok
from synth.pairs import pair_ok
from synth.tiling import geometry
from visa.schedule.model import launch_cycles

__all__ = ["candidate_bound", "space_bound", "store_run"]


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

    return _dma_cycles(commands, load_bytes, out_bytes, store_run(spec, v), rates)


def _dma_cycles(commands: int, load_bytes: int, out_bytes: int, run: int, rates: Any) -> int:
    """The launch, the commands' start-ups, then the DMA Engine moving `load_bytes` in and
    `out_bytes` out in store packets of `run` bytes at most (the HBM's partial writes when a
    packet leaves part of its unit)."""
    request = rates("dma", "request_bytes")
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


def space_bound(spec: Any) -> Callable[[dict[str, Any], Any], int | None]:
    """`candidate_bound` of `spec`'s candidates as one function of (point, rates), its
    per-space and per-placement parts computed once (the module docstring): the same numbers."""
    if spec.form == "gemv" or spec.chips != 1:
        return lambda point, rates: None
    (an, _), (wn, _) = gemm_roles(spec)
    mi, ni = kept(spec)
    size = spec.padded
    nb = size[spec.batch] if spec.batch else 1
    elem = DType(spec.dtype_in).bits // 8
    out_elem = DType(spec.result_dtype).bits // 8
    result = spec.result[1]
    operand_bytes = [(name, math.prod(size[i] for i in spec.stored(name)) * elem) for name, _ in spec.operands]
    a_transposed = an in spec.device_transposed
    bias = spec.epilogue is not None and spec.epilogue.bias is not None
    # live_rows's conditions that the spec alone decides, and the user's rows of `m`
    given = spec.kernel_sizes[mi]
    may_cut = spec.chips == 1 and spec.batch is None and spec.epilogue is None
    geos: dict[str, Any] = {}

    def bound(point: dict[str, Any], rates: Any) -> int | None:
        placement = point["placement"]
        geo = geos.get(placement)
        if geo is None:
            geo = geos[placement] = geometry(placement)
        if geo.sk > 1:
            return None
        mt, nt = max(1, size[mi] // geo.tm), max(1, size[ni] // geo.tn)
        order, reuse = point.get("order", "ij"), point.get("reuse", "outer")
        pieces = point.get("pieces", 1)
        pieces_n = pieces if pieces_ok(geo, pieces, point["trf"] == wn, size[mi], a_transposed) else 1
        tiles = mt * nt
        if geo.double:
            loads = 1 + geo.tb if geo.tb > 1 else 3
        elif tiles > 1:
            loads = {"all": mt + nt, "outer": (mt if order == "ij" else nt) + tiles, "none": 2 * tiles}[reuse]
        else:
            loads = 2
        commands = nb // geo.sb * (loads + tiles * pieces_n)
        copies = {an: 1 if geo.a_switch else min(geo.sn, -(-size[ni] // geo.c)),
                  wn: 1 if geo.switch else min(geo.sm, -(-size[mi] // geo.r))}
        load_bytes = sum(b * copies[name] for name, b in operand_bytes)
        pair = bool(point.get("pair")) and pair_ok(geo, mt, nt, order, reuse, pieces_n, bias)
        live = (may_cut and mt == nt == 1 and size[mi] % geo.tm == 0 and geo.clusters == 1 and geo.tb == 1
                and not geo.halves and pieces_n == 1 and not pair and given < geo.tm and given % geo.r == 0)
        rows = {mi: given if live and given else size[mi]}
        out_bytes = math.prod(rows.get(i, size[i]) for i in result) * out_elem
        return _dma_cycles(commands, load_bytes, out_bytes, _run(result, size, {mi: geo.r, ni: geo.c}, out_elem), rates)

    return bound


def store_run(spec: Any, v: dict[str, Any]) -> int:
    """The longest run of one slice's results contiguous in the result's stored order, in
    bytes: from the innermost index out, the slice's extent along each index, as long as it
    covers the whole index (a slice holds `r` rows along `m`, `c` columns along `n`, one
    batch element)."""
    return _run(spec.result[1], spec.padded, {v["mi"]: v["r"], v["ni"]: v["c"]}, DType(spec.result_dtype).bits // 8)


def _run(result: tuple[str, ...], size: dict[str, int], extent: dict[str, int], run: int) -> int:
    """`store_run` from its numbers: the result's indices, their sizes, a slice's extent
    along each and the element's bytes."""
    for i in reversed(result):
        e = min(extent.get(i, 1), size[i])
        run *= e
        if e < size[i]:
            break
    return run
