"""Rule 11: a broadcast Chip term is a host-array dimension holding the copies, as a
broadcast element term is (issue 36 items 5 and 7): a result on `Chip = m("4")` has a
leading 4, an input on it takes one (its copies equal), and an in-out parameter of a
multi-chip kernel has the same shape `run` asks for everywhere."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from ir.errors import NpuOptError
from npu_opt import *

axes(A=64, P=4, K=2, C=256, S=16, W=64)

RNG = np.random.default_rng(3611)


@device(chip=4)
def copies_plus_one(ctx: Context, x: HbmTensor[i32, m("4"), m("A")]) -> HbmTensor[i32, m("4"), m("A")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("4"), m("1 # 2"), m("1 # 256"), m("A")])
    return d.to_hbm(ctx.tdma, HbmTensor[i32, m("4"), m("A")])


@device(chip=4)
def every_chip_gets_all(ctx: Context, x: HbmTensor[i32, m("P"), m("A")]) -> HbmTensor[i32, m("4"), m("P, A")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("P"), m("1 # 2"), m("1 # 256"), m("A")])
    every = d.to_dm(ctx.tdma, DmTensor[i32, m("4"), m("1 # 2"), m("1 # 256"), m("P, A")])
    return every.to_hbm(ctx.tdma, HbmTensor[i32, m("4"), m("P, A")])


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_broadcast_chip_result_holds_one_row_per_copy(backend):
    x = RNG.integers(-2 ** 31, 2 ** 31, (4, 64)).astype(np.int32)
    out = npu_opt.run(every_chip_gets_all, x, backend=backend)
    assert out.shape == (4, 4, 64)
    assert np.array_equal(out, np.broadcast_to(x, (4, 4, 64)))


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_broadcast_chip_input_takes_the_copies_and_they_must_agree(backend):
    row = RNG.integers(-2 ** 31, 2 ** 31, 64).astype(np.int32)
    x = np.stack([row] * 4)
    out = npu_opt.run(copies_plus_one, x, backend=backend)
    assert out.shape == (4, 64) and np.array_equal(out, x)
    x[2, 5] += 1
    with pytest.raises(NpuOptError, match="copies must be equal") as e:
        npu_opt.run(copies_plus_one, x, backend=backend)
    assert e.value.code == "USAGE"
    with pytest.raises(NpuOptError, match=r"shape \(4, 64\)"):
        npu_opt.run(copies_plus_one, row, backend=backend)


@device(chip=2)
def scatter_on_two_chips(ctx: Context, fresh: HbmTensor[bf16, m("K"), m("S, W")],
                         offsets: HbmTensor[i32, m("K"), m("S")],
                         cache: Mut[HbmTensor[bf16, m("K"), m("C, W")]]) -> None:
    d = fresh.to_dm(ctx.tdma, DmTensor[bf16, m("K"), m("1 # 2"), m("S # 64"), m("W")])
    cache.view_mut().scatter(m("C"), m("W")).by_byte_offsets(offsets.view()).from_dm(ctx.tdma, d)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_an_in_out_parameter_on_named_chips_takes_the_chip_dimension(backend):
    import ml_dtypes

    fresh = RNG.standard_normal((2, 16, 64)).astype(ml_dtypes.bfloat16)
    rows = np.stack([RNG.permutation(256)[:16] for _ in range(2)])
    cache = RNG.standard_normal((2, 256, 64)).astype(ml_dtypes.bfloat16)
    want = cache.copy()
    for c in range(2):
        want[c, rows[c]] = fresh[c]
    got = cache.copy()
    npu_opt.run(scatter_on_two_chips, fresh, (rows * 128).astype(np.int32), got, backend=backend)
    assert (got.view(np.uint16) == want.view(np.uint16)).all()
    with pytest.raises(NpuOptError, match=r"needs shape \(2, 256, 64\)"):
        npu_opt.run(scatter_on_two_chips, fresh, (rows * 128).astype(np.int32), cache[0].copy(), backend=backend)
