"""Blocks of rows that are not a power of two (docs/synth.md, issue 54's efficiency goal): a
result whose rows are not a power-of-two multiple of a block (300 rows, padded to 320 = 10 x
32) is cut over a power of two of slices exactly, `m / sm` rows a slice (`64x2 of 5x128`:
5 rows on each of 64 slices), when `w` is the stationary operand.

The other placements (synth/tiling.py `blocks`) hold a power of two of rows a slice, so 320
rows are either many passes of small tiles (a DMA start-up per block and per store, 500
cycles each) or one pass of a tile padded inside the kernel (`M # 512`): then the slices
along `m` hold padding, and the Switch Engine may not broadcast `w` over them (SWITCH-11: a
broadcast axis of the output Slice must not carry padding), so every one of them gets its own
DMA copy of `w`'s block. A block of `m / sm` rows covers the rows exactly on `sm` slices, with
no padding on the slice factor, so `w by switch` moves `w` once: on the padded 300 x 200 x
100 i8 GEMM, `64x2 of 5x128, on 1/2 of the slices, w by switch` models 5,902 cycles against
7,700 for the padded tile (`16x4 of 32x64, on 1/4 of the slices`, pieces=2).

The streamed `a`'s rows are the contraction's time steps (`contract_time`): any number of
them is a valid stream, as with thin blocks (synth/thin.py), and for the same reason the
blocks are refused with `a` stationary (`thin_ok`: its rows would be the TRF's lanes, whole
lane groups). `odd_placements` gives their exact tiles that no exact placement of the space
dominates (tiling.py `frontier`); the space appends them and their switch twins after the
others, which keep their order and so their indices and ties. A result whose rows are a
power of two (every `m / sm` a power of two) gets none.
"""

from __future__ import annotations

from typing import Any

from synth.tiling import Geometry, blocks, exact_tiles, frontier

__all__ = ["odd_placements", "odd_rows"]


def odd_rows(m: int, slices: int) -> list[int]:
    """The rows a slice holds when the `m` rows are cut exactly over a power of two of at most
    `slices` slices, those that are not a power of two (none when `m` is one)."""
    counts = [1 << e for e in range(slices.bit_length()) if m % (1 << e) == 0]
    return sorted({m // sm for sm in counts if (m // sm) & (m // sm - 1)})


def odd_placements(spec: Any, m: int, n: int, slices: int, others: list[Geometry]) -> list[Geometry]:
    """The exact tiles of the m x n result of `spec` with `odd_rows` a slice on its `slices` that
    neither an exact tile of `others` (the space's other placements; a tile padded inside
    the kernel covers the result in one pass too, but is what these blocks replace) nor
    another odd tile dominates."""
    rows = odd_rows(m, slices)
    odd = exact_tiles(blocks(spec, rows=rows), m, n, slices) if rows else []
    exact = [g for g in others if m % g.tm == 0 and n % g.tn == 0]
    return [g for g in frontier(odd + exact) if g in odd]
