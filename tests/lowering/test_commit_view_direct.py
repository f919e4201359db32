"""`commit_view(view_mut)` lowered as one commit straight into the view (tu_ops.lower.commit_view):
kernels of our own run on cpu against numpy slicing (the oracle), on visa bit for bit equal
to cpu; the direct commit saves the DM -> DM copy, and the cases it cannot take keep it."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *

axes(Q=4, D=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")
T = DmTensor[f32, Chip, Cluster, Slice, m("D")]
RNG = np.random.default_rng(11)


def both(kernel, *arrays):
    cpu = npu_opt.run(kernel, *arrays, backend="cpu")
    visa = npu_opt.run(kernel, *arrays, backend="visa")
    assert cpu.dtype == visa.dtype and np.array_equal(cpu.view(np.uint8), visa.view(np.uint8))
    return cpu


def _half(ctx, src, at, dst, to):
    (ctx.main.begin(src.view().tile(m("D"), 32, m("D = 32 # 64"), at))
     .fetch(m("1"), m("D = 32"))
     .collect(m("D = 32 / 8"), m("D = 32 % 8"))
     .commit_trim(m("D = 32 % 8"))
     .commit_view(dst.view_mut().tile(m("D"), 32, m("D = 32 #{!} 64"), to)))


@device(chip=1)
def swap_halves(ctx: Context, x: HbmTensor[f32, Chip, m("D")]) -> HbmTensor[f32, Chip, m("D")]:
    t = x.to_dm(ctx.tdma, T)
    out = T.new()
    for at, to in ((0, 32), (32, 0)):
        _half(ctx, t, at, out, to)
    return out.to_hbm(ctx.tdma)


@device(chip=1)
def in_place_copy(ctx: Context, x: HbmTensor[f32, Chip, m("D")]) -> HbmTensor[f32, Chip, m("D")]:
    t = x.to_dm(ctx.tdma, T)
    _half(ctx, t, 0, t, 32)         # the program reads the tensor it writes: commit + copy
    return t.to_hbm(ctx.tdma)


@device(chip=1)
def rows_shift(ctx: Context, x: HbmTensor[bf16, Chip, m("Q, D")]) -> HbmTensor[bf16, Chip, m("Q, D")]:
    rows = DmTensor[bf16, Chip, Cluster, m("Q # 256"), m("D")]
    t = x.to_dm(ctx.tdma, rows)
    out = rows.new()
    (ctx.main.begin(t.view().tile(m("D"), 16, m("D = 16 # 64"), 48))
     .fetch(m("1"), m("D = 16"))
     .collect(m("1"), m("D = 16"))
     .commit_trim(m("D = 16"))
     .commit_view(out.view_mut().tile(m("D"), 16, m("D = 16 #{!} 64"), 16)))
    return out.to_hbm(ctx.tdma)


def _records(text: str) -> list[str]:
    return [line.split("=", 1)[1].split()[0] for line in text.splitlines() if line.lstrip().startswith("%")]


def test_a_commit_view_commits_straight_into_the_view():
    x = RNG.standard_normal(64).astype(np.float32)
    got = both(swap_halves, x)
    assert np.array_equal(got.view(np.uint32), np.concatenate([x[32:], x[:32]]).view(np.uint32))
    text = npu_opt.compile(swap_halves).text
    assert "dma_into" not in text
    assert 'into=%2 view=["1", "1 # 2", "1 # 256", "D = 32 #{!} 64"] offset=128' in text
    assert 'dest=256 into=%4 view=["1", "1 # 2", "1 # 256", "D = 32 #{!} 64"] offset=0' in text  # %4 is %2's storage


def test_a_direct_commit_writes_its_window_in_every_slice_of_its_space():
    import ml_dtypes

    x = RNG.standard_normal((4, 64)).astype(ml_dtypes.bfloat16)
    want = np.zeros_like(x)
    want[:, 16:32] = x[:, 48:]
    got = both(rows_shift, x)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
    text = npu_opt.compile(rows_shift).text
    assert "dma_into" not in text and 'view=["1", "1 # 2", "Q # 256", "D = 16 #{!} 64"] offset=32' in text


def test_each_direct_commit_view_lowers_to_one_record_fewer(monkeypatch):
    import tu_ops.lower.build as build

    direct = _records(npu_opt.compile(swap_halves).text)
    monkeypatch.setattr(build, "direct_commit_views", lambda kernel, target: {})
    copied = _records(npu_opt.compile(swap_halves).text)
    assert copied.count("dma_into") == 2 and direct.count("dma_into") == 0
    assert len(direct) == len(copied) - 2


def test_a_program_writing_the_tensor_it_reads_keeps_the_copy():
    x = RNG.standard_normal(64).astype(np.float32)
    got = both(in_place_copy, x)
    assert np.array_equal(got.view(np.uint32), np.concatenate([x[:32], x[:32]]).view(np.uint32))
    assert _records(npu_opt.compile(in_place_copy).text).count("dma_into") == 1


@pytest.mark.parametrize("old, new, match", [
    ("offset=128", "offset=132", "not a window of the tensor's element at byte offset 132"),
    ("dest=384 into", "dest=392 into", "is not %2's address 256 plus offset 128"),
    ("dest=256 into=%4", "dest=264 into=%4", "is not %4's address 256 plus offset 0"),
])
def test_the_verifier_refuses_a_direct_commit_off_its_window(old, new, match):
    from visa.verify import verify_text

    text = npu_opt.compile(swap_halves).text
    verify_text(text)
    assert old in text
    with pytest.raises(Exception, match=match):
        verify_text(text.replace(old, new, 1))
