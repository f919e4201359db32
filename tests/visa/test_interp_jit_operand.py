"""A kernel cut in pieces contracts the same loaded weights once a piece; the interpreter's
compiled float contraction finds and widens them once and the later pieces take what the
first made (`visa.interp.fast.contract_jit_operand`, issue 61 item 2: `drawn_s3_5`'s layout,
smaller). The results are the oracle's bit for bit (numpy in float64: exact for the small
integers the drawn inputs hold), and so are those of a kernel whose pieces load other
weights into the same TRF rows (each load's write drops what the run kept)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.drawn_kernels import Drawn
from npu_opt.compile_api import compile_kernel
from synth import contraction
from visa import parse_visa
from visa.interp import execute_inout
from visa.interp.fast import contract_jit_weights as jit_weights


@pytest.fixture(autouse=True)
def _numba() -> None:
    """numba, or the test skips: asked here, not at the top, so that collecting this file
    does not load numba in every worker (which makes every float contraction there compile)."""
    pytest.importorskip("numba")


BATCHED = ("out[b,m,n] = a[b,m,k] * w[b,n,k]", {"b": 4, "k": 128, "m": 8, "n": 32},
           "4x1 of 8x32, 4 batch elements side by side, on 1/16 of the slices, w by switch")
TILED = ("out[m,n] = a[m,k] * w[n,k]", {"k": 64, "m": 64, "n": 1024}, "8x16 of 8x32, on 1/2 of the slices")


def _run(monkeypatch, einsum, sizes, placement):
    """(the interpreter's result, the oracle's, how often the weights were widened)."""
    monkeypatch.setenv("NPU_OPT_INTERP_JIT", "1")
    spec = contraction(einsum, dtype="bf16:f32", sizes=sizes, name="pieces")
    drawn = Drawn("pieces", spec, {"placement": placement, "trf": "w", "packet": 16, "pieces": 2}, "batched")
    arrays = drawn.inputs(np.random.default_rng(5))
    widened: list[int] = []
    real = jit_weights.widened
    monkeypatch.setattr(jit_weights, "widened", lambda *a, **k: widened.append(1) or real(*a, **k))
    results, finals = execute_inout(parse_visa(compile_kernel(drawn.kernel).text), arrays)
    return (results + finals)[-1], drawn.oracle(*arrays), len(widened)


def test_the_pieces_of_a_batched_gemm_widen_their_weights_once(monkeypatch):
    got, want, widened = _run(monkeypatch, *BATCHED)
    assert np.array_equal(np.asarray(got, np.float32).view(np.uint32), np.asarray(want, np.float32).view(np.uint32))
    assert widened == 1


def test_tiles_loading_other_weights_into_the_same_rows_widen_each_load_once(monkeypatch):
    """Two tiles along n, two pieces each: four contractions, each tile's weights loaded into
    the same TRF rows; the second tile's must not be the first's kept ones."""
    got, want, widened = _run(monkeypatch, *TILED)
    assert np.array_equal(np.asarray(got, np.float32).view(np.uint32), np.asarray(want, np.float32).view(np.uint32))
    assert widened == 2
