"""Scatters with indices in a tensor, against numpy oracles; cpu and visa agree bit for bit."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.gather import GatherIndexError
from tests.topology import gather_kernels as g
from visa.verify import verify_text

RNG = np.random.default_rng(151)


def _both(kernel, *arrays):
    a, b = (npu_opt.run(kernel, *arrays, backend=x) for x in ("cpu", "visa"))
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a


def _oracle(rows, targets, n):
    out = np.zeros((n,) + rows.shape[1:], rows.dtype)
    for k, t in enumerate(targets):             # in index order: the last write wins
        out[t] = rows[k]
    return out


def test_scatter_into_a_larger_cache_last_write_wins():
    data = RNG.standard_normal((512, 64)).astype(ml_dtypes.bfloat16)
    targets = RNG.integers(0, 700, 512)
    targets[10], targets[400] = 699, 699       # a repeated row: index 400 wins
    out = _both(g.scatter_rows, data, (targets * 128).astype(np.int32))
    assert (out.view(np.uint16) == _oracle(data, targets, 700).view(np.uint16)).all()


def test_two_chips_scatter_with_their_own_index():
    data = RNG.integers(-128, 128, (2, 512, 64)).astype(np.int8)
    targets = np.stack([RNG.permutation(700)[:512] for _ in range(2)])
    out = _both(g.two_chip_scatter, data, (targets * 64).astype(np.int32))
    for c in range(2):
        assert (out[c] == _oracle(data[c], targets[c], 700)).all()


def test_scatter_then_gather_is_the_identity():
    data = RNG.integers(-128, 128, (512, 64)).astype(np.int8)
    offsets = (RNG.permutation(700)[:512] * 64).astype(np.int32)
    assert (_both(g.scatter_then_gather, data, offsets) == data).all()


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_bad_scatter_offset_is_reported_with_its_position(backend):
    offsets = np.zeros(512, np.int32)
    offsets[3] = 700 * 64
    with pytest.raises(GatherIndexError, match=r"scatter index \[K=3\] on chip 1 holds byte offset 44800, which "
                                               r"selects row 700 of R, but the output has 700 rows") as info:
        npu_opt.run(g.two_chip_scatter, np.zeros((2, 512, 64), np.int8), np.stack([np.zeros(512, np.int32), offsets]),
                    backend=backend)
    assert "on chip 1" in str(info.value) and info.value.code == "SCATTER-6"


def test_scatter_artifact_verifies():
    text = npu_opt.compile(g.scatter_rows).text
    assert "= dma_scatter " in text and "rows=700 scattered=512" in text
    verify_text(text)
