"""Views, tiles and allocation (docs/views.md): kernels of our own run on cpu against numpy
slicing (the oracle), compile, run on visa bit for bit equal to cpu; refusals carry their
VIEW code at the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *

axes(A=64, B=32, S=256)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

RNG = np.random.default_rng(7)
X = RNG.integers(-128, 128, (64, 32)).astype(np.int8)


def both(kernel, *arrays):
    """The cpu result, after checking the visa interpreter agrees with it bit for bit."""
    cpu = npu_opt.run(kernel, *arrays, backend="cpu")
    visa = npu_opt.run(kernel, *arrays, backend="visa")
    assert cpu.dtype == visa.dtype and np.array_equal(cpu, visa)
    return cpu


@device(chip=1)
def column_swap(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B")]:
    out = HbmTensor[i8, Chip, m("A, B")].new()
    for start, to in ((0, 16), (16, 0)):          # window of 16 at raw offsets
        src = x.view().tile(m("B"), 16, m("A, B = 16 # 32"), start)
        dst = out.view_mut().tile(m("B"), 16, m("A, B = 16 #{!} 32"), to)
        src.to_hbm_view(ctx.tdma, dst)
    return out


def test_window_tiles_move_halves():
    assert np.array_equal(both(column_swap, X), np.concatenate([X[:, 16:], X[:, :16]], axis=1))


@device(chip=1)
def nested(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B")]:
    out = HbmTensor[i8, Chip, m("A, B")].new()
    for g in range(2):
        group = x.view().tile(m("B / 16"), 1, m("A, 1 # 2, B % 16"), g)
        for h in range(0, 16, 4):
            cols = group.tile(m("B % 16"), 4, m("A, 1 # 2, B % 16 = 4 # 16"), h)
            dst = (out.view_mut().tile(m("B / 16"), 1, m("A, 1 #{!} 2, B % 16"), 1 - g)
                   .tile(m("B % 16"), 4, m("A, 1 #{!} 2, B % 16 = 4 #{!} 16"), 12 - h))
            cols.to_hbm_view(ctx.tdma, dst)
    return out


def test_nested_tiles_compose_their_starts():
    want = np.zeros_like(X)
    for g in range(2):
        for h in range(0, 16, 4):
            to = (1 - g) * 16 + 12 - h
            want[:, to:to + 4] = X[:, g * 16 + h:g * 16 + h + 4]
    assert np.array_equal(both(nested, X), want)


@device(chip=1)
def via_dm(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B")]:
    """HBM tile -> DM (dma_window), DM slice tile -> HBM window (dma_into)."""
    out = HbmTensor[i8, Chip, m("A, B")].new()
    d = x.view().tile(m("B"), 8, m("A, B = 8 # 32"), 8).to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"),
                                                                                 m("B = 8")])
    low = d.view().slice_tile(m("A"), 16, m("A = 16 # 64"), 32)
    low.to_hbm_view(ctx.tdma, out.view_mut().tile(m("A"), 16, m("A = 16 #{!} 64, B"), 0)
                    .tile(m("B"), 8, m("A = 16 #{!} 64, B = 8 #{!} 32"), 24))
    return out


def test_dm_windows_round_trip():
    want = np.zeros_like(X)
    want[0:16, 24:32] = X[32:48, 8:16]
    assert np.array_equal(both(via_dm, X), want)


@device(chip=1)
def relabel(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A / 2, A % 2, B")]:
    v = x.view().reshape(Chip, m("A / 2, A % 2, B")).pad(m("A / 2 # 64, A % 2, B"))
    return v.unpad(m("A / 2, A % 2, B")).to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("A / 2, A % 2, B")])


def test_reshape_pad_unpad_keep_the_cells():
    assert np.array_equal(both(relabel, X), X.reshape(32, 2, 32))


@device(chip=1)
def untouched(ctx: Context, x: HbmTensor[bf16, Chip, m("A, B")]) -> HbmTensor[bf16, Chip, m("A, B")]:
    out = HbmTensor[bf16, Chip, m("A, B")].new()
    x.view().tile(m("A"), 8, m("A = 8 # 64, B"), 0).to_hbm_view(
        ctx.tdma, out.view_mut().tile(m("A"), 8, m("A = 8 #{!} 64, B"), 56))
    return out


def test_new_reads_as_zeros_outside_what_was_written():
    import ml_dtypes

    x = RNG.standard_normal((64, 32)).astype(ml_dtypes.bfloat16)
    got = both(untouched, x).view(np.uint16)
    want = np.zeros((64, 32), np.uint16)
    want[56:] = x[:8].view(np.uint16)
    assert np.array_equal(got, want)


@device(chip=1)
def dm_write(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"), m("B")])
    out = DmTensor[i8, Chip, Cluster, m("A"), m("B")].new()
    d.view().tile(m("B"), 8, m("B = 8 # 32"), 0).to_dm_view(
        ctx.tdma, out.view_mut().tile(m("B"), 8, m("B = 8 #{!} 32"), 24))
    return out.to_hbm(ctx.tdma)


def test_a_dm_tensor_made_by_new_is_written_in_place():
    from visa.verify import verify_text

    want = np.zeros_like(X)
    want[:, 24:] = X[:, :8]
    assert np.array_equal(both(dm_write, X), want)
    text = npu_opt.compile(dm_write).text
    verify_text(text)
    assert "kind=DM_TO_DM" in text and "dst_offset=24" in text


def test_the_artifact_verifies_and_an_edited_offset_is_refused():
    from visa.verify import verify_text

    text = npu_opt.compile(column_swap).text
    verify_text(text)
    assert "dma_into" in text and "tensor_new" in text
    with pytest.raises(Exception, match="src_base"):
        verify_text(text.replace("src_offset=16 ", "src_offset=8 ", 1))


# --- refusals ---------------------------------------------------------------------------------

@device(chip=1)
def refusals(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B")]:
    out = HbmTensor[i8, Chip, m("A, B")].new()
    x.view().tile(m("B"), 8, m("A, B = 8 # 32"), 28)                         # VIEW-3
    x.view().tile(m("B"), 8, m("A, B = 4 # 32"), 0)                          # VIEW-2
    x.view().to_hbm_view(ctx.tdma, out.view())                               # VIEW-4
    x.view().reshape(Chip, m("A"))                                           # VIEW-5
    x.view().tile(m("B"), 8, m("A, B = 8 # 32"), "0")                        # VIEW-8
    out.view_mut().tile(m("B"), 8, m("A, B = 8 # 32"), 0)                    # VIEW-2 (write pads #{!})
    return out


def test_each_refusal_has_its_code_and_line():
    diags = refusals.trace().diagnostics
    assert [d.code for d in diags] == ["VIEW-3", "VIEW-2", "VIEW-4", "VIEW-5", "VIEW-8", "VIEW-2"]
    lines = [d.line for d in diags]
    assert lines == sorted(lines) and len(set(lines)) == 6


# --- fills and parallel copies --------------------------------------------------------------

@device(chip=1)
def filled(ctx: Context, x: HbmTensor[bf16, Chip, m("A, B")]) -> HbmTensor[bf16, Chip, m("A, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("A"), m("B")])
    d.view_mut().tile(m("B"), 8, m("B = 8 #{!} 32"), 8).memset(ctx.sub, -1.5)
    p = d.to_dm_pcopy(ctx.sub, DmTensor[bf16, Chip, Cluster, m("A"), m("B")])
    return p.to_hbm(ctx.tdma)


def test_memset_fills_the_tile_and_the_pcopy_moves_it():
    import ml_dtypes

    x = RNG.standard_normal((64, 32)).astype(ml_dtypes.bfloat16)
    want = x.copy()
    want[:, 8:16] = -1.5
    got = both(filled, x)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
    from visa.verify import verify_text

    text = npu_opt.compile(filled).text
    verify_text(text)
    assert "= memset into=" in text and "value=49088" in text        # -1.5 in bf16 is 0xBFC0


@device(chip=1)
def filled_in_rust_order(ctx: Context, x: HbmTensor[bf16, Chip, m("A, B")]) -> HbmTensor[bf16, Chip, m("A, B")]:
    """`filled` with the reference's argument order, `memset(value, ctx.sub)`."""
    d = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("A"), m("B")])
    d.view_mut().tile(m("B"), 8, m("B = 8 #{!} 32"), 8).memset(-1.5, ctx.sub)
    p = d.to_dm_pcopy(ctx.sub, DmTensor[bf16, Chip, Cluster, m("A"), m("B")])
    return p.to_hbm(ctx.tdma)


