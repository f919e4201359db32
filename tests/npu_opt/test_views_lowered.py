"""View cases the lowering places beyond the basic windows (docs/views.md): 4-bit fills,
TRF tensors made by `new()`, DM windows shifted on the Cluster level. Kernels of our own
run on cpu against a numpy oracle and on visa bit for bit equal to cpu; the cases the
hardware cannot do are trace-time refusals with their own rule at the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *
from tests.npu_opt.test_views import both

axes(A=64, B=32)

Chip = m("1")
Cluster = m("1 # 2")

RNG = np.random.default_rng(11)


@device(chip=1)
def nibble_fill(ctx: Context, x: HbmTensor[i4, Chip, m("A, B")]) -> HbmTensor[i4, Chip, m("A, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i4, Chip, Cluster, m("A"), m("B")])
    d.view_mut().tile(m("B"), 8, m("B = 8 #{!} 32"), 10).memset(ctx.sub, -3)
    d.view_mut().slice_tile(m("A"), 16, m("A = 16 #{!} 64"), 48).memset(ctx.sub, 7)
    return d.to_hbm(ctx.tdma)


def test_a_4_bit_memset_of_whole_bytes_is_lowered():
    x = RNG.integers(-8, 8, (64, 32)).astype(np.int8)
    want = x.copy()
    want[:, 10:18] = -3
    want[48:, :] = 7
    assert np.array_equal(both(nibble_fill, x), want)
    assert "memset" in npu_opt.compile(nibble_fill).text


def _codes(kernel):
    return [(d.code, d.line) for d in kernel.trace().diagnostics]


def _line_of(kernel, text):
    import inspect

    lines, first = inspect.getsourcelines(kernel.fn if hasattr(kernel, "fn") else kernel)
    return first + next(i for i, line in enumerate(lines) if text in line)


@device(chip=1)
def odd_nibbles(ctx: Context, x: HbmTensor[i4, Chip, m("A, B")]) -> HbmTensor[i4, Chip, m("A, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i4, Chip, Cluster, m("A"), m("B")])
    d.view_mut().tile(m("B"), 4, m("B = 4 #{!} 32"), 3).memset(ctx.sub, 1)
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def unaligned_write(ctx: Context, x: HbmTensor[bf16, Chip, m("A, B")]) -> HbmTensor[bf16, Chip, m("A, B")]:
    d = DmTensor[bf16, Chip, Cluster, m("A"), m("B")].new()
    dst = d.view_mut().tile(m("B"), 8, m("B = 8 #{!} 32"), 2)
    x.view().tile(m("B"), 8, m("A, B = 8 # 32"), 0).to_dm_view(ctx.tdma, dst)
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def aligned_write(ctx: Context, x: HbmTensor[bf16, Chip, m("A, B")]) -> HbmTensor[bf16, Chip, m("A, B")]:
    d = DmTensor[bf16, Chip, Cluster, m("A"), m("B")].new()
    for start in (0, 4, 8):                         # 8-byte steps of bf16
        dst = d.view_mut().tile(m("B"), 4, m("B = 4 #{!} 32"), 28 - start)
        x.view().tile(m("B"), 4, m("A, B = 4 # 32"), start).to_dm_view(ctx.tdma, dst)
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def shifted_feed(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i32, Chip, m("A = 32, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"), m("B")])
    upper = d.view().slice_tile(m("A"), 32, m("A = 32 # 64"), 32)
    out = ctx.main.begin(upper).fetch(m("1"), m("B")).collect(m("B / 32"), m("B % 32")).commit_trim(m("B % 32")).commit(m("B"))
    return out.to_hbm(ctx.tdma)


def test_hardware_limits_of_view_writes_are_trace_time_rules_at_the_users_line():
    assert _codes(odd_nibbles) == [("VIEW-14", _line_of(odd_nibbles, ".memset("))]
    assert _codes(unaligned_write) == [("VIEW-13", _line_of(unaligned_write, "to_dm_view("))]
    assert _codes(shifted_feed) == [("VIEW-15", _line_of(shifted_feed, "ctx.main.begin("))]


def test_dm_writes_on_8_byte_boundaries_are_lowered():
    import ml_dtypes

    x = RNG.standard_normal((64, 32)).astype(ml_dtypes.bfloat16)
    want = np.zeros_like(x)
    for start in (0, 4, 8):
        want[:, 28 - start:32 - start] = x[:, start:start + 4]
    got = both(aligned_write, x)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


@device(chip=1)
def lower_slices(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A = 32, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"), m("B")])
    low = d.view().slice_tile(m("A"), 32, m("A = 32 # 64"), 0)
    out = ctx.main.begin(low).fetch(m("1"), m("B")).collect(m("B / 32"), m("B % 32")).commit_trim(m("B % 32")).commit(m("B"))
    return out.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("A = 32, B")])


def test_a_begin_over_the_first_slices_of_a_tensor_is_fed_in_place():
    x = RNG.integers(-128, 128, (64, 32)).astype(np.int8)
    assert np.array_equal(both(lower_slices, x), x[:32])


axes(I=8, N=8, K=64)


def _contract(xd, w_trf):
    return (xd.fetch(m("1"), m("K"))
            .collect(m("K / 32"), m("K % 32"))
            .contract_outer(w_trf, m("1"), m("K"))
            .contract_packet(m("1"))
            .contract_time(m("1"))
            .contract_lane(m("1"), m("N"), LaneMode.INTERLEAVED)
            .commit_trim(m("N"))
            .commit(m("N")))


@device(chip=1)
def loaded_and_new(ctx: Context, x: HbmTensor[i8, Chip, m("I, K")], w: HbmTensor[i8, Chip, m("N, K")]
                   ) -> tuple[HbmTensor[i32, Chip, m("I, N")], HbmTensor[i32, Chip, m("I, N")]]:
    """A loaded TRF tensor and a `new()` one live together: the new one's rows (zeros) must
    not land on the loaded one's."""
    xd = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("I # 64"), m("K")])
    wd = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("I # 64"), m("N, K")])
    w_trf = ctx.sub.begin(wd.view()).fetch(m("N"), m("K")).collect(m("N, K / 32"), m("K % 32")).to_trf(m("N"), m("K"))
    zero = TrfTensor[i8, Chip, Cluster, m("I # 64"), m("N"), m("K")].new()
    y = _contract(ctx.main.begin(xd.view()), w_trf)
    z = _contract(ctx.main.begin(xd.view()), zero)
    return (y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("I, N")]), z.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("I, N")]))


