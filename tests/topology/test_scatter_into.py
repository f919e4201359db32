"""`dma_scatter` into an existing HBM tensor (docs/views.md): a `Mut` parameter or a `new()`
tensor keeps the rows no index names. A KV-cache update of our own against numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from npu_opt import *

axes(T=48, W=64, S=16)

Chip = m("1")
Cluster = m("1 # 2")
RNG = np.random.default_rng(5)


@device(chip=1)
def cache_update(ctx: Context, fresh: HbmTensor[bf16, Chip, m("S, W")], slots: HbmTensor[i32, Chip, m("S")],
                 cache: Mut[HbmTensor[bf16, Chip, m("T, W")]]) -> None:
    """16 new rows into a 48-row cache passed in place: the other 32 rows keep their values."""
    d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("S # 64"), m("W")])
    d.dma_scatter(slots, cache, m("S"))


@device(chip=1)
def read_only_cache(ctx: Context, fresh: HbmTensor[bf16, Chip, m("S, W")], slots: HbmTensor[i32, Chip, m("S")],
                    cache: HbmTensor[bf16, Chip, m("T, W")]) -> HbmTensor[bf16, Chip, m("T, W")]:
    d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("S # 64"), m("W")])
    d.dma_scatter(slots, cache, m("S"))
    return cache


def _inputs():
    fresh = RNG.standard_normal((16, 64)).astype(ml_dtypes.bfloat16)
    rows = RNG.permutation(48)[:16]
    cache = RNG.standard_normal((48, 64)).astype(ml_dtypes.bfloat16)
    return fresh, (rows * 64 * 2).astype(np.int32), cache, rows      # byte offsets: 64 bf16 per row


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_scatter_into_a_mut_cache_keeps_the_other_rows(backend):
    fresh, offsets, cache, rows = _inputs()
    want = cache.copy()
    want[rows] = fresh
    buf = cache.copy()
    npu_opt.run(cache_update, fresh, offsets, buf, backend=backend)
    assert np.array_equal(buf.view(np.uint16), want.view(np.uint16))


def test_scatter_into_a_read_only_parameter_is_refused():
    diags = read_only_cache.trace().diagnostics
    assert [d.code for d in diags] == ["PARAM-1"]
    from visa.verify import verify_text

    text = npu_opt.compile(cache_update).text
    assert "into=%" in next(line for line in text.splitlines() if "= dma_scatter " in line)
    verify_text(text)


def test_the_ir_text_of_a_scatter_into_reads_back():
    from ir.kernel import print_kernel
    from tests.kernel_text import parse_kernel

    text = print_kernel(cache_update.trace().kernel)
    assert any("= dma_scatter %3, %1, %2 key=" in line for line in text.splitlines()), text
    assert print_kernel(parse_kernel(text)) == text


axes(N=32, D=64, P=64)


@device(chip=1)
def one_token(ctx: Context, row: HbmTensor[bf16, Chip, m("N, D")], at: HbmTensor[i32, Chip, m("1")],
              cache: Mut[HbmTensor[bf16, Chip, m("P, N, D")]]) -> None:
    """The key `1`: the whole data is one row of the cache, at the index's one byte offset."""
    d = row.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("N # 64"), m("D")])
    d.dma_scatter(at, cache, m("1"))


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_one_row_scatter_updates_one_cache_position(backend):
    row = RNG.standard_normal((32, 64)).astype(ml_dtypes.bfloat16)
    cache = RNG.standard_normal((64, 32, 64)).astype(ml_dtypes.bfloat16)
    want = cache.copy()
    want[37] = row
    npu_opt.run(one_token, row, np.array([37 * 32 * 64 * 2], np.int32), cache, backend=backend)
    assert np.array_equal(cache.view(np.uint16), want.view(np.uint16))


axes(F=2048)


@device(chip=1)
def regrouped_token(ctx: Context, flat: HbmTensor[bf16, Chip, m("F")], at: HbmTensor[i32, Chip, m("1")],
                    cache: Mut[HbmTensor[bf16, Chip, m("P, N, D")]]) -> None:
    """A flat row staged as 32 slices of 64 values, relabelled (`reshape`, the reference's
    `unsafe { t.reshape() }` of a tensor) as one N row per slice, then scattered: the view
    scatters like the tensor it stands for."""
    d = flat.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("F / 64, 1 # 2"), m("F % 64")])
    d.reshape(Chip, Cluster, m("N, 1 # 2"), m("D")).dma_scatter(at, cache, m("1"))


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_reshaped_dm_view_scatters_like_its_tensor(backend):
    flat = RNG.standard_normal(2048).astype(ml_dtypes.bfloat16)
    cache = RNG.standard_normal((64, 32, 64)).astype(ml_dtypes.bfloat16)
    want = cache.copy()
    want[5] = flat.reshape(32, 64)
    npu_opt.run(regrouped_token, flat, np.array([5 * 32 * 64 * 2], np.int32), cache, backend=backend)
    assert np.array_equal(cache.view(np.uint16), want.view(np.uint16))
