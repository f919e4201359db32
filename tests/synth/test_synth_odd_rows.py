"""Blocks of rows that are not a power of two (synth/odd_rows.py, issue 54's efficiency goal):
a result of 320 rows is cut exactly over 64 slices, 5 rows each, so `w by switch` (refused on
a tile padded along `m`, SWITCH-11) moves `w` once. Where they are offered, that their kernels
equal numpy on cpu and visa, and that the model finds the padded GEMM faster."""

from __future__ import annotations

from synth import contraction
from synth.odd_rows import odd_rows
from synth.offer import offered
from synth.space import points, source
from synth.tiling import geometry
from tests.synth.lever_checks import equals_numpy, makespan  # the numpy check on cpu and visa, the model

GEMM = "out[m,n] = a[m,k] * w[n,k]"


def _odd(spec) -> list[str]:
    return [p for p in points(spec)["placement"] if geometry(p).r & (geometry(p).r - 1)]


def test_odd_rows_cut_the_rows_exactly_over_a_power_of_two_of_slices() -> None:
    assert odd_rows(320, 256) == [5, 10, 20, 40, 80, 160, 320]
    assert odd_rows(96, 16) == [6, 12, 24, 48, 96]      # at most 16 slices: 6 rows on 16 of them
    assert odd_rows(512, 256) == []                     # a power of two: every cut is one


def test_odd_blocks_are_offered_with_w_stationary_and_only_where_rows_are_not_a_power_of_two() -> None:
    padded = contraction(GEMM, sizes=dict(m=300, n=200, k=100))    # 320 x 256 x 128 in the kernel
    odd = _odd(padded)
    assert "64x2 of 5x128, on 1/2 of the slices, w by switch" in odd
    assert "32x4 of 10x64, on 1/2 of the slices, w by switch" in odd
    point = dict(placement="32x4 of 10x64, on 1/2 of the slices", packet=32)
    assert offered(padded, point | {"trf": "w"}) and not offered(padded, point | {"trf": "a"})
    # every odd tile covers the rows exactly: no padding along m, so the switch twins exist
    assert all(320 % geometry(p).tm == 0 for p in odd)
    assert _odd(contraction(GEMM, sizes=dict(m=512, n=512, k=512))) == []


def test_odd_rows_in_pieces_equal_numpy_on_cpu_and_visa() -> None:
    i8 = contraction(GEMM, sizes=dict(m=90, n=64, k=128))          # 96 rows: 6 a slice on 16 slices
    assert "16x4 of 6x16, on 1/4 of the slices" in _odd(i8)        # 6 rows a slice, in 2 pieces of 3
    equals_numpy(i8, dict(placement="16x4 of 6x16, on 1/4 of the slices", trf="w", packet=32, pieces=2))


def test_odd_rows_with_w_and_the_bias_switched_equal_numpy_on_cpu_and_visa() -> None:
    # 3 rows a slice on 32 slices, w's 32 rows cut over them, and the bias switched into the VRFs
    # (synth/bias_switch.py: its 4 flits on 4 of them, spread over all 32)
    epilogue = contraction("q[m,n] = requant(relu(a[m,k] * w[n,k] + b[n]), 0.0009765625)",
                           sizes=dict(m=96, n=64, k=256))
    point = dict(placement="32x2 of 3x32, on 1/4 of the slices, w by switch", trf="w", packet=32)
    assert point["placement"] in _odd(epilogue) and "CUSTOM_BROADCAST(ring_size=32)" in source(epilogue, point)
    equals_numpy(epilogue, point)


def test_the_padded_gemm_runs_faster_on_odd_blocks() -> None:
    spec = contraction(GEMM, sizes=dict(m=300, n=200, k=100))
    odd = dict(placement="64x2 of 5x128, on 1/2 of the slices, w by switch", trf="w", packet=32, order="ij",
               reuse="outer", pieces=1, pair=False)
    # the former winner: the tile padded to 512 rows, so w copied to the 10 slices of real rows
    former = dict(placement="16x4 of 32x64, on 1/4 of the slices", trf="w", packet=32, order="ij", reuse="outer",
                  pieces=2, pair=False)
    assert (makespan(spec, odd), makespan(spec, former)) == (5822, 7700)
