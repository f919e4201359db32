"""Features tried inside a rolled loop (tests/loops/feature_kernels.py): each kernel rolled
equals the same kernel unrolled and a numpy oracle, on cpu and visa, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from tests.loops import feature_kernels as F
from visa.verify import verify_text

RNG = np.random.default_rng(60)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_padded_trf_rows_staged_in_a_rolled_loop(backend):
    x = RNG.integers(-128, 128, (64, 16), dtype=np.int8)
    w = RNG.integers(-128, 128, (4, 2, 16), dtype=np.int8)
    want = np.einsum("nk,pok->pno", x.astype(np.int64), w.astype(np.int64)).astype(np.int32)
    rolled = npu_opt.run(F.padded_rows(True), x, w, backend=backend)
    assert rolled.dtype == np.int32 and np.array_equal(rolled, want)
    assert np.array_equal(rolled, npu_opt.run(F.padded_rows(False), x, w, backend=backend))


def test_the_padded_rows_are_staged_once_in_the_body():
    text = npu_opt.compile(F.padded_rows(True)).text
    body = text.split("loop_begin")[1].split("loop_end")[0]
    assert body.count("= trf_load ") == 1 and body.count("= commit ") == 1
    verify_text(text)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_rolled_loop_on_one_padded_chip_of_four(backend):
    x = (np.arange(4 * 256 * 8, dtype=np.int32) * 3 - 5000).reshape(4, 256, 8)
    rolled = npu_opt.run(F.one_chip_of_four(True), x, backend=backend)
    assert rolled.shape == (4, 256, 8) and np.array_equal(rolled, x[::-1])
    assert np.array_equal(rolled, npu_opt.run(F.one_chip_of_four(False), x, backend=backend))
    # the host layout of a padded chip: a leading 1 is accepted, as the reference's tests state it
    assert np.array_equal(npu_opt.run(F.one_chip_of_four(True), x[None], backend=backend), x[::-1])


@pytest.mark.parametrize("backend", ["cpu", "visa"])
@pytest.mark.parametrize("n,k", [(0, 0), (2, 1), (4, 2), (4, 4), (3, 0)])
def test_guards_in_a_runtime_bounded_loop_writing_the_tile_at_the_index(backend, n, k):
    x = (np.arange(64 * 4 * 8, dtype=np.int32) * 7 - 900).reshape(64, 4, 8)
    want = np.zeros_like(x)
    for i in range(n):
        want[:, i] = x[:, 3 - i] if i < k else -1
    rolled = npu_opt.run(F.guarded_writes(True), x, n, k, backend=backend)
    assert np.array_equal(rolled, want)
    assert np.array_equal(rolled, npu_opt.run(F.guarded_writes(False), x, n, k, backend=backend))


def test_a_runtime_bound_past_the_groups_stops_the_guarded_loop():
    x = np.zeros((64, 4, 8), np.int32)
    with pytest.raises(npu_opt.NpuOptError) as e:
        npu_opt.run(F.guarded_writes(True), x, 5, 5, backend="visa")
    assert e.value.code == "RUNTIME-10"


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_address_forms_in_a_rolled_loop(backend):
    """`to_dm_at`, `to_trf_at(TrfAddress.FIRST_HALF)` and `commit_at` in a rolled body run as
    their address-free twins and as the unrolled loop do."""
    x = RNG.integers(-128, 128, (64, 16), dtype=np.int8)
    w = RNG.integers(-128, 128, (4, 2, 16), dtype=np.int8)
    want = np.einsum("nk,pok->pno", x.astype(np.int64), w.astype(np.int64)).astype(np.int32)
    for rolled in (True, False):
        got = npu_opt.run(F.addressed_pages(rolled, True), x, w, backend=backend)
        assert got.dtype == np.int32 and np.array_equal(got, want), rolled


def _without_loc(text: str) -> list[str]:
    return [line.split(" ; loc ")[0] for line in text.splitlines()]


def test_address_forms_in_a_rolled_loop_compile_to_their_twins():
    at = npu_opt.compile(F.addressed_pages(True, True)).text
    twin = npu_opt.compile(F.addressed_pages(True, False)).text
    assert "loop_begin" in at and _without_loc(at) == _without_loc(twin)
    verify_text(at)
    # the DMA and the TRF load an `_at` form makes are located at the `_at` method the kernel
    # calls (the commit, as `commit`'s, at the `commit_trim` that opens it)
    source = open(F.__file__).read().splitlines()
    for op, method in (("dma_window", "to_dm_at"), ("trf_load", "to_trf_at")):
        line = next(l for l in at.splitlines() if f"= {op} " in l)
        row, col = (int(v) for v in line.rsplit(":", 2)[1:])
        assert source[row - 1][col - 1:].startswith(method), (op, source[row - 1], col)
