"""Thin blocks of `npu-opt synth`'s GEMM candidates (docs/synth.md, issue 54's efficiency
goal): a slice's block of results may have fewer rows than one lane group (1, 2 or 4 rows of
the streamed `a`) when `w` is the stationary operand.

The TRF's 8 lanes hold the stationary operand's rows, so a block's stationary side must be
a whole lane group; the streamed side has no such floor: its rows are the contraction's time
steps (`contract_time`), and one row per slice is a valid stream. The other placements
(synth/tiling.py `blocks`, `result_placements`) ask both sides for a lane group, so a result
of few rows (128 x 128) runs on 16 slices of 8 x 128 blocks, each slice's TRF filled with all
of `w` and its contraction 8 rows long, or on more slices of narrower blocks whose rows of
results are partial HBM writes (bf16, 64 columns: 128-byte rows at the model's 50x
read-modify-write). A thin block keeps the wide row of results and spreads the rows over
more slices: on the 128 x 128 x 256 bf16 GEMM, `64x1 of 2x128, on 1/4 of the slices,
w by switch` models 6,780 cycles against 8,058 for the former winner (`16x2 of 8x64, on 1/8
of the slices, w by switch`, pieces=2).

`thin_placements` gives the thin blocks' exact tiles that no placement of the space
dominates (tiling.py `frontier`: as many slices busy with a block at least as large along
both axes), so they only reach results too short to fill the slices with a lane group's
rows; the space appends them (and their switch twins) after its other placements, which
keep their order and so their indices and ties. `thin_ok` (synth/offer.py) refuses them
with `a` stationary, whose rows would be the TRF's lanes. Not with `--transpose device`
(its transposing load packs 8 or 16 rows of a block) nor in a space whose `k` must split.
"""

from __future__ import annotations

from typing import Any

from synth.tiling import Geometry, blocks, exact_tiles, frontier
from tu_ops.target import Constants

__all__ = ["thin_ok", "thin_placements"]


def thin_placements(spec: Any, m: int, n: int, slices: int, others: list[Geometry]) -> list[Geometry]:
    """The exact tiles of the m x n result of `spec`'s thin blocks on its `slices` that none of
    `others` (the space's placements of a lane group's rows, or more) or another thin tile
    dominates."""
    thin = exact_tiles(blocks(spec, thin=True), m, n, slices)
    return [g for g in frontier(thin + others) if g in thin]


def thin_ok(g: Any, stationary_w: bool, const: Constants) -> bool:
    """Whether geometry `g`'s block may sit with this stationary operand: a block of fewer
    rows than a lane group, or of rows not a power of two (synth/odd_rows.py), only with `w`
    stationary (its `c` rows fill the lanes)."""
    return stationary_w or (g.r >= max(const.LANES) and g.r & (g.r - 1) == 0)
