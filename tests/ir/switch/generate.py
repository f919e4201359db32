"""Random legal CUSTOM_BROADCAST switches for property tests (a seed gives one case).

The input Slice `K` (64 slices) is cut into power-of-two digits; some digits move to
the innermost Time (in their Slice order), the rest are permuted in Slice, and each
moved digit leaves a tile of its size (a bare integer or a new axis `X<i>`) somewhere
in out_slice. Every such switch is legal by construction.
"""

from __future__ import annotations

import random

from ir.mapping.nodes import Broadcast, Mapping, Symbol, pair_all
from ir.mapping.ops import split

SLICE = Symbol("K", 64)
TIME = Symbol("N", 4)


def _digits(rng: random.Random) -> list[Mapping]:
    """K cut into digits, outer to inner: `K / a % b` pieces."""
    sizes, left = [], 64
    while left > 1:
        size = rng.choice([s for s in (2, 4, 8) if left % s == 0])
        sizes.append(size)
        left //= size
    digits, inner = [], 1
    for size in reversed(sizes):
        outer, _ = split(SLICE, inner)
        digits.append(split(outer, size)[1] if outer.size > size else outer)
        inner *= size
    return list(reversed(digits))


def legal_custom(seed: int) -> tuple[Mapping, Mapping, Mapping, Mapping]:
    """(in_slice, in_time, out_slice, out_time) of a legal custom switch."""
    rng = random.Random(seed)
    digits = _digits(rng)
    moved = [d for d in digits if rng.random() < 0.4]
    kept = [d for d in digits if d not in moved]
    tiles: list[Mapping] = [Broadcast(d.size) if rng.random() < 0.5 else Symbol(f"X{i}", d.size)
                            for i, d in enumerate(moved)]
    slots = kept + tiles
    rng.shuffle(slots)
    out_slice = pair_all(slots) if slots else Broadcast(1)
    out_time = pair_all([TIME, *moved])
    return SLICE, TIME, out_slice, out_time
