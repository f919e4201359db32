"""The exact float contraction eight rows a tile (visa/interp/fast/contract_jit_tiles.py
`octet_kernel`): when no kept time slot has a partner, the four-row tile computes each slot
in both halves of its vector, so rows that read one TRF operand go eight to the shared 8 x 8
tile instead. A batched GEMM of that form against numpy's sums (small integers: no sum
rounds), and the row order the tiles take against one written out by hand."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from benchmarks.drawn_kernels import pinned
from npu_opt.compile_api import compile_kernel
from visa import parse_visa
from visa.interp import execute_inout
from visa.interp.fast import contract_jit
from visa.interp.fast import contract_jit_tiles as jit_tiles


def test_rows_of_one_operand_go_eight_to_a_tile() -> None:
    """Groups in order of first use, each padded to eight by its last row."""
    which = np.array([1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1])
    want = [0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 11, 11, 11, 11, 11, 11, 1, 4, 4, 4, 4, 4, 4, 4]
    assert jit_tiles.tile_order(which, jit_tiles.OCTET).tolist() == want


def test_unpaired_slots_take_the_eight_row_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """w streamed, a in the TRF: every slot reads another stream row and the same TRF reads
    (no partner), and each TRF operand is read by eight rows. The eight-row tiles run and
    give numpy's bits."""
    b, k, m, n = 4, 32, 64, 128
    monkeypatch.setenv(contract_jit.ENV, "1")
    taken: list = []
    octets = contract_jit._by_octets
    monkeypatch.setattr(contract_jit, "_by_octets", lambda *args: taken.append(octets(*args)) or taken[-1])
    drawn = pinned("octets", "out[b,n,m] = w[b,n,k] * a[b,m,k]", "bf16:f32", dict(b=b, k=k, m=m, n=n),
                   dict(placement="8x8 of 16x8, 4 batch elements side by side", trf="a", packet=16), "batched")
    rng = np.random.default_rng(5)
    w = rng.integers(-8, 9, (b, n, k)).astype(ml_dtypes.bfloat16)
    a = rng.integers(-8, 9, (b, m, k)).astype(ml_dtypes.bfloat16)
    results, finals = execute_inout(parse_visa(compile_kernel(drawn.kernel).text), [w, a, np.zeros((b, n, m), np.float32)])
    got = np.asarray((results + finals)[-1])
    want = np.einsum("bnk,bmk->bnm", w.astype(np.float64), a.astype(np.float64)).astype(np.float32)
    assert taken == [True]
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