def test_memset_in_the_references_argument_order_is_the_same_fill():
    records = _records(filled_in_rust_order)
    assert any("= memset into=" in r and "value=49088" in r for r in records)
    assert records == _records(filled)


def _records(kernel):
    return [line.split(" ; loc")[0] for line in npu_opt.compile(kernel).text.splitlines() if line.startswith("%")]


@device(chip=1)
def fill_refusals(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"), m("B")])
    d.view_mut().memset(ctx.sub, 300)                                        # VIEW-11
    d.view_mut().memset(ctx.main, 1)                                         # CTX-1
    d.to_hbm(ctx.pdma)                                                       # CTX-1: pdma is HBM -> HBM
    return x.to_hbm(ctx.pdma, HbmTensor[i8, Chip, m("A, B")])


def test_fill_refusals():
    assert [d.code for d in fill_refusals.trace().diagnostics] == ["VIEW-11", "CTX-1", "CTX-1"]


@device(chip=1)
def half_written(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B")]:
    out = HbmTensor[i8, Chip, m("A, B")].new()
    for start in range(0, 32, 16):
        if start == 0 or x is None:                # the loop forgets the second half
            x.view().tile(m("B"), 16, m("A, B = 16 # 32"), start).to_hbm_view(
                ctx.tdma, out.view_mut().tile(m("B"), 16, m("A, B = 16 #{!} 32"), start))
    return out


def test_the_cpu_option_reports_reads_of_cells_nothing_wrote():
    from backends.cpu import CpuBackend, CpuOptions
    from ir.errors import NpuOptError

    want = np.zeros_like(X)
    want[:, :16] = X[:, :16]
    assert np.array_equal(CpuBackend().run(half_written, (X,)), want)          # zeros by default
    with pytest.raises(NpuOptError, match="reads 1024 cell") as info:
        CpuBackend(CpuOptions(report_uninit=True)).run(half_written, (X,))
    assert info.value.code == "VIEW-12"
    assert np.array_equal(CpuBackend(CpuOptions(report_uninit=True)).run(column_swap, (X,)),
                          np.concatenate([X[:, 16:], X[:, :16]], axis=1))


axes(M=512, N=512, K=32)


@device(chip=1)
def zero_weights(ctx: Context, a: HbmTensor[bf16, Chip, m("M, K")]) -> HbmTensor[f32, Chip, m("M, N")]:
    slices = m("M / 32, N / 32")
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, slices, m("M % 32, K")])
    w_trf = TrfTensor[bf16, Chip, Cluster, slices, m("N % 8"), m("N / 8 % 4, K")].new()
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .collect(m("M % 32, N / 8 % 4, K / 16"), m("K % 16"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("M, N")])


