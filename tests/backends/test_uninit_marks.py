"""The cpu backend's uninitialized-read check (`CpuOptions(report_uninit=True)`, VIEW-12)
follows the writes of a redistribution into a write view (`to_dm_view` of a plan) and of a
scatter into one page of a tensor: the cells they write are written, the others are not."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions
from ir.errors import NpuOptError
from npu_opt import *

axes(UK=2, UG=2, UR=8, US=4, UW=8)
UFull = DmTensor[i32, m("UK"), m("UG"), m("UR # 64"), m("US, UW")]
UIn = HbmTensor[i32, m("UK"), m("UG, UR, US, UW")]


def _swapped(rows: int):
    """Rows 0..rows-1 (US positions) of every (chip, cluster) moved to the other chip and
    cluster, into a new() DM tensor: the other rows of it nothing writes."""

    @device(chip=2)
    def swapped(ctx: Context, x: UIn) -> UIn:
        d = x.to_dm(ctx.tdma, UFull)
        out = UFull.new()
        for s in range(rows):
            d.view().tile(m("US"), 1, m("1 # 4, UW"), s).chip_shuffle([1, 0]).cluster_swap().to_dm_view(
                ctx.tdma, out.view_mut().tile(m("US"), 1, m("1 #{!} 4, UW"), s))
        return out.to_hbm(ctx.tdma, UIn)
    return swapped


X = np.arange(2 * 2 * 8 * 4 * 8, dtype=np.int32).reshape(2, 2, 8, 4, 8)


def test_a_redistribution_into_a_view_marks_the_cells_it_writes():
    kernel = _swapped(4)
    want = X[::-1, ::-1]   # the other chip's, the other cluster's
    assert np.array_equal(CpuBackend(CpuOptions(report_uninit=True)).run(kernel, (X,)), want)


def test_a_redistribution_into_part_of_a_new_tensor_leaves_the_rest_unwritten():
    with pytest.raises(NpuOptError, match="reads 512 cell") as info:   # 2 chips, 2 clusters, 8 rows, 2 US, 8 UW
        CpuBackend(CpuOptions(report_uninit=True)).run(_swapped(2), (X,))
    assert info.value.code == "VIEW-12"


axes(VP=2, VR=4, VC=4, VW=32)
VCache = HbmTensor[bf16, m("1"), m("VP, VC, VW")]


def _scattered(pages: int):
    """The updates scattered into pages 0..pages-1 of a new() HBM tensor (at the rows
    `offsets` names), then the tensor copied out: the rows no index names nothing writes."""

    @device(chip=1)
    def scattered(ctx: Context, fresh: HbmTensor[bf16, m("1"), m("VR, VW")],
                  offsets: HbmTensor[i32, m("1"), m("VR")]) -> VCache:
        cache = VCache.new()
        d = fresh.to_dm(ctx.tdma, DmTensor[bf16, m("1"), m("1 # 2"), m("VR # 64"), m("VW")])
        for p in range(pages):
            dst = cache.view_mut().tile(m("VP"), 1, m("1 #{!} 2, VC, VW"), p)
            dst.scatter(m("VC"), m("VW")).by_byte_offsets(offsets).from_dm(ctx.tdma, d)
        return cache.to_hbm(ctx.pdma, VCache)
    return scattered


FRESH = np.arange(4 * 32, dtype=np.float32).reshape(4, 32).astype(ml_dtypes.bfloat16)


def _run(kernel, rows):
    return CpuBackend(CpuOptions(report_uninit=True)).run(kernel, (FRESH, (np.asarray(rows) * 64).astype(np.int32)))


def test_a_scatter_into_a_page_marks_the_rows_it_writes():
    rows = [2, 0, 3, 1]     # every row of a page
    want = np.zeros((2, 4, 32), ml_dtypes.bfloat16)
    want[:, rows] = FRESH
    assert _run(_scattered(2), rows).view(np.uint16).tobytes() == want.view(np.uint16).tobytes()


@pytest.mark.parametrize("pages, rows, unwritten", [
    (1, [2, 0, 3, 1], 4 * 32),     # the second page: nothing writes it
    (2, [2, 0, 2, 1], 2 * 32),     # row 3 of each page: no index names it
])
def test_a_scatter_into_a_page_leaves_the_rows_no_index_names_unwritten(pages, rows, unwritten):
    with pytest.raises(NpuOptError, match=f"reads {unwritten} cell") as info:
        _run(_scattered(pages), rows)
    assert info.value.code == "VIEW-12"
