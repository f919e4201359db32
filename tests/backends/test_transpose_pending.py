"""The cpu Transpose Engine reads the cells it turns straight from a committed tile whose
moves are still pending (`engines._pending_read`), when those moves put every packet's
read cells on one strided grid of live cells: the stream's rows, padded to the packet
(`M % 8 # 16`: half of them padding, zeroed each run), are not made first (issue 61,
`drawn_s101_0`'s `a`, stored `k` first and turned on the device). The result still equals
numpy's product bit for bit, with the direct read and without it."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions, engines
from benchmarks.drawn_kernels import pinned

M, N, K = 128, 128, 64  # `a[k,m]` stored k first, turned on the device; `w[n,k]` in the TRF


def _kernel():
    return pinned("tr_pending", "out[n,m] = a[k,m] * w[n,k]", "bf16:f32", dict(m=M, n=N, k=K),
                  dict(placement="1x16 of 128x8, on 1/4 of the slices", trf="w", packet=32, order="ji",
                       reuse="outer", pieces=1, pair=False), "gemm", transpose="device")


def _oracle(arrays: list[np.ndarray]) -> np.ndarray:
    a, w = (x.astype(np.float64) for x in arrays[:2])  # a[k,m], w[n,k]: small integers, every sum exact
    return np.asarray(w @ a, np.float32) + np.float32(0)


@pytest.mark.parametrize("direct", [True, False])
def test_the_turned_cells_are_read_from_the_pending_tile(monkeypatch: pytest.MonkeyPatch, direct: bool) -> None:
    read = engines._pending_read
    views: list[np.ndarray] = []

    def spy(buf, t, valid):
        found = read(buf, t, valid) if direct else None
        if found is not None:
            assert np.shares_memory(found, buf.base)  # a view of the pending rows: nothing made first
            views.append(found)
        return found

    monkeypatch.setattr(engines, "_pending_read", spy)
    d = _kernel()
    arrays = d.inputs(np.random.default_rng(11))
    for threads in (1, 2):
        got = [x.copy() for x in arrays]
        CpuBackend(CpuOptions(threads=threads, blas_threads=threads)).run(d.kernel, tuple(got))
        np.testing.assert_array_equal(got[-1].view(np.uint32), _oracle(arrays).view(np.uint32))
    assert len(views) == (2 if direct else 0)


def test_a_grid_that_is_not_affine_or_reads_padding_is_refused() -> None:
    class Plan:  # a composed move plan: the row element each cell reads, and which cells are live
        def __init__(self, index: np.ndarray, live: np.ndarray | None = None) -> None:
            self.index, self.live = index, live

    time, packet, valid = 6, 4, 2
    index = (7 + 3 * np.arange(time)[:, None] + 10 * np.arange(packet)).reshape(-1)  # cell (s, c) reads 7 + 3 s + 10 c
    assert engines._pending_grid(Plan(index), time, packet, valid, 64) == (7, (3, 10))
    bent = index.copy()
    bent[5 * packet + 1] += 1  # one read cell off the grid
    assert engines._pending_grid(Plan(bent), time, packet, valid, 64) is None
    bent[5 * packet + 1] -= 1
    bent[5 * packet + 2] += 1  # a cell past `valid`: not read, not checked
    assert engines._pending_grid(Plan(bent), time, packet, valid, 64) == (7, (3, 10))
    live = np.ones(time * packet, bool)
    live[2 * packet + 1] = False  # a read cell the moves leave zero
    assert engines._pending_grid(Plan(index, live), time, packet, valid, 64) is None
    assert engines._pending_grid(Plan(index), time, packet, valid, 7 + 5 * 3 + 10) is None  # past the row's end