def test_a_new_trf_tensor_reads_as_zeros_on_cpu_and_visa():
    import ml_dtypes

    a = RNG.standard_normal((512, 32)).astype(ml_dtypes.bfloat16)
    got = both(zero_weights, a)
    assert got.shape == (512, 512) and not np.any(got.view(np.uint32) & 0x7FFFFFFF)
    assert "tensor_new element_type=bf16 : trf[" in npu_opt.compile(zero_weights).text


axes(D=64)


@device(chip=1)
def commit_upper(ctx: Context, x: HbmTensor[f32, Chip, m("D")]) -> HbmTensor[f32, Chip, m("D")]:
    t = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("D")])
    low = DmTensor[f32, Chip, Cluster, Slice, m("D")].new()
    (ctx.main.begin(t.view().tile(m("D"), 32, m("D = 32 # 64"), 0))
     .fetch(m("1"), m("D = 32"))
     .collect(m("D = 32 / 8"), m("D = 32 % 8"))
     .commit_trim(m("D = 32 % 8"))
     .commit_view(low.view_mut().tile(m("D"), 32, m("D = 32 #{!} 64"), 32)))
    return low.to_hbm(ctx.tdma)


def test_commit_view_writes_a_tile_of_an_existing_tensor():
    x = RNG.standard_normal(64).astype(np.float32)
    want = np.zeros(64, np.float32)
    want[32:] = x[:32]
    got = both(commit_upper, x)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_feed_over_a_tile_verifies_and_a_shifted_one_is_refused():
    from visa.verify import verify_text

    text = npu_opt.compile(commit_upper).text
    verify_text(text)
    assert 'source=(%1, 0, f32, "D = 32 # 64")' in text
    with pytest.raises(Exception, match=r"\[FEED-15\] .* at offset 40 is neither %1's element \"D\" nor a tile of it"):
        verify_text(text.replace('source=(%1, 0, f32, "D = 32 # 64")', 'source=(%1, 40, f32, "D = 32 # 64")'))


@device(chip=1)
def two_axis_window(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A / 4, A % 4 = 3, B / 16, B % 16 = 8")]:
    """The first 3 rows of every 4 and the first 8 columns of every 16: a tile of a tile on
    another axis (the reference book's read_slicing, sequencer.md, as tiles)."""
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    rows = d.view().tile(m("A % 4"), 3, m("A / 4, A % 4 = 3 # 4, B"), 0)
    both_axes = rows.tile(m("B % 16"), 8, m("A / 4, A % 4 = 3 # 4, B / 16, B % 16 = 8 # 16"), 0)
    t = m("A / 4, A % 4 = 3, B / 16")
    y = (ctx.main.begin(both_axes).fetch(t, m("B % 16 = 8")).collect(t, m("B % 16 = 8 # 32"))
         .commit_trim(m("B % 16 = 8")).commit(m("A / 4, A % 4 = 3, B / 16, B % 16 = 8")))
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("A / 4, A % 4 = 3, B / 16, B % 16 = 8")])


def test_a_tile_of_a_tile_on_another_axis_reads_the_window():
    got = both(two_axis_window, X)
    assert np.array_equal(got, X.reshape(16, 4, 2, 16)[:, :3, :, :8])


@device(chip=1)
def two_axis_window_misnamed(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> None:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    rows = d.view().tile(m("A % 4"), 3, m("A / 4, A % 4 = 3 # 4, B"), 0)
    rows.tile(m("B % 16"), 8, m("A / 4, A % 4 = 3 # 4, B / 16, B % 16 = 4 # 16"), 0)   # 8 values, not 4


def test_a_tile_of_a_tile_with_the_wrong_mapping_is_view_2():
    assert [d.code for d in two_axis_window_misnamed.trace().diagnostics] == ["VIEW-2"]
