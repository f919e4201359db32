"""Two tiles' blocks of `w` in the TRF at once (docs/synth.md "Why the 512 x 512 GEMMs stay
above 1.15"): a `w by switch` GEMM whose result is one row of tiles along `n`, each slice's
block of a tile at most half the TRF, so the next tile's block loads while this one contracts.

A result that fills the chip in one tile with `w by switch` (`64x4 of 8x128`, i8 512^3) copies
`a` to the `sn` = 4 slices of its tile row: 4,096 DMA cycles for `a`'s 256 KB. Two slices a row
(`128x2`) halve that, but a slice then computes 256 columns, whose rows of `w` with all of `k`
overflow the TRF. Cut into tiles of fewer columns (`128x2 of 4x64`: four tiles of 128 columns),
each block is a quarter of the TRF; the kernel:

- moves `w` in two DMAs (each slice its share of every tile's block; a tile's block is a tile
  of its half in DM): the first half of the tiles' blocks, then `a`'s row block once (each row
  to 2 slices), then the other half, so the first tile contracts while that half moves (with
  all of `w` in one DMA before `a`, the DMA context waited 802 cycles for that contraction);
- loads tile `j + 1`'s block into the TRF before tile `j` contracts, the loads alternating
  between the sub and the main context (two blocks are live at once, in different TRF rows,
  tu_ops/trf_place.py), so a load runs beside the previous contraction or the other load;
- stores tile `j`'s result after tile `j + 1`'s contraction is issued (both results live in
  DM at once, so the next contraction never waits for the store).

The loops are Python `for`s (at most DOUBLE_TILES tiles, traced each). i8 512^3: 13,716 ->
12,970 (`w` in one DMA) -> 12,668 cycles. `double_placements` appends these placements after
every other one, so the others keep their indices; they add no `order`/`reuse`/`pair` levers
to the space, and where another placement brings those levers, offer.offered offers these only
at each lever's first value (their loop ignores the levers, so the other values would only
repeat the kernel).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.dtypes import DType
from synth.both_loads import lone_switch
from synth.onchip import switch_held, switch_ok
from synth.tiling import Geometry
from tu_ops.target import Constants, rngd

__all__ = ["DOUBLE_TILES", "double_loops", "double_placements"]

DOUBLE_TILES = 4  # the most tiles along n a double-buffered candidate is offered with
REQUEST = 256  # bytes of a whole HBM write (the `hbm align_bytes` rate, tu_ops/dma_cost.py)


def double_placements(spec: Any, m: int, n: int, placements: list[Geometry],
                      const: Constants | None = None) -> list[Geometry]:
    """For each `w by switch` placement alone (synth/both_loads.py `lone_switch`: one cluster,
    `k` whole on every slice; and all the slices) whose tile is the whole result, the
    placements with twice the slices along `m` and 2 or DOUBLE_TILES tiles along `n` whose
    blocks (each at least a quarter of the TRF) fit the TRF two at a time, whose block the
    Switch Engine can spread (`switch_ok`) and whose rows of results are whole 256-byte DMA
    requests (a row of 128 bytes is a partial write: i8 512^3's `64x4 of 8x32` models
    80,830); no batch, epilogue, device transpose or split over chips."""
    const = const or rngd().constants
    if spec.chips != 1:
        return []
    elem, out_bytes = (DType(d).bits // 8 for d in (spec.dtype_in, spec.result_dtype))
    k = spec.padded[spec.contracted]
    out: list[Geometry] = []
    for g in placements:
        if not lone_switch(spec, g, m, n) or g.double or g.idle != 1 or g.r % 2 or g.sn % 2:
            continue
        for tiles in (2, DOUBLE_TILES):
            c = n // (g.sn // 2 * tiles)
            block = c * k * elem
            twin = Geometry(g.r // 2, c, g.sm * 2, g.sn // 2, switch=True, double=True)
            if 4 * block >= const.TRF_BYTES and 2 * block <= const.TRF_BYTES and c * out_bytes >= REQUEST \
                    and switch_ok(twin, k, elem, const) and twin not in out:
                out.append(twin)
    return out


def double_loops(v: dict[str, Any]) -> list[str]:
    """The kernel's tile loop: `w` in two DMAs (the first half of the tiles' blocks, then `a`
    once, then the other half), the TRF loads one tile ahead on alternating contexts, each
    result stored one tile late."""
    nt, wn, din, N, tn = v["nt"], v["wn"], v["din"], v["N"], v["tn"]
    held = switch_held(v)
    half, span = nt // 2, v["tn"] * (nt // 2)   # tiles a half, its rows of w
    if half == 1:
        moves = ["    halves = [w_block(0)]", f"    {v['s_dm']} = a_block(0)", "    halves.append(w_block(1))",
                 "    blocks = halves"]
    else:
        # w's view tiled into its two halves along n (gemm_text.chain's form: the tiled index `1 # 2, N % span`)
        terms = ", ".join(f"1 # 2, {N} % {span}" if i == v["ni"] else i.upper() for i in v["widx"])
        rows = f'.tile(m("{N} / {span}"), 1, m("{terms}"), h)'
        moves = ["    def w_half(h):",
                 f"        # half h of {wn}'s tiles ({span} rows) in one DMA: each slice its share of every block",
                 f"        rows = {wn}.view(){rows}",
                 f'        return rows.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, WSlice, m("{N} % {span} / {tn}, '
                 f'{held}")])',
                 "",
                 "    halves = [w_half(0)]",
                 f"    {v['s_dm']} = a_block(0)",
                 "    halves.append(w_half(1))",
                 f'    blocks = [halves[j // {half}].view().tile(m("{N} % {span} / {tn}"), 1, m("1 # {half}, {held}"), '
                 f"j % {half}) for j in range({nt})]"]
    return ["    # TRF double-buffered: w moves in two DMAs (each slice its share of every tile's block), the first",
            "    # half of the tiles' blocks before a's rows and the other half after them, so the first tiles contract",
            "    # while it moves; tile j + 1's block loads into the TRF while tile j contracts (the loads alternate",
            "    # between the sub and the main context); each result is stored after the next tile's contraction",
            *moves,
            "    trfs = [stationary(blocks[0])]",
            "    results = []",
            f"    for j in range({nt}):",
            f"        if j + 1 < {nt}:",
            "            trfs.append(stationary(blocks[j + 1], (ctx.sub, ctx.main)[(j + 1) % 2]))",
            f"        results.append(tile({v['s_dm']}, trfs[j], 0, j))",
            "        if j > 0:",
            "            store(results[j - 1], 0, j - 1)",
            f"    store(results[{nt} - 1], 0, {nt - 1})"]
