"""examples/runtime/paged_kv_decode.py against an independent numpy model of a paged KV read:
one compiled kernel, several launch lengths (none, some, all, past the table, negative),
cpu and visa bit for bit."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from driver.discover import discover

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(2709)
BLOCK_BYTES = 16 * 4 * 64 * 2     # tokens x heads x head dim x bf16


@pytest.fixture(scope="module")
def kernel():
    found = discover([str(ROOT / "examples" / "runtime" / "paged_kv_decode.py")])
    assert not found.errors
    return next(k for k in found.kernels if k.name == "paged_kv_decode")


def _oracle(pool, table, used):
    """The sequence's first `used` blocks in table order; zero blocks after them."""
    out = np.zeros((len(table),) + pool.shape[1:], pool.dtype)
    for i, block in enumerate(table):
        if i < used:
            out[i] = pool[block]
    return out


@pytest.mark.parametrize("used", [0, 1, 7, 15, 16, 40, -3])
def test_a_decode_step_reads_the_used_blocks(kernel, used):
    pool = RNG.standard_normal((32, 16, 4, 64)).astype(ml_dtypes.bfloat16)
    table = RNG.permutation(32)[:16]
    table[12:] = 0                                      # stale entries: still blocks of the pool
    table[3] = table[8]                                 # two logical blocks may share a physical one
    offsets = (table * BLOCK_BYTES).astype(np.int32)
    cpu, visa = (npu_opt.run(kernel, pool, offsets, used, backend=b) for b in ("cpu", "visa"))
    assert cpu.tobytes() == visa.tobytes()
    assert np.array_equal(cpu.view(np.uint16), _oracle(pool, table, used).view(np.uint16))
