"""The float contraction's tail on a value of few live rows (issue 61, the bf16 path's
overhead): `contract_time` hands `contract_lane` its live rows only, `contract_lane` gives
the result's live rows (a view when the lanes fill the bus), and `to_view` copies them
straight into the destination when they are evenly spaced (`views._live_steps`), no
buffer of padding rows made on the way. The bits: cpu == the VISA interpreter == a numpy
oracle of the operands, on drawn bf16 kernels placed on 1/n of the slices."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from backends import get_backend
from backends.cpu import CpuBackend, CpuOptions, contract, layout, views
from benchmarks.drawn_kernels import pinned

# tiled, batched and GEMM kernels, each on 1/n of the slices; not a `w by switch` placement, whose
# switch writes its result rows whole (the live-row copies under test are the DMA-fed ones). Seed
# 60's first four such bf16 draws before the `pair` and thin-block levers changed the draw, pinned by their layouts.
DRAWN = [
    pinned("drawn_s60_1", "out[m,n] = w[n,k] * a[m,k]", "bf16:f32", {"k": 128, "m": 64, "n": 1024},
           {"placement": "1x128 of 64x8, on 1/2 of the slices", "trf": "w", "packet": 32, "pieces": 1}, "tiled"),
    pinned("drawn_s60_4", "out[m,n] = a[m,k] * w[n,k]", "bf16:f32", {"k": 64, "m": 256, "n": 64},
           {"placement": "32x4 of 8x16, on 1/2 of the slices", "trf": "w", "packet": 16, "pieces": 1}, "gemm"),
    pinned("drawn_s60_5", "out[m,n] = w[n,k] * a[m,k]", "bf16:f32", {"k": 32, "m": 1024, "n": 128},
           {"placement": "16x8 of 64x16, on 1/2 of the slices", "trf": "w", "packet": 16, "pieces": 2}, "tiled"),
    pinned("drawn_s60_6", "out[b,n,m] = a[b,m,k] * w[b,n,k]", "bf16:f32", {"b": 3, "k": 64, "m": 32, "n": 64},
           {"placement": "4x4 of 16x8, on 1/16 of the slices", "trf": "a", "packet": 32, "pieces": 2}, "batched"),
]


def _oracle(d, arrays: list[np.ndarray]) -> np.ndarray:
    """The padded f32 result from the operands alone: an einsum in float64 (the drawn
    inputs are small integers, so every order of the sums is exact), +0 for a zero."""
    letters = {i: chr(ord("a") + n) for n, i in enumerate(d.spec.sizes)}
    expr = ",".join("".join(letters[i] for i in idx) for _, idx in d.spec.operands)
    expr += "->" + "".join(letters[i] for i in d.spec.result[1])
    wide = [a.astype(np.float64) for a in arrays[:2]]
    return np.einsum(expr, *wide).astype(np.float32) + np.float32(0)


@pytest.mark.parametrize("index", range(len(DRAWN)), ids=[d.name for d in DRAWN])
def test_the_tail_of_live_rows_keeps_the_bits(monkeypatch: pytest.MonkeyPatch, index: int) -> None:
    d = DRAWN[index]
    assert "of the slices" in d.layout and d.spec.dtype_in == "bf16"
    lanes, copies = [], []
    real_lane, real_copy = contract._lane_live, views._direct_live
    monkeypatch.setattr(contract, "_lane_live", lambda *a: lanes.append(real_lane(*a)) or lanes[-1])
    monkeypatch.setattr(views, "_direct_live",
                        lambda op, off, src, out: copies.append((layout.even_rows(src.t), real_copy(op, off, src, out)))
                        or copies[-1][1])
    real_pending = views._direct_pending  # the live rows' moves not made yet, composed into the copy
    monkeypatch.setattr(views, "_direct_pending",
                        lambda op, off, src, out: (real_pending(op, off, src, out) and
                                                   copies.append((layout.even_rows(src.t), True)) is None))
    arrays = d.inputs(np.random.default_rng(index))
    want = _oracle(d, arrays)
    got = {}
    for name, backend in (("cpu", CpuBackend(CpuOptions(threads=1, blas_threads=1))), ("visa", get_backend("visa"))):
        args = [a.copy() for a in arrays]
        backend.run(d.kernel, tuple(args))
        got[name] = args[-1]
    assert got["cpu"].dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got["cpu"].view(np.uint32), want.view(np.uint32), err_msg=d.layout)
    np.testing.assert_array_equal(got["visa"].view(np.uint32), want.view(np.uint32), err_msg=d.layout)
    assert lanes and all(x is not None for x in lanes), d.layout  # every contraction's tail on live rows
    assert copies and all(ok for _, ok in copies), d.layout       # and copied straight from them (or their moves)
    assert any(even.step > 1 for even, _ in copies), d.layout     # rows every n-th slice among them


@pytest.mark.parametrize("every", [1, 2, 4])
def test_live_steps_read_the_cells_a_full_buffer_read_does(every: int) -> None:
    """`_live_steps` on random strided reads of a full buffer (live rows `row0 + i *
    every`, padding rows between): the same cells from the live rows alone, or None when
    a read touches a padding row or crosses a row's end."""
    rng = np.random.default_rng(every)
    count, row_len, row0, item = 6, 24, 1, 4
    full = np.zeros((row0 + count * every, row_len), np.uint32)
    live = rng.integers(1, 1 << 30, (count, row_len)).astype(np.uint32)
    full[row0::every][:count] = live
    row_bytes = row_len * item
    found = refused = 0
    for _ in range(400):
        dims = int(rng.integers(1, 4))
        extents = tuple(int(n) for n in rng.integers(1, 5, dims))
        steps = tuple(int(rng.choice([0, 1, 2, 3, 5, row_len, row_len * every, 2 * row_len * every])) * item
                      for _ in range(dims))
        first = (row0 + int(rng.integers(0, count)) * every) * row_bytes + int(rng.integers(0, row_len)) * item
        span = first + sum((n - 1) * st for n, st in zip(extents, steps))
        if span + item > full.nbytes:
            continue
        want = as_strided(full.reshape(-1)[first // item:], extents, steps)
        got = views._live_steps(first, extents, steps, row_bytes, row0, every, count)
        rows = {((first + sum(i * st for i, st in zip(ix, steps))) // row_bytes) for ix in np.ndindex(*extents)}
        cols_inside = all((first % row_bytes) + sum(i * st for i, st in zip(ix, steps) if st < row_bytes) < row_bytes
                          for ix in np.ndindex(*extents))
        on_live = all(r >= row0 and (r - row0) % every == 0 and (r - row0) // every < count for r in rows)
        if got is None:
            refused += 1
            continue
        assert on_live and cols_inside, (extents, steps, first)
        start, live_steps = got
        read = as_strided(live.reshape(-1)[start // item:], extents, live_steps)
        np.testing.assert_array_equal(read, want)
        found += 1
    assert found > 50 and refused > 20
