"""The integer contraction writes its result cells through one strided view
(backends/cpu/contract_plan.py `_dest_view`) instead of a fancy-index scatter: the view
must name exactly the cells the scatter writes, or refuse."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu.contract_plan import _dest_view


def _scatter(values: np.ndarray, dest: np.ndarray, cells: int) -> np.ndarray:
    out = np.zeros((values.shape[0], cells), np.int32)
    out[:, dest.reshape(-1)] = values.reshape(values.shape[0], -1)
    return out


@pytest.mark.parametrize("dest", [
    np.arange(32).reshape(1, 4, 8, 1),
    (np.arange(8)[:, None] * 128 + np.arange(4)[None, :]).reshape(1, 8, 4, 1),
    (np.arange(4)[:, None, None] + (np.arange(2)[:, None] * 64 + np.arange(4) * 4)[None]).reshape(1, 4, 8, 1),
    np.arange(24).reshape(2, 3, 4, 1)[:, :, ::-1] * 1,
])
def test_view_equals_scatter(dest):
    dest = np.ascontiguousarray(dest)
    cells = int(dest.max()) + 5
    rng = np.random.default_rng(1)
    values = rng.integers(-2**20, 2**20, (3, *dest.shape)).astype(np.float32)
    found = _dest_view(np.zeros((3, cells), np.int32), dest)
    want = _scatter(values.astype(np.int32), dest, cells)
    if found is None:  # a reversed digit has a negative stride: the view refuses
        assert (np.diff(dest, axis=2) < 0).any()
        return
    res = np.zeros((3, cells), np.int32)
    view, fine = _dest_view(res, dest)
    np.copyto(view, values.reshape(3, *fine), casting="unsafe")
    assert np.array_equal(res, want)


def test_repeated_cell_refused():
    dest = np.array([0, 1, 1, 2]).reshape(1, 2, 2, 1)
    assert _dest_view(np.zeros((1, 3), np.int32), dest) is None
