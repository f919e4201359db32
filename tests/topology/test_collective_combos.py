"""A reduce-scatter then an all-gather in one kernel, the all-gather a relayout that writes
a view (`to_dm_view`) or reads a tile (tests/topology/combo_kernels.py): compiled, verified,
and equal on cpu and visa to numpy sums wrapped to i32."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import npu_opt
from driver.discover import discover
from visa.artifact import VisaTextError
from visa.verify import verify_text

HERE = Path(__file__).resolve().parent
FOUND = discover([str(HERE / "combo_kernels.py")])
assert not FOUND.errors
K = {k.name: k for k in FOUND.kernels}
RNG = np.random.default_rng(36)


def _both(kernel, x):
    a, b = (npu_opt.run(kernel, x, backend=name) for name in ("cpu", "visa"))
    assert a.dtype == b.dtype == np.int32 and a.tobytes() == b.tobytes()
    return a


def _i32(*shape):
    x = RNG.integers(-2 ** 31, 2 ** 31, shape).astype(np.int32)
    x.reshape(-1)[:3] = 2 ** 31 - 1          # sums that wrap
    return x


def _wrapped_sum(parts, axis):
    total = parts.astype(np.int64).sum(axis)
    return ((total + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)


def test_chip_reduce_scatter_then_all_gather_into_a_view():
    x = _i32(4, 4, 8, 8)                      # [chip, shard, U, V]
    out = _both(K["chip_rs_ag_into"], x)
    want = np.stack([_wrapped_sum(x[:, s], 0) for s in range(4)])   # shard s, summed over the chips
    assert out.shape == (4, 4, 8, 8) and all((out[c] == want).all() for c in range(4))


def test_chip_reduce_scatter_then_all_gather_of_the_reshaped_shard():
    x = _i32(4, 4, 8, 8)
    out = _both(K["chip_rs_reshape_ag"], x)
    want = np.stack([_wrapped_sum(x[:, s], 0) for s in range(4)])
    assert out.shape == (4, 4, 8, 8) and all((out[c] == want).all() for c in range(4))


def test_chip_all_gather_of_a_tile_into_a_tile_keeps_the_other_cells():
    x = _i32(4, 4, 8, 8)
    out = _both(K["chip_rs_ag_half"], x)
    want = np.zeros((4, 8, 8), np.int32)
    want[:, 4:6] = np.stack([_wrapped_sum(x[:, s], 0) for s in range(4)])[:, 0:2]
    assert all((out[c] == want).all() for c in range(4))


def test_cluster_reduce_scatter_then_all_gather_into_a_view():
    x = _i32(2, 2, 256, 8)                    # [cluster, shard, slice, value]
    out = _both(K["cluster_rs_ag_into"], x)
    want = np.stack([_wrapped_sum(x[:, g], 0) for g in range(2)])
    assert out.shape == (2, 2, 256, 8) and (out[0] == want).all() and (out[1] == want).all()


@pytest.mark.parametrize("name", sorted(K))
def test_the_all_gather_is_one_relayout_record_that_verifies(name):
    text = npu_opt.compile(K[name]).text
    (line,) = [x for x in text.splitlines() if "= dma_relayout " in x]
    assert ("into=" in line) == name.endswith("_into") or name == "chip_rs_ag_half"
    verify_text(text)
    start = line.index("sources=[") + len("sources=[")
    first = line[start:line.index(",", start)]
    edited = line[:start] + str((int(first) + 1) % 2) + line[line.index(",", start):]
    with pytest.raises(VisaTextError, match="sources"):
        verify_text(text.replace(line, edited))
