"""A gather whose index axis is named like the table axis it selects (the paged-KV block
table: `pool[Blk, Head, Tok, Dim]` gathered by `table[Blk]` into slices `Blk, Tok`): the
output's `Blk` is the index's, the table's `Blk` the key. Own kernels, scaled and unscaled,
on cpu and visa against numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from npu_opt import *

axes(Blk=16, Tok=16, Head=4, Dim=64, Pool=24)

Chip = m("1")
Cluster = m("1 # 2")
Rows = DmTensor[bf16, Chip, Cluster, m("Blk, Tok"), m("Head, Dim")]
ROW_BYTES = 4 * 16 * 64 * 2          # one Blk position of the pool: Head x Tok x Dim bf16


@device(chip=1)
def blocks_by_offset(ctx: Context, pool: HbmTensor[bf16, Chip, m("Blk, Head, Tok, Dim")],
                     table: HbmTensor[i32, Chip, m("Blk")]) -> HbmTensor[bf16, Chip, m("Blk, Head, Tok, Dim")]:
    return pool.dma_gather_scaled(table, Rows).to_hbm(ctx.tdma)


@device(chip=1)
def blocks_by_number(ctx: Context, pool: HbmTensor[bf16, Chip, m("Blk, Head, Tok, Dim")],
                     table: HbmTensor[i32, Chip, m("Blk")]) -> HbmTensor[bf16, Chip, m("Blk, Tok, Head, Dim")]:
    staged = table.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("Blk / 2 # 256"), m("Blk % 2")])
    return pool.dma_gather_unscaled(staged, Rows).to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("Blk, Tok, Head, Dim")])


@device(chip=1)
def a_larger_pool(ctx: Context, pool: HbmTensor[bf16, Chip, m("Pool, Head, Tok, Dim")],
                  table: HbmTensor[i32, Chip, m("Blk")]) -> HbmTensor[bf16, Chip, m("Blk, Head, Tok, Dim")]:
    """The control: the key axis (`Pool`) named apart from the index axis."""
    return pool.dma_gather_scaled(table, Rows).to_hbm(ctx.tdma)


def _both(kernel, *arrays):
    a, b = (npu_opt.run(kernel, *arrays, backend=name) for name in ("cpu", "visa"))
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a


def _pool(n):
    return np.random.default_rng(n).standard_normal((n, 4, 16, 64)).astype(ml_dtypes.bfloat16)


def _blocks():
    return np.random.default_rng(3).permutation(16).astype(np.int32)


def test_scaled_gather_of_paged_blocks_by_byte_offset():
    pool, blocks = _pool(16), _blocks()
    out = _both(blocks_by_offset, pool, blocks * ROW_BYTES)
    assert out.shape == (16, 4, 16, 64) and np.array_equal(out.view(np.uint16), pool[blocks].view(np.uint16))


def test_unscaled_gather_of_paged_blocks_by_block_number():
    pool, blocks = _pool(16), _blocks()
    out = _both(blocks_by_number, pool, blocks)
    assert np.array_equal(out.view(np.uint16), pool[blocks].transpose(0, 2, 1, 3).view(np.uint16))


def test_the_same_gather_from_a_pool_named_apart():
    pool = _pool(24)
    blocks = np.random.default_rng(4).choice(24, 16, replace=False).astype(np.int32)
    out = _both(a_larger_pool, pool, blocks * ROW_BYTES)
    assert np.array_equal(out.view(np.uint16), pool[blocks].view(np.uint16))


def test_a_block_past_the_pool_is_a_gather_6_at_run_time():
    pool, blocks = _pool(16), _blocks()
    blocks[5] = 16
    with pytest.raises(Exception, match="GATHER-6|selects row 16"):
        npu_opt.run(blocks_by_offset, pool, blocks * ROW_BYTES, backend="cpu")
