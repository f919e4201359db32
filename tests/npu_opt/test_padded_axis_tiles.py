"""A tile by one digit of an axis padded inline (`X # P / d`): the index steps over the
padded axis's chunks, the last live one (and a chunk of padding) included. Kernels of our
own on cpu and visa against numpy; a digit that does not split the padded term stays VIEW-1."""

from __future__ import annotations

import numpy as np
import pytest

from npu_opt import *
from tests.npu_opt.test_views import both

axes(Rows=24, Few=21, C=4)

Chip = m("1")
Rows4 = m("Rows # 32 / 8, Rows # 32 % 8, C")       # 4 chunks of 8 rows, the last one padding
Few3 = m("Few # 24 / 8, Few # 24 % 8, C")          # 3 chunks, the last one 5 rows live
Chunk4 = m("Rows # 32 % 8, C")
Chunk3 = m("Few # 24 % 8, C")


def _chunk_of_rows(start):
    @device(chip=1)
    def chunk_of_rows(ctx: Context, x: HbmTensor[f32, Chip, Rows4]) -> HbmTensor[f32, Chip, Chunk4]:
        out = HbmTensor[f32, Chip, Chunk4].new()
        x.view().tile(m("Rows # 32 / 8"), 1, m("1 # 4, Rows # 32 % 8, C"), start).to_hbm_view(ctx.tdma, out.view_mut())
        return out
    return chunk_of_rows


@device(chip=1)
def last_few(ctx: Context, x: HbmTensor[f32, Chip, Few3]) -> HbmTensor[f32, Chip, Chunk3]:
    out = HbmTensor[f32, Chip, Chunk3].new()
    x.view().tile(m("Few # 24 / 8"), 1, m("1 # 3, Few # 24 % 8, C"), 2).to_hbm_view(ctx.tdma, out.view_mut())
    return out


@device(chip=1)
def chunks_through_dm(ctx: Context, x: HbmTensor[f32, Chip, Rows4]) -> HbmTensor[f32, Chip, Rows4]:
    """Each chunk copied on its own into the same place of a new tensor, by a DM round trip."""
    out = HbmTensor[f32, Chip, Rows4].new()
    for i in range(3):
        piece = x.view().tile(m("Rows # 32 / 8"), 1, m("1 # 4, Rows # 32 % 8, C"), i).to_dm(
            ctx.tdma, DmTensor[f32, Chip, m("1 # 2"), m("1 # 256"), Chunk4])
        piece.view().to_hbm_view(ctx.tdma, out.view_mut().tile(m("Rows # 32 / 8"), 1,
                                                               m("1 #{!} 4, Rows # 32 % 8, C"), i))
    return out


def _chunks():
    """The host array of `X # P / 8, X # P % 8, C`: one dimension per term (3 chunks of 8 rows)."""
    return np.random.default_rng(8).standard_normal((3, 8, 4)).astype(np.float32)


@pytest.mark.parametrize("start", [0, 1, 2])
def test_each_live_chunk_of_a_divisible_padded_axis(start):
    x = _chunks()
    out = both(_chunk_of_rows(start), x)
    assert np.array_equal(out, x[start])


def test_the_last_chunk_of_a_ragged_padded_axis_reads_its_live_rows():
    x = _chunks()                             # rows 21..23 (x[2, 5:]) are padding
    out = both(last_few, x)
    assert np.array_equal(out[:5], x[2, :5])


def test_chunks_written_back_tile_by_tile_rebuild_the_tensor():
    x = _chunks()
    assert np.array_equal(both(chunks_through_dm, x), x)


def test_an_index_padded_otherwise_than_the_view_is_refused_in_the_users_words():
    @device(chip=1)
    def other_padding(ctx: Context, x: HbmTensor[f32, Chip, Rows4]) -> HbmTensor[f32, Chip, Chunk4]:
        out = HbmTensor[f32, Chip, Chunk4].new()
        x.view().tile(m("Rows # 40 / 8"), 1, m("1 # 5, Rows # 32 % 8, C"), 0).to_hbm_view(ctx.tdma, out.view_mut())
        return out
    (d,) = other_padding.trace().diagnostics
    assert d.code == "VIEW-1" and "`Rows # 40 / 8`" in d.message and "#40" not in d.message


def test_a_tile_past_the_padded_chunks_is_refused():
    @device(chip=1)
    def past(ctx: Context, x: HbmTensor[f32, Chip, Rows4]) -> HbmTensor[f32, Chip, Chunk4]:
        out = HbmTensor[f32, Chip, Chunk4].new()
        x.view().tile(m("Rows # 32 / 8"), 1, m("1 # 4, Rows # 32 % 8, C"), 4).to_hbm_view(ctx.tdma, out.view_mut())
        return out
    assert [d.code for d in past.trace().diagnostics] == ["VIEW-3"]
