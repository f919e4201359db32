"""examples/topology/paged_kv_cache.py against an independent numpy model of a paged KV cache."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from driver.discover import discover

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(271)
BLOCK_BYTES = 16 * 4 * 64 * 2     # tokens x heads x head dim x bf16


def _kernel():
    found = discover([str(ROOT / "examples" / "topology" / "paged_kv_cache.py")])
    assert not found.errors
    return next(k for k in found.kernels if k.name == "paged_kv_cache")


def _oracle(pool, fresh, slots, table):
    """Write the fresh blocks into their slots, then read the sequence in block-table order."""
    cache = pool.copy()
    for block, slot in zip(fresh, slots):
        cache[slot] = block
    return cache, np.stack([cache[b] for b in table])


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_paged_kv_cache_writes_then_reads_through_the_block_table(backend):
    pool = RNG.standard_normal((32, 16, 4, 64)).astype(ml_dtypes.bfloat16)
    fresh = RNG.standard_normal((4, 16, 4, 64)).astype(ml_dtypes.bfloat16)
    slots = RNG.permutation(32)[:4]
    table = RNG.permutation(32)[:16]
    table[:2] = slots[:2]                               # the sequence reads two of the blocks just written
    table[5] = table[9]                                 # two logical blocks may share a physical one
    want_pool, want = _oracle(pool, fresh, slots, table)
    buf = pool.copy()
    out, final = npu_opt.run(_kernel(), buf, fresh, (slots * BLOCK_BYTES).astype(np.int32), table.astype(np.int32),
                             backend=backend)
    assert final is buf                                 # the in-out pool comes back after the result
    assert np.array_equal(out.view(np.uint16), want.view(np.uint16))
    assert np.array_equal(buf.view(np.uint16), want_pool.view(np.uint16))


def test_cpu_and_visa_agree_bit_for_bit():
    pool = RNG.standard_normal((32, 16, 4, 64)).astype(ml_dtypes.bfloat16)
    fresh = RNG.standard_normal((4, 16, 4, 64)).astype(ml_dtypes.bfloat16)
    args = (fresh, (RNG.permutation(32)[:4] * BLOCK_BYTES).astype(np.int32), RNG.permutation(32)[:16].astype(np.int32))
    bufs = [pool.copy(), pool.copy()]
    outs = [npu_opt.run(_kernel(), b, *args, backend=x)[0] for b, x in zip(bufs, ("cpu", "visa"))]
    assert outs[0].tobytes() == outs[1].tobytes() and bufs[0].tobytes() == bufs[1].tobytes()
