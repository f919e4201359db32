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

The tuner bounds every candidate of a space before the sweep, so `space_bound` computes what
depends on the spec alone (names, padded sizes, operand bytes, the user's rows) once per space,
a placement's geometry once per placement, and a candidate's own numbers straight from its
levers, not from every name the kernel's text needs (`gemm_names`). `candidate_bound` is that
same function for one point. Whether the store is cut to the user's rows is synth/live_rows.py's
own test, the kernel text's, in its two halves (`live_given` once per space, `live_cut` per
candidate). tests/tune/test_tune_space_bound.py derives the same numbers from `gemm_names`."""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

from ir.dtypes import DType
from synth.gemm_text import gemm_roles, kept
from synth.live_rows import live_cut, live_given
from synth.overlap import pieces_ok
from synth.pairs import pair_ok
from synth.tiling import geometry
from visa.schedule.model import launch_cycles

__all__ = ["DmaWork", "candidate_bound", "space_bound", "space_work"]


class DmaWork(NamedTuple):
    """What a candidate's DMA-context records hold at the least (the module docstring): its
    commands, the bytes the DMA Engine moves into DM and out of it, and the longest run of a
    slice's results contiguous in the result's stored order (the store packet's bound), in
    bytes."""

    commands: int
    load_bytes: int
    out_bytes: int
    run: int

    def cycles(self, rates: Any) -> int:
        """The launch, the commands' start-ups, then the DMA Engine moving `load_bytes` in and
        `out_bytes` out in store packets of `run` bytes at most (the HBM's partial writes when
        a packet leaves part of its unit), under `rates`."""
        request = rates("dma", "request_bytes")
        # a store packet holds `run` bytes at most, and `request_bytes` make one request at most
        store_packets = -(-self.out_bytes // min(self.run, request))
        loading = math.ceil(self.load_bytes / rates("dma", "engine_bytes_per_cycle"))
        storing = math.ceil(store_packets * request / rates("dma", "engine_bytes_per_cycle"))
        unit = rates("hbm", "align_bytes")
        if self.run < unit:  # every store packet leaves part of its HBM unit: a read-modify-write each
            writes = store_packets * rates("hbm", "partial_write_factor") * unit
            storing = max(storing, math.ceil(writes / rates("hbm", "chip_bytes_per_cycle")))
        startups = self.commands * int(rates("dma", "startup_cycles"))
        return launch_cycles(rates) + startups + loading + storing


def candidate_bound(spec: Any, point: dict[str, Any], rates: Any) -> int | None:
    """A lower bound of the schedule model's makespan of `spec`'s candidate `point` (the module
    docstring), in cycles under `rates`; None when this does not bound it."""
    return space_bound(spec)(point, rates)


def space_bound(spec: Any) -> Callable[[dict[str, Any], Any], int | None]:
    """`candidate_bound` of `spec`'s candidates as one function of (point, rates), its per-space
    and per-placement parts computed once."""
    work = space_work(spec)

    def bound(point: dict[str, Any], rates: Any) -> int | None:
        counted = work(point)
        return None if counted is None else counted.cycles(rates)

    return bound


def space_work(spec: Any) -> Callable[[dict[str, Any]], DmaWork | None]:
    """The `DmaWork` of `spec`'s candidates as one function of the point, None for a point this
    does not bound (a GEMV, several chips, `k` split over slices)."""
    if spec.form == "gemv" or spec.chips != 1:
        return lambda point: None
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
    given = live_given(spec, mi)  # the user's rows of `m` where the spec lets a store be cut to them, else 0
    geos: dict[str, Any] = {}

    def work(point: dict[str, Any]) -> DmaWork | None:
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
        # per batch step: the block loads the tile loops make (synth/tile_loops.py); with one tile `w` and
        # `a` once each; the TRF double-buffered (synth/trf_double.py): `w` in two halves and `a` once, or
        # with `k` in time blocks `w` once and `a` a DMA a chunk; then a store per tile and piece
        if geo.double:
            loads = 1 + geo.tb if geo.tb > 1 else 3
        elif tiles > 1:
            loads = {"all": mt + nt, "outer": (mt if order == "ij" else nt) + tiles, "none": 2 * tiles}[reuse]
        else:
            loads = 2
        commands = nb // geo.sb * (loads + tiles * pieces_n)
        # each slice holds its rows of `a` with the whole `k`: the slices of a tile's row share them, a copy
        # each (`sn`, or fewer when the result is padded to the tile inside the kernel: only the slices of
        # real columns get one), unless the Switch Engine spreads the one copy moved (`a by switch`); `w`
        # alike along the tile's column
        copies = {an: 1 if geo.a_switch else min(geo.sn, -(-size[ni] // geo.c)),
                  wn: 1 if geo.switch else min(geo.sm, -(-size[mi] // geo.r))}
        load_bytes = sum(b * copies[name] for name, b in operand_bytes)
        pair = bool(point.get("pair")) and pair_ok(geo, mt, nt, order, reuse, pieces_n, bias)
        # every result row stored: the tile's, or only the user's (synth/live_rows.py)
        rows = {mi: live_cut(given, geo, size[mi] % geo.tm == 0, mt, nt, pieces_n, pair) or size[mi]}
        out_bytes = math.prod(rows.get(i, size[i]) for i in result) * out_elem
        return DmaWork(commands, load_bytes, out_bytes, _run(result, size, {mi: geo.r, ni: geo.c}, out_elem))

    return work


def _run(result: tuple[str, ...], size: dict[str, int], extent: dict[str, int], run: int) -> int:
    """The longest run of one slice's results contiguous in the result's stored order, in
    bytes: from the innermost index out (`result`, their sizes `size`), the slice's extent along
    each index (`extent`: `r` rows along `m`, `c` columns along `n`, one batch element) times the
    element's bytes (`run`), as long as it covers the whole index."""
    for i in reversed(result):
        e = min(extent.get(i, 1), size[i])
        run *= e
        if e < size[i]:
            break
    return run
