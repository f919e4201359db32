"""A result padded along `m` stored cut to the user's rows (synth/live_rows.py, issue 54's
efficiency goal): where the padding rows fill whole slices, the store reads only the slices of
real rows and writes only the real rows; the kernels equal numpy on cpu and visa, and the
padded bench GEMM's store moves 80 requests fewer, and the parameter bound (synth/bound.py)
counts the rows the store moves."""

from __future__ import annotations

from synth import contraction
from synth.bound import space_work
from synth.live_rows import live_rows
from synth.gemm_text import gemm_names
from synth.space import source
from tests.synth.lever_checks import equals_numpy, makespan  # the numpy check on cpu and visa, the model

GEMM = "out[m,n] = a[m,k] * w[n,k]"
PADDED = contraction(GEMM, sizes=dict(m=300, n=200, k=100))       # 320 x 256 x 128 in the kernel
WINNER = dict(placement="64x2 of 5x128, on 1/2 of the slices, w by switch", trf="w", packet=32, order="ij",
              reuse="outer", pieces=1, pair=False)


def _rows(spec, **point) -> int:
    return live_rows(gemm_names(spec, dict(trf="w", packet=32) | point))


def test_the_store_is_cut_where_the_padding_rows_fill_whole_slices_of_one_tile() -> None:
    assert _rows(PADDED, placement=WINNER["placement"]) == 300                     # 60 of 64 slices
    assert _rows(PADDED, placement="32x4 of 10x64, on 1/2 of the slices") == 300   # 30 of 32
    assert _rows(PADDED, placement="16x4 of 20x64, on 1/4 of the slices") == 300   # 15 of 16
    assert _rows(PADDED, placement="8x8 of 40x32, on 1/4 of the slices") == 0      # 300 rows end inside a slice
    assert _rows(PADDED, placement="16x4 of 32x64, on 1/4 of the slices") == 0     # padded inline: M # 512
    assert _rows(contraction(GEMM, sizes=dict(m=512, n=512, k=128)), placement="64x4 of 8x128") == 0  # no padding
    # an epilogue's padding rows are relu(0 + c), not zero: stored, as the oracle holds them
    relu = contraction("out[m,n] = relu(a[m,k] * w[n,k] + c[n])", dtype="bf16:f32", sizes=dict(m=40, n=90, k=40))
    assert _rows(relu, placement="32x2 of 2x64, on 1/4 of the slices, w by switch", packet=16) == 0
    # the bound counts the i32 rows stored: 300 of 256 columns where cut, all 320 where not
    work = space_work(PADDED)
    assert work(WINNER).out_bytes == 300 * 256 * 4
    assert work(WINNER | dict(placement="8x8 of 40x32, on 1/4 of the slices")).out_bytes == 320 * 256 * 4
    text = source(PADDED, WINNER)
    assert 'dst = out.view_mut().tile(m("M"), 300, m("M = 300 #{!} 320, N"), 0)' in text
    assert 'slice_tile(m("M % 320 / 5"), 60, m("1 # 2, N % 256 / 128, M % 320 / 5 = 60 # 64"), 0)' in text


def test_a_cut_store_equals_numpy_on_cpu_and_visa() -> None:
    spec = contraction(GEMM, sizes=dict(m=90, n=64, k=128))           # 96 rows: 6 a slice, 15 of 16 stored
    point = dict(placement="16x4 of 6x16, on 1/4 of the slices", trf="w", packet=32)
    assert 'slice_tile(m("M % 96 / 6"), 15, ' in source(spec, point)
    equals_numpy(spec, point)


def test_the_padded_gemm_stores_only_its_300_rows() -> None:
    # 300 rows x 4 requests (1,200) where 320 rows took 1,280: 5,902 before
    assert makespan(PADDED, WINNER) == 5822
