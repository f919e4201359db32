"""The `pieces` lever of `npu-opt synth` (synth/overlap.py, issue 54's efficiency goal): a
tile's streamed row block moves, is contracted and is stored in two pieces, so the DMA of one
piece overlaps the contraction of the other and the first piece's store overlaps the second's
contraction. Where it is offered, that each kind of kernel it writes equals numpy on cpu and
visa, and that the schedule model finds it faster where the one-piece kernel runs its load,
contraction and store one after another."""

from __future__ import annotations

import pytest

from synth import contraction
from synth.offer import offered
from synth.overlap import piece_tile
from synth.space import points, source
from tests.synth.lever_checks import equals_numpy, makespan

GEMM = "out[m,n] = a[m,k] * w[n,k]"
EPILOGUE = "q[m,n] = requant(relu(a[m,k] * w[n,k] + b[n]), 0.0009765625)"


def test_pieces_are_offered_with_w_stationary_and_not_where_a_piece_cannot_be_cut() -> None:
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=512, n=512, k=64))
    assert points(spec)["pieces"] == [1, 2]
    point = dict(placement="64x4 of 8x128", packet=32, pieces=2)
    assert offered(spec, point | {"trf": "w"}) and not offered(spec, point | {"trf": "a"})
    # k in time blocks: the last chunk of each slice's 8 rows in pieces of 4, the earlier chunks cut in DM
    long_k = contraction(GEMM, dtype="i8:i32", sizes=dict(m=512, n=512, k=4096))
    assert offered(long_k, dict(placement="64x4 of 8x128, k in 8 time blocks", trf="w", packet=32, pieces=2))
    # a result padded along m inside the kernel (96 rows as one 128-row tile): pieces of each slice's
    # rows where the 96 rows are whole slices' rows (8 a slice), not where a slice's 64 would be cut
    padded = contraction(GEMM, dtype="i8:i32", sizes=dict(m=96, n=96, k=64))
    assert offered(padded, dict(placement="16x1 of 8x128, on 1/16 of the slices", trf="w", packet=32, pieces=2))
    assert not offered(padded, dict(placement="2x1 of 64x128, on 1/128 of the slices", trf="w", packet=32,
                                    pieces=2))
    # a GEMV has its own layouts, and a space nothing fits offers no pieces to refuse again
    assert "pieces" not in points(contraction("y[m] = a[m,k] * x[k]", dtype="i8:i32", sizes=dict(m=512, k=64)))
    assert "pieces" not in points(contraction(GEMM, dtype="i8:i32", sizes=dict(m=512, n=512, k=1 << 20)))


def test_a_piece_tile_cuts_each_slices_rows_of_the_m_term() -> None:
    # 8 rows a slice in 2 pieces of 4: the tile's 512 rows become slices x pieces x rows
    assert piece_tile(["1 # 1, M % 512", "K"], 0, "M", 8, 2) == \
        '.tile(m("M % 8 / 4"), 1, m("1 # 1, M % 512 / 8, 1 # 2, M % 4, K"), p)'
    assert piece_tile(["1 #{!} 4", "1 #{!} 1, M % 128", "N"], 1, "M", 16, 2, write=True) == \
        '.tile(m("M % 16 / 8"), 1, m("1 #{!} 4, 1 #{!} 1, M % 128 / 16, 1 #{!} 2, M % 8, N"), p)'


def test_a_one_tile_kernel_in_pieces_loads_contracts_and_stores_each_piece() -> None:
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=128, n=128, k=64))
    point = dict(placement="16x1 of 8x128, on 1/16 of the slices, w by switch", trf="w", packet=32, pieces=2)
    text = source(spec, point)
    assert "for p in range(2)]" in text and "for p, result in enumerate(results):" in text
    equals_numpy(spec, point)


def test_k_in_time_blocks_moves_its_last_chunk_in_pieces_and_cuts_the_others_in_dm() -> None:
    # one tile with w by switch (bf16 sums to f32), then two tiles in rolled loops (i8): each equals numpy
    spec = contraction(GEMM, dtype="bf16:f32", sizes=dict(m=128, n=128, k=384))
    point = dict(placement="16x1 of 8x128, k in 2 time blocks, on 1/16 of the slices, w by switch", trf="w",
                 packet=16, pieces=2)
    text = source(spec, point)
    assert '[[dm.view().tile(m("M % 8 / 4"), 1, m("1 # 2, M % 4, K % 192"), p)' in text
    assert "part = (ctx.main.begin(streamed[t][p].view())" in text and "acc[p] = part.to_vrf(" in text
    equals_numpy(spec, point)
    tiles = contraction(GEMM, dtype="i8:i32", sizes=dict(m=128, n=64, k=256))
    equals_numpy(tiles, dict(placement="4x1 of 16x64, k in 2 time blocks, on 1/64 of the slices", trf="w", packet=32,
                             order="ij", reuse="outer", pieces=2, pair=False))


