"""The collective examples (examples/topology/chip_collectives.py, cluster_collectives.py)
against numpy sums in int64 wrapped to i32, on cpu and visa (bit for bit)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import npu_opt
from driver.discover import discover

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(2718)


def _kernels(file):
    found = discover([str(ROOT / "examples" / "topology" / f"{file}.py")])
    assert not found.errors
    return {k.name: k for k in found.kernels}


CHIP, CLUSTER = _kernels("chip_collectives"), _kernels("cluster_collectives")


def _both(kernel, x):
    a, b = (npu_opt.run(kernel, x, backend=name) for name in ("cpu", "visa"))
    assert a.dtype == b.dtype == np.int32 and a.tobytes() == b.tobytes()
    return a


def _wrapped_sum(parts, axis):
    total = parts.astype(np.int64).sum(axis)
    return ((total + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)


def _i32(*shape):
    x = RNG.integers(-2 ** 31, 2 ** 31, shape).astype(np.int32)
    x.reshape(-1)[:2] = 2 ** 31 - 1          # sums that wrap
    return x


def test_chip_reduce_scatter_leaves_shard_c_summed_on_chip_c():
    x = _i32(4, 4, 256, 8)                   # [chip, shard, slice, value]
    out = _both(CHIP["chip_reduce_scatter"], x)
    assert (out == np.stack([_wrapped_sum(x[:, c], 0) for c in range(4)])).all()


def test_chip_all_gather_gives_every_chip_every_shard():
    x = _i32(4, 256, 8)
    out = _both(CHIP["chip_all_gather"], x)
    assert out.shape == (4, 4, 256, 8) and all((out[c] == x).all() for c in range(4))


@pytest.mark.parametrize("name", ["chip_ring_all_reduce", "chip_butterfly_all_reduce"])
def test_chip_all_reduces_give_every_chip_the_sum(name):
    x = _i32(4, 256, 8)
    out = _both(CHIP[name], x)
    assert all((out[c] == _wrapped_sum(x, 0)).all() for c in range(4))


def test_the_ring_moves_data_one_chip_per_round():
    text = npu_opt.compile(CHIP["chip_ring_all_reduce"]).text
    records = [line for line in text.splitlines() if "= dma_redistribute " in line]
    assert len(records) == 3 and all("sources=[2, 3, 4, 5, 6, 7, 0, 1]" in line for line in records)


def test_cluster_reduce_scatter_leaves_shard_g_summed_on_cluster_g():
    x = _i32(2, 2, 256, 8)                   # [cluster, shard, slice, value]
    out = _both(CLUSTER["cluster_reduce_scatter"], x)
    assert (out == np.stack([_wrapped_sum(x[:, g], 0) for g in range(2)])).all()


def test_cluster_all_gather_gives_both_clusters_both_shards():
    x = _i32(2, 256, 8)
    out = _both(CLUSTER["cluster_all_gather"], x)
    assert out.shape == (2, 2, 256, 8) and (out[0] == x).all() and (out[1] == x).all()


def test_cluster_all_reduce_gives_both_clusters_the_sum():
    x = _i32(2, 256, 8)
    out = _both(CLUSTER["cluster_all_reduce"], x)
    assert (out[0] == _wrapped_sum(x, 0)).all() and (out[1] == _wrapped_sum(x, 0)).all()


@pytest.mark.parametrize("kernels, name, parts", [(CHIP, "chip_all_gather", 8), (CLUSTER, "cluster_all_gather", 2)])
def test_an_all_gather_relayout_keeps_each_parts_loops_in_one_command(kernels, name, parts):
    """The relayout splits its DMA only where the source steps from one (chip, cluster) part
    to the next: at most one command per (source part, destination part), not one per packet
    (it was 1024 commands of 32 bytes, two million modelled cycles of command start-up)."""
    text = npu_opt.compile(kernels[name]).text
    (line,) = [x for x in text.splitlines() if "= dma_relayout " in x]
    assert 0 < line.count("{part=") <= parts * parts