def test_a_new_trf_tensor_is_placed_beside_a_loaded_one():
    x = RNG.integers(-128, 128, (8, 64)).astype(np.int8)
    w = RNG.integers(-128, 128, (8, 64)).astype(np.int8)
    cpu = npu_opt.run(loaded_and_new, x, w, backend="cpu")
    visa = npu_opt.run(loaded_and_new, x, w, backend="visa")
    assert all(np.array_equal(a, b) for a, b in zip(cpu, visa))
    assert np.array_equal(cpu[0], x.astype(np.int32) @ w.astype(np.int32).T)
    assert not cpu[1].any()
    from tu_ops.target import get_target
    from visa.interp.alloc import allocate
    from visa.parser import parse_visa

    kernel = parse_visa(npu_opt.compile(loaded_and_new).text).kernel
    _, rows = allocate(kernel, get_target("rngd"))
    assert sorted(rows.values()) == [0, 2], rows          # two rows each (64 bytes, Flit2: even rows)


def test_the_uninit_report_covers_trf_tensors_made_by_new():
    """Nothing writes a TRF tensor made by `new()` (a TRF is written only by `to_trf`, which
    makes its own tensor), so the contraction reading `zero` reads cells nothing wrote; the
    loaded tensor alone is not reported."""
    from backends.cpu import CpuBackend, CpuOptions
    from ir.errors import NpuOptError

    x = RNG.integers(-128, 128, (8, 64)).astype(np.int8)
    w = RNG.integers(-128, 128, (8, 64)).astype(np.int8)
    # 8 live slices x 8 lanes x 64 cells
    with pytest.raises(NpuOptError, match=r"`contract_outer` reads 4096 cell\(s\) of %\d+ that nothing wrote") as info:
        CpuBackend(CpuOptions(report_uninit=True)).run(loaded_and_new, (x, w))
    assert info.value.code == "VIEW-12"
    assert np.array_equal(CpuBackend(CpuOptions(report_uninit=True)).run(matmul_only, (x, w)),
                          x.astype(np.int32) @ w.astype(np.int32).T)


@device(chip=1)
def matmul_only(ctx: Context, x: HbmTensor[i8, Chip, m("I, K")], w: HbmTensor[i8, Chip, m("N, K")]
                ) -> HbmTensor[i32, Chip, m("I, N")]:
    xd = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("I # 64"), m("K")])
    wd = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("I # 64"), m("N, K")])
    w_trf = ctx.sub.begin(wd.view()).fetch(m("N"), m("K")).collect(m("N, K / 32"), m("K % 32")).to_trf(m("N"), m("K"))
    return _contract(ctx.main.begin(xd.view()), w_trf).to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("I, N")])


Halves = m("A / 32")                              # the two clusters hold the two row halves