def test_pieces_hide_the_bf16_benchmarks_last_contraction_under_its_stores() -> None:
    # 512 x 512 x 384 bf16: one piece runs the last chunk's contraction (1,826 cycles) between the
    # last load and the 1 MB store; two pieces run it under the DMAs for two more start-ups, and the
    # DMA context is never idle after the launch: 22,710 -> 21,884 cycles (20,662 -> 19,836 with w's
    # block cut into whole rows, synth/row_cut.py; 18,824 with its chunks in one DMA, synth/time_blocks.py)
    spec = contraction(GEMM, dtype="bf16:f32", sizes=dict(m=512, n=512, k=384))
    point = dict(placement="64x4 of 8x128, k in 2 time blocks, w by switch", trf="w", packet=16)
    two = makespan(spec, point | dict(pieces=2))
    assert two == 18_824 and two + 800 < makespan(spec, point | dict(pieces=1))


def test_a_result_padded_along_m_inside_the_kernel_streams_each_slices_rows_in_pieces() -> None:
    # 72 rows padded to 96 by the spec, to a 128-row tile inside the kernel (`M # 128`): the piece
    # tiles cut the views' own 96 rows, 32 a slice, into 16-row pieces; the idle slices get none
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=72, n=64, k=32))
    point = dict(placement="4x2 of 32x32, on 1/32 of the slices", trf="w", packet=32, pieces=2)
    text = source(spec, point)
    assert 'tile(m("M % 32 / 16"), 1, m("M / 32, 1 # 2, M % 16, K"), p)' in text and "M # 128 % 16" in text
    equals_numpy(spec, point)


def test_a_bias_moves_before_the_pieces_and_loads_its_vrf_after_the_trf() -> None:
    spec = contraction(EPILOGUE, dtype="i8:i32", sizes=dict(m=128, n=128, k=64))
    point = dict(placement="16x1 of 8x128, on 1/16 of the slices, w by switch", trf="w", packet=32, pieces=2)
    text = source(spec, point)
    calls = [line.strip() for line in text.splitlines()[-6:]]
    assert "return (ctx.main.begin(b_dm.view())" in text   # the VRF load on main, beside sub's TRF load
    assert calls == ["w_dm = w_block(0)", "b_dm = b_dm_block(0)", "a_dm = a_block(0)", "trf = stationary(w_dm)",
                     "b_blocks[0] = b_vrf_load(b_dm)", "tile(a_dm, trf, 0, 0)"]
    equals_numpy(spec, point)


@pytest.mark.parametrize("order", ["ij", "ji"])
def test_pieces_inside_rolled_tile_loops_equal_numpy(order: str) -> None:
    # bf16, 4 x 2 tiles of 128 x 64 on 16 slices: the pieces inside the rolled loops' body
    spec = contraction(GEMM, dtype="bf16:f32", sizes=dict(m=512, n=128, k=32))
    point = dict(placement="8x2 of 16x32, on 1/16 of the slices", trf="w", packet=16, order=order, reuse="outer",
                 pieces=2)
    assert "ctx.loop(" in source(spec, point)
    equals_numpy(spec, point)


@pytest.mark.parametrize("einsum, sizes, placement, one, two", [
    # the winner of one piece before the lever (benchmarks/bench_synth.py gemm_i8): its w block,
    # a (4,596), contraction (2,338) and store (4,596) one after another; in two pieces the DMAs
    # run back to back (two more start-ups) and the contractions hide under them. (The w block
    # moves as 2 whole rows a slice, synth/row_cut.py: 16,078 and 14,740 with pieces of k.)
    (GEMM, dict(m=512, n=512, k=512), "64x4 of 8x128, w by switch", 15_054, 13_716),
    # bench_synth.py's epilogue: the TRF load (1,314) runs on sub under the bias's and pieces' DMAs,
    # the bias's VRF load (322) on main beside it, before the first piece's contraction (on sub
    # after the TRF load it was on the chain: 8,032); the bias moves once, a flit a slice, and the
    # switch broadcasts it (synth/bias_switch.py: 9,010 and 7,908 with a DMA copy per slice); one piece
    # moves the bias after w too (synth/overlap.py bias_first: 8,818 when its DMA waited for the TRF load)
    (EPILOGUE, dict(m=512, n=512, k=128), "32x2 of 16x256, on 1/4 of the slices, w by switch", 8_194, 7_716),
])
def test_two_pieces_overlap_the_dmas_with_the_contraction_in_the_model(einsum: str, sizes: dict[str, int],
                                                                      placement: str, one: int, two: int) -> None:
    spec = contraction(einsum, dtype="i8:i32", sizes=sizes)
    point = dict(placement=placement, trf="w", packet=32)
    assert (makespan(spec, point | {"pieces": 1}), makespan(spec, point | {"pieces": 2})) == (one, two)
