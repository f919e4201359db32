"""The `pair` lever of `npu-opt synth` (synth/pairs.py, issue 54's efficiency goal): a rolled
tile loop holds two tiles a body, as the reference's double-buffering kernels roll their loop
over pairs of weight groups, so the second tile's load moves while the first is contracted
and the first's store while the second is. Where it is offered, that the kernels it writes
(the inner or the outer loop paired, an odd count's last tile alone) equal numpy on cpu and
visa, and that the schedule model finds a pair body faster than two one-tile bodies."""

from __future__ import annotations

import pytest

from synth import contraction
from synth.offer import offered
from synth.pairs import paired_trips
from synth.space import points, source
from tests.synth.lever_checks import equals_numpy, makespan

GEMM = "out[m,n] = a[m,k] * w[n,k]"
EPILOGUE = "q[m,n] = requant(relu(a[m,k] * w[n,k] + b[n]), 0.0009765625)"
# 5 tiles of 64 x 128 on 16 slices: an odd count along m, one tile along n
ODD = dict(placement="8x2 of 8x64, on 1/16 of the slices", trf="w", packet=32, reuse="outer", pieces=1)


def test_pairs_are_offered_only_for_rolled_loops_of_two_tiles_or_more() -> None:
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=320, n=128, k=64))
    assert points(spec)["pair"] == [False, True]
    assert offered(spec, ODD | {"order": "ij", "pair": True})
    # reuse="all" keeps Python `for`s; a pair of one piece a tile only
    assert not offered(spec, ODD | {"order": "ij", "reuse": "all", "pair": True})
    assert not offered(spec, ODD | {"order": "ij", "pieces": 2, "pair": True})
    # one tile: nothing to pair (and a space of one-tile placements has no `pair` lever)
    assert not offered(spec, dict(placement="16x4 of 32x64, on 1/4 of the slices", trf="w", packet=32,
                                  order="ij", reuse="outer", pair=True))
    assert "pair" not in points(contraction(GEMM, dtype="i8:i32", sizes=dict(m=512, n=512, k=512)))
    # a bias is loaded per column block in a Python dict at the block's first tile: not paired
    bias = contraction(EPILOGUE, dtype="i8:i32", sizes=dict(m=320, n=128, k=64))
    assert not offered(bias, ODD | {"order": "ij", "pair": True})
    # k in time blocks: its tile is time_blocks.py's
    long_k = contraction(GEMM, dtype="i8:i32", sizes=dict(m=1024, n=512, k=4096))
    assert not offered(long_k, dict(placement="64x4 of 8x128, k in 8 time blocks", trf="w", packet=32,
                                    order="ji", reuse="outer", pair=True))
    # the paired loop: the inner one, or the outer one when the inner holds one tile
    assert (paired_trips(5, 1, "ij"), paired_trips(5, 1, "ji"), paired_trips(4, 3, "ij")) == (5, 5, 3)


@pytest.mark.parametrize("order", ["ij", "ji"])
def test_an_odd_count_pairs_four_tiles_and_runs_the_last_alone(order: str) -> None:
    # ij: the inner loop has one tile, so the outer loop is paired (both blocks loaded each
    # tile); ji: the inner loop is, under the column block loaded once
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=320, n=128, k=64))
    point = ODD | {"order": order, "pair": True}
    text = source(spec, point)
    assert "for ii in ctx.loop(2):" in text and "result1 = tile(" in text and "store(result0, 2 * ii" in text
    assert "# the last of an odd count of tiles, alone" in text and ("tile(a_dm, trf, 4, " in text)
    equals_numpy(spec, point)


@pytest.mark.parametrize("order, reuse", [("ij", "outer"), ("ji", "none")])
def test_pairs_inside_both_rolled_loops_equal_numpy(order: str, reuse: str) -> None:
    # bf16, 4 x 2 tiles of 128 x 64 on 16 slices: the inner loop of two tiles is one pair,
    # under the rolled outer loop
    spec = contraction(GEMM, dtype="bf16:f32", sizes=dict(m=512, n=128, k=32))
    point = dict(placement="8x2 of 16x32, on 1/16 of the slices", trf="w", packet=16, order=order, reuse=reuse,
                 pieces=1, pair=True)
    text = source(spec, point)
    assert "ctx.loop(" in text and "result1 = tile(" in text
    equals_numpy(spec, point)


@pytest.mark.parametrize("order, one, two", [
    # ji: w's block goes to the TRF once; a tile's a block (532 cycles), contraction (418) and
    # store (628) one after another, 1,578 a tile; a pair body runs its four DMAs back to back
    # (2,320) with both contractions under them: two pairs save 2 x 836, the last tile alone
    ("ji", 11_064, 9_392),
    # ij: the inner loop has one tile, so the outer loop is paired: w's block and its TRF load
    # come with every tile, and the second tile's loads move under the first's TRF load and
    # contraction
    ("ij", 15_760, 12_832),
])
def test_a_pair_body_is_faster_than_two_one_tile_bodies_in_the_model(order: str, one: int, two: int) -> None:
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=320, n=128, k=64))
    point = ODD | {"order": order}
    assert (makespan(spec, point | {"pair": False}), makespan(spec, point | {"pair": True})) == (one, two)