@device(chip=1)
def swap_clusters(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]
                  ) -> tuple[HbmTensor[i8, Chip, m("A, B")], HbmTensor[i8, Chip, m("A = 32, B")]]:
    """HBM row halves written into the other cluster of a DM tensor (DM windows as
    destinations), read back per cluster into an HBM tile, and cluster 1 alone copied out."""
    d = DmTensor[i8, Chip, Halves, m("A % 32 # 64"), m("B")].new()
    for half in range(2):
        rows = x.view().tile(m("A / 32"), 1, m("1 # 2, A % 32, B"), half)
        rows.to_dm_view(ctx.tdma, d.view_mut().cluster_tile(m("A / 32"), 1, m("1 #{!} 2"), 1 - half))
    out = HbmTensor[i8, Chip, m("A, B")].new()
    for half in range(2):
        part = d.view().cluster_tile(m("A / 32"), 1, m("1 # 2"), half)
        part.to_hbm_view(ctx.tdma, out.view_mut().tile(m("A / 32"), 1, m("1 #{!} 2, A % 32, B"), half))
    upper = d.view().cluster_tile(m("A / 32"), 1, m("1 # 2"), 1)
    return out, upper.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("A = 32, B")])


def test_dm_windows_shifted_on_the_cluster_level_are_lowered():
    x = RNG.integers(-128, 128, (64, 32)).astype(np.int8)
    cpu = npu_opt.run(swap_clusters, x, backend="cpu")
    visa = npu_opt.run(swap_clusters, x, backend="visa")
    assert all(np.array_equal(a, b) for a, b in zip(cpu, visa))
    assert np.array_equal(cpu[0], np.concatenate([x[32:], x[:32]]))
    assert np.array_equal(cpu[1], x[:32])
    assert npu_opt.compile(swap_clusters).text.count("cluster_shift=1") == 3



@device(chip=1)
def cluster_copies(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B")]:
    """DM -> DM between windows on the same cluster (the read tile `#` into the write tile
    `#{!}`: the same cells), cluster 1 only."""
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Halves, m("A % 32 # 64"), m("B")])
    e = DmTensor[i8, Chip, Halves, m("A % 32 # 64"), m("B")].new()
    d.view().cluster_tile(m("A / 32"), 1, m("1 # 2"), 1).to_dm_view(
        ctx.tdma, e.view_mut().cluster_tile(m("A / 32"), 1, m("1 #{!} 2"), 1))
    return e.to_hbm(ctx.tdma)


@device(chip=1)
def cross_clusters(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Halves, m("A % 32 # 64"), m("B")])
    e = DmTensor[i8, Chip, Halves, m("A % 32 # 64"), m("B")].new()
    d.view().cluster_tile(m("A / 32"), 1, m("1 # 2"), 1).to_dm_view(
        ctx.tdma, e.view_mut().cluster_tile(m("A / 32"), 1, m("1 #{!} 2"), 0))
    return e.to_hbm(ctx.tdma)


axes(C=2, R=32)


@device(chip=2)
def chip_swap(ctx: Context, x: HbmTensor[i8, m("C"), m("R, B")]) -> HbmTensor[i8, m("C"), m("R, B")]:
    """Each chip's DM copy written into the other chip's half of the output (DM windows
    shifted on the Chip level), and the HBM chip tiles copied HBM -> HBM as well."""
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("C"), Cluster, m("R # 64"), m("B")])
    out = HbmTensor[i8, m("C"), m("R, B")].new()
    for c in range(2):
        d.view().chip_tile(m("C"), 1, m("1 # 2"), c).to_hbm_view(
            ctx.tdma, out.view_mut().chip_tile(m("C"), 1, m("1 #{!} 2"), 1 - c))
    return out


def test_dm_to_dm_cluster_tiles_and_chip_tiles_are_lowered():
    from npu_opt.compile_api import compile_kernel

    x = RNG.integers(-128, 128, (64, 32)).astype(np.int8)
    want = np.zeros_like(x)
    want[32:] = x[32:]
    assert np.array_equal(both(cluster_copies, x), want)
    y = RNG.integers(-128, 128, (2, 32, 32)).astype(np.int8)
    assert np.array_equal(both(chip_swap, y), y[::-1])
    assert "chip_shift=1" in npu_opt.compile(chip_swap).text
    want = np.zeros_like(x)
    want[:32] = x[32:]
    assert np.array_equal(npu_opt.run(cross_clusters, x, backend="cpu"), want)
    outcome = compile_kernel(cross_clusters)         # one command serves one cluster of both DM sides
    assert outcome.status == "refused" and outcome.code == "VIEW-10"
