"""A kernel placed on a part of the slices (synth's `on 1/4 of the slices`: slices 0, 4, 8,
..., or a tile padded inside the kernel: runs of slices a fixed distance apart) is read by the interpreter as strided walks, as one on consecutive slices is (issue 61:
such a layout ran 5-8x the cpu backend's time through byte gathers): the feed reads its
operands without a gather, the TRF read takes the stepped slices as a view, and the
results equal an independent numpy oracle bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from synth import contraction
from npu_opt.compile_api import compile_kernel
from synth.space import build, space_of
from visa import parse_visa
from visa.interp import contract, execute_inout, feed
from visa.interp import trf as trf_mod
from visa.interp.trf import _stepped
from visa.interp.rows import slice_grid
from backends import get_backend


@pytest.mark.parametrize("index, want", [([0, 4, 8, 12], slice(0, 13, 4)), ([3, 5, 7], slice(3, 8, 2)),
                                         ([2, 3, 4], slice(2, 5, 1)), ([0, 2, 5], None), ([7], slice(7, 8))])
def test_stepped_slices_are_a_slice_and_pick_what_the_index_picks(index, want):
    index = np.asarray(index, np.int64)
    got = _stepped(index)
    arr = np.arange(2 * 16).reshape(2, 16)
    if want is None:
        assert not isinstance(got, slice)
    else:
        assert got == want and np.shares_memory(arr[:, got], arr)
    assert np.array_equal(arr[:, got], arr[:, index])


@pytest.mark.parametrize("n", [0, 1, 2, 3, 64, 65, 200])
def test_the_step_check_is_numpys_on_short_and_long_indices(n):
    """`trf._in_steps` (Python ints up to `_SHORT` entries, numpy past it) against numpy's
    comparison, on runs, stepped runs and runs with one entry off."""
    for first, step in ((0, 1), (5, 3), (7, 1)):
        run = first + step * np.arange(n, dtype=np.int64)
        assert trf_mod._in_steps(run, first, step)
        for k in range(0, n, max(1, n // 5)):
            off = run.copy()
            off[k] += 1
            assert trf_mod._in_steps(off, first, step) == np.array_equal(off, run)
        if n:
            assert not trf_mod._in_steps(run, first, step + 1) or n == 1


@pytest.mark.parametrize("slices, grid", [
    ([0, 4, 8], [(1, 0), (3, 4)]), ([1, 2, 3], [(1, 0), (3, 1)]), ([0, 2, 5], None), ([4], None), ([6, 4, 2], None),
    ([0, 1, 2, 16, 17, 18], [(2, 16), (3, 1)]), ([0, 1, 2, 16, 17], None), ([0, 1, 2, 16, 17, 19], None)])
def test_the_feed_reads_a_grid_of_slices_as_a_walk(slices, grid):
    assert slice_grid(np.asarray(slices, np.int64)) == grid


@pytest.mark.parametrize("size, placement, trf", [
    (256, "8x8 of 32x32, on 1/4 of the slices", "w"), (256, "32x2 of 8x128, on 1/4 of the slices", "a"),
    (96, "4x4 of 32x32, on 1/16 of the slices", "a")])   # 96: 3 x 3 blocks of a 4 x 4 tile, padded inside
def test_a_kernel_on_a_grid_of_slices_is_read_without_a_gather(monkeypatch, size, placement, trf):
    spec = contraction("out[m,n] = a[m,k] * w[n,k]", dtype="i8:i32", sizes=dict(m=size, n=size, k=64),
                       name="stepped_slices")
    kernel = build(spec, dict(placement=placement, trf=trf, packet=32))
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, (size, 64), dtype=np.int8)
    w = rng.integers(-128, 128, (size, 64), dtype=np.int8)
    want = (a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32)

    def refused(*args, **kwargs):
        raise AssertionError("the feed gathered bytes one by one")
    monkeypatch.setattr(feed, "gather", refused)
    out = np.zeros((size, size), np.int32)
    get_backend("visa").run(kernel, (a, w, out))
    assert np.array_equal(out, want)


@pytest.mark.parametrize("placement, trf, dtype", [
    ("64x2 of 8x128, on 1/2 of the slices", "w", "i8:i32"), ("16x4 of 8x128, on 1/4 of the slices", "a", "i8:i32"),
    ("8x8 of 32x32, on 1/4 of the slices", "w", "bf16:f32")])
def test_copies_on_every_nth_slice_are_known_without_comparing_them(monkeypatch, placement, trf, dtype):
    """On every n-th slice the feeds are held as their distinct packets (`_repeated`: a view
    of the DM, not a copy per slice), a TRF load of a DMA's broadcast notes which slices hold
    the same weights, and the integer contraction takes its distinct rows from that note
    (`weight_rows` gives each row's first equal row, not the TRF bytes to compare); the
    bits equal the plain interpreter's and numpy's."""
    m, n = (512, 256) if "8x128" in placement else (256, 256)
    spec = contraction("out[m,n] = a[m,k] * w[n,k]", dtype=dtype, sizes=dict(m=m, n=n, k=64), name="stepped_copies")
    kernel = build(spec, dict(placement=placement, trf=trf, packet=32))
    arrays = list(space_of(spec, run=True).inputs(np.random.default_rng(3)))
    want = np.asarray(space_of(spec, run=True).oracle(*arrays))
    held, proxies = [], []
    real_repeated, real_rows = feed._repeated, trf_mod.weight_rows
    monkeypatch.setattr(feed, "_repeated", lambda *a: held.append(real_repeated(*a)) or held[-1])
    monkeypatch.setattr(contract, "weight_rows", lambda *a: proxies.append(real_rows(*a)) or proxies[-1])
    interp = get_backend("visa")
    fast = [x.copy() for x in arrays]
    interp.run(kernel, tuple(fast))
    assert held and all(h is not None for h in held)
    if dtype == "i8:i32":
        assert proxies and all(p is not None and p.shape[1:] == (1,) for p in proxies)
    _, (plain,) = execute_inout(parse_visa(compile_kernel(kernel).text), arrays, fast=False)
    assert np.array_equal(fast[-1].view(np.uint8), want.view(np.uint8))
    assert np.array_equal(np.asarray(plain).view(np.uint8), want.view(np.uint8))
