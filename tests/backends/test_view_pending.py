"""A tile's result committed and not moved yet (a `Pending`, backends/cpu/compact_moves.py)
is written into its destination view by one strided copy when the moves and the view's copy
compose into one (backends/cpu/views.py `_direct_pending`, issue 61): the output equals the
numpy oracle bit for bit, and the path is the one taken."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions, views
from benchmarks.drawn_kernels import pinned

# drawn_s101_0's layout (its result tiles committed `(M % 8, N % 128)`, then written into
# `out[n, m]`) at a smaller k and n: two tiles
TILES = pinned("committed_tiles", "out[n,m] = a[k,m] * w[n,k]", "bf16:f32", {"k": 64, "m": 512, "n": 256},
               {"placement": "1x64 of 128x8, on 1/4 of the slices", "trf": "w", "packet": 32, "order": "ji",
                "reuse": "outer", "pieces": 1, "pair": False}, "gemm", transpose="device")


def test_a_committed_tile_is_written_by_one_composed_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    d = TILES
    taken, direct = [], views._direct_pending
    monkeypatch.setattr(views, "_direct_pending", lambda *a: taken.append(direct(*a)) or taken[-1])
    arrays = d.inputs(np.random.default_rng(3))
    want = d.oracle(*arrays).view(np.uint32)
    backend = CpuBackend(CpuOptions(threads=1))
    for _ in range(2):  # the composition found, then kept
        got = [a.copy() for a in arrays]
        backend.run(d.kernel, tuple(got))
        assert np.array_equal(got[-1].view(np.uint32), want)
    assert taken == [True] * 4  # two tiles a run
