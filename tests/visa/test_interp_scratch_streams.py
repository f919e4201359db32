"""A program's float accumulators, drained packets and cast flits live in the run's scratch
(`Memory.scratch`: pooled arrays an earlier run left, with its bytes still in them), not in
fresh arrays, which cost a page fault per page every run (issue 61 item 2). Each test hands
the pool a poisoned array of the shape asked for (all bits set: NaN for f32) and checks the
step takes it and still gives the bits of a numpy oracle: every cell the step does not
compute (unused lanes, cells past `valid_elems`, accumulators of no product) is zeroed."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ir.float_bits import narrow_bf16
from tests.tu_ops.builders import gemm
from tests.visa.samples import cast_kernel
from tu_ops.program import TuProgram
from tu_ops.target import get_target
from visa.interp import drain, execute, values
from visa.interp.fast import contract_jit, pool
from visa.interp.memory import Memory


@pytest.fixture(autouse=True)
def empty_pool():
    pool._POOL.clear()
    yield
    pool._POOL.clear()


def _poisoned(shape: tuple[int, ...], dtype) -> np.ndarray:
    """An array of `shape` with every bit set, handed to the pool as an earlier run's scratch."""
    data = np.empty(shape, dtype)
    data.view(np.uint8)[...] = 0xFF
    pool.give_back(data, None, pool.ANY)
    return data


def _op(kernel, mnemonic: str):
    return next(o for s in kernel.steps if isinstance(s, TuProgram) for o in s.ops if o.MNEMONIC == mnemonic)


def test_lane_fold_drains_into_a_pooled_array():
    fold = _op(gemm("bf16"), "lane_fold")
    acc = np.random.default_rng(3).standard_normal((5, fold.lanes, fold.cycles, 1)).astype(np.float32)
    stale = _poisoned((5, fold.cycles, 1, 8), np.float32)
    got = drain.run_lane_fold(fold, acc, Memory(get_target("rngd")))
    assert np.shares_memory(got, stale)
    assert np.array_equal(got, acc[..., 0].transpose(0, 2, 1).view(np.uint32))


def test_cast_writes_its_flits_into_a_pooled_array():
    cast = _op(cast_kernel(), "cast_op")
    n, rows, steps = cast.valid_elems, 3, cast.output_type.time.size
    values = np.random.default_rng(4).standard_normal((rows, steps, n)).astype(np.float32)
    values[0, 0, :3] = [0.0, -0.0, 1e-40]        # zeros and a subnormal
    stale = _poisoned((rows, steps, 16), np.uint16)
    got = drain.run_cast(cast, values.view(np.uint32), Memory(get_target("rngd")))
    assert np.shares_memory(got, stale)
    assert np.array_equal(got[..., :n], narrow_bf16(values.view(np.uint32))) and not got[..., n:].any()


def test_float_accumulators_come_from_scratch_and_start_zero(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv(contract_jit.ENV, "1")       # the compiled float contraction, however small
    rng = np.random.default_rng(5)        # small integers: every sum exact, any order the oracle's
    a, w = (rng.integers(-8, 8, (512, 128)).astype(np.float32) for _ in range(2))
    asked: list[tuple[tuple[int, ...], np.dtype]] = []
    real = Memory.scratch

    def poisoning(self, shape, dtype, resident=None):   # every scratch array as an earlier run left it
        asked.append((tuple(shape), np.dtype(dtype)))
        data = real(self, shape, dtype, resident)
        data.view(np.uint8)[...] = 0xFF
        return data

    monkeypatch.setattr(Memory, "scratch", poisoning)
    got = execute(gemm("bf16"), [a.astype(ml_dtypes.bfloat16), w.astype(ml_dtypes.bfloat16)])
    assert any(len(s) == 4 and d == np.float32 for s, d in asked)   # (rows, lanes, slots, columns)
    assert np.array_equal(got, (a.astype(np.float64) @ w.T.astype(np.float64)).astype(np.float32))


def test_a_cast_zeroes_a_tail_its_output_type_pads_once():
    """`J # 16` over J = 8 pads cells 8..15 (and only those): the output type's padding
    alone zeroes the tail of a poisoned pooled array."""
    cast = _op(cast_kernel(), "cast_op")
    packet, n = cast.output_type.packet, cast.valid_elems
    assert n == 8 and [values.pads_from(packet, k) for k in (7, 8, 12)] == [False, True, True]
    rows, steps = 2, cast.output_type.time.size
    stale = _poisoned((rows, steps, 16), np.uint16)
    x = np.random.default_rng(6).standard_normal((rows, steps, n)).astype(np.float32)
    got = drain.run_cast(cast, x.view(np.uint32), Memory(get_target("rngd")))
    assert np.shares_memory(got, stale)
    assert np.array_equal(got[..., :n], narrow_bf16(x.view(np.uint32))) and not got[..., n:].any()
