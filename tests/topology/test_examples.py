"""The topology examples (examples/topology/) against numpy oracles, on cpu and visa."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.gather import GatherIndexError
from driver.discover import discover

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(153)


def _kernel(name, file=None):
    found = discover([str(ROOT / "examples" / "topology" / f"{file or name}.py")])
    assert not found.errors
    return next(k for k in found.kernels if k.name == name)


def _both(kernel, *arrays):
    a, b = (npu_opt.run(kernel, *arrays, backend=x) for x in ("cpu", "visa"))
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a


def _bits(a):
    return a.view(np.uint16)


def test_paged_kv_gather_follows_the_block_table():
    pool = RNG.standard_normal((32, 8, 16, 64)).astype(ml_dtypes.bfloat16)
    table = RNG.permutation(32)[:16].astype(np.int32)
    table[3] = table[7]                                  # two logical blocks may share a physical one
    out = _both(_kernel("paged_kv_gather"), pool, table)
    assert (_bits(out) == _bits(pool[table])).all()


def test_embedding_lookup_reads_the_rows_of_the_tokens():
    table = RNG.standard_normal((1000, 128)).astype(ml_dtypes.bfloat16)
    tokens = RNG.integers(0, 1000, 512)
    out = _both(_kernel("embedding_lookup"), table, (tokens * 256).astype(np.int32))
    assert (_bits(out) == _bits(table[tokens])).all()


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_embedding_lookup_refuses_a_token_outside_the_vocabulary(backend):
    offsets = np.zeros(512, np.int32)
    offsets[100] = 1000 * 256
    with pytest.raises(GatherIndexError, match=r"\[TOK=100\] on chip 0 .* selects row 1000 of VOCAB"):
        npu_opt.run(_kernel("embedding_lookup"), np.zeros((1000, 128), ml_dtypes.bfloat16), offsets, backend=backend)


def test_two_chip_add_adds_two_tensors_on_each_chip_with_wrap_around():
    x = RNG.integers(-2 ** 31, 2 ** 31, (2, 2048)).astype(np.int32)
    y = RNG.integers(-2 ** 31, 2 ** 31, (2, 2048)).astype(np.int32)
    x[1, :3], y[1, :3] = [2 ** 31 - 1, -2 ** 31, -1], [1, -1, 1]   # wraps both ways, and -1 + 1
    want = ((x.astype(np.int64) + y.astype(np.int64) + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)
    out = _both(_kernel("two_chip_add"), x, y)
    assert out.shape == (2, 2048) and (out == want).all()
    assert out[1, 0] == -2 ** 31 and out[1, 1] == 2 ** 31 - 1 and out[1, 2] == 0


def test_the_two_chip_artifact_is_built_for_rngd_2chip():
    text = npu_opt.compile(_kernel("two_chip_add")).text
    assert text.splitlines()[2].startswith('target "rngd-2chip"')


def test_take_along_axis_reads_a_position_of_every_head():
    cache = RNG.standard_normal((8, 256, 64)).astype(ml_dtypes.bfloat16)
    positions = RNG.integers(0, 256, 32)
    out = _both(_kernel("take_along_axis"), cache, (positions * 128).astype(np.int32))
    assert (_bits(out) == _bits(np.take(cache, positions, axis=1))).all()


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_put_along_axis_writes_a_position_of_every_head(backend):
    fresh = RNG.standard_normal((8, 16, 64)).astype(ml_dtypes.bfloat16)
    positions = RNG.permutation(256)[:16]
    cache = RNG.standard_normal((8, 256, 64)).astype(ml_dtypes.bfloat16)
    want = cache.copy()
    want[:, positions] = fresh
    npu_opt.run(_kernel("put_along_axis", "take_along_axis"), fresh, (positions * 128).astype(np.int32), cache, backend=backend)
    assert (_bits(cache) == _bits(want)).all()


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_put_along_axis_refuses_a_position_past_the_cache(backend):
    offsets = np.zeros(16, np.int32)
    offsets[9] = 256 * 128
    with pytest.raises(GatherIndexError, match=r"\[NEW=9\].*row 256 of POS"):
        npu_opt.run(_kernel("put_along_axis", "take_along_axis"), np.zeros((8, 16, 64), ml_dtypes.bfloat16), offsets,
                    np.zeros((8, 256, 64), ml_dtypes.bfloat16), backend=backend)
