"""Thin blocks of `npu-opt synth` (synth/thin.py, issue 54's efficiency goal): with `w`
stationary a slice's block may hold fewer rows than a lane group, so a result of few rows
spreads over more slices without narrowing its rows of results. Where they are offered, that
their kernels equal numpy on cpu and visa, and that the model finds the small bf16 GEMM faster."""

from __future__ import annotations

from synth import contraction
from synth.offer import offered
from synth.space import points
from synth.tiling import geometry
from tests.synth.lever_checks import equals_numpy, makespan  # the numpy check on cpu and visa, the model

GEMM = "out[m,n] = a[m,k] * w[n,k]"


def _thin(spec) -> list[str]:
    """The thin blocks of synth/thin.py (a double-buffered TRF's blocks, synth/trf_double.py, may
    also hold fewer rows than a lane group, but are another lever with its own tests)."""
    return [p for p in points(spec)["placement"] if geometry(p).r < 8 and not geometry(p).double]


def test_thin_blocks_reach_only_results_too_short_for_the_slices_and_only_with_w_stationary() -> None:
    small = contraction(GEMM, dtype="bf16:bf16", sizes=dict(m=128, n=128, k=256))
    thin = _thin(small)
    assert "64x1 of 2x128, on 1/4 of the slices, w by switch" in thin and "128x1 of 1x128, on 1/2 of the slices" in thin
    point = dict(placement="64x1 of 2x128, on 1/4 of the slices", packet=16)
    assert offered(small, point | {"trf": "w"}) and not offered(small, point | {"trf": "a"})
    # a result that fills the slices with blocks of a lane group's rows gets none (the frontier drops them)
    assert _thin(contraction(GEMM, sizes=dict(m=512, n=512, k=512))) == []


def test_thin_kernels_equal_numpy_on_cpu_and_visa() -> None:
    bf16 = contraction(GEMM, dtype="bf16:bf16", sizes=dict(m=32, n=128, k=64))
    assert "16x4 of 2x32, on 1/4 of the slices, w by switch" in _thin(bf16)
    equals_numpy(bf16, dict(placement="16x4 of 2x32, on 1/4 of the slices, w by switch", trf="w", packet=16))
    i8 = contraction(GEMM, sizes=dict(m=16, n=128, k=64))
    assert "8x8 of 4x16, on 1/4 of the slices" in _thin(i8)   # 4 rows a slice, in 2 pieces of 2
    equals_numpy(i8, dict(placement="8x8 of 4x16, on 1/4 of the slices", trf="w", packet=32, pieces=2))


def test_the_small_bf16_gemm_runs_faster_on_thin_blocks() -> None:
    spec = contraction(GEMM, dtype="bf16:bf16", sizes=dict(m=128, n=128, k=256))
    thin = dict(placement="64x1 of 2x128, on 1/4 of the slices, w by switch", trf="w", packet=16, pieces=1)
    assert thin["placement"] in points(spec)["placement"]
    former = dict(placement="16x2 of 8x64, on 1/8 of the slices, w by switch", trf="w", packet=16, pieces=2)
    # w's 128-row block over 64 slices: 2 whole rows a slice (synth/row_cut.py; 6,780 in pieces of k)
    assert (makespan(spec, thin), makespan(spec, former)) == (6524, 8058)
