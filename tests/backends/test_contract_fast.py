"""The cpu backend's fast contraction (backends/cpu/contract_fast.py) against its dense
reference path (`CpuOptions(fast_contract=False)`), bit for bit: every example and
test kernel with a contraction, plus kernels with padded time (padding cells and skipped
time steps), slices, f8 operands and an i9 zero point; uniform data, special floats
(NaN, infinities, subnormals, signed zeros), extreme integers, and data at both sides of
the float path's no-flush guard. The fast path must also really run (no fallback)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given

from backends.cpu import CpuBackend, CpuOptions, contract, contract_fast, contract_float, contract_int, contract_plan, value_samples
from ir import contract_arith as ca
from npu_opt.run import run
from tests.backends import kernels_shapes, kernels_small
from tests.backends.examples import example
from tests.backends.oracles import f32_to_bf16_bits
from tests.backends.test_cpu_properties import BF16_SPECIAL, I8_EXTREME, SETTINGS, bf16_arrays
from tests.kernel_files import load_source

KERNELS = '''\
from npu_opt import *

axes(F=6, E=32, R=8, T=3, B=16, K=64, I=4, P=12, Q=24)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 64")


@device(chip=1)
def i8_time_padded(ctx: Context, x: HbmTensor[i8, Chip, m("T, F, E")],
                   w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("F, R")]:
    """Padded kept (F # 8) and reduced (T # 4) time: padding cells and skipped steps."""
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("T, F, E")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, E")])
    w_trf = ctx.sub.begin(w.view()).fetch(m("R"), m("E")).collect(m("R"), m("E")).to_trf(m("R"), m("E"))
    y = (ctx.main.begin(x.view()).fetch(m("T # 4, F # 8"), m("E")).collect(m("T # 4, F # 8"), m("E"))
         .contract_outer(w_trf, m("T # 4, F # 8"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("F # 8"))
         .contract_lane(m("F # 8"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit(m("F # 8, R")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("F, R")])


@device(chip=1)
def bf16_time_padded(ctx: Context, x: HbmTensor[bf16, Chip, m("T, F, B")],
                     w: HbmTensor[bf16, Chip, m("R, B")]) -> HbmTensor[f32, Chip, m("F, R")]:
    """The same padded time in bf16 (pack = 1, a depth-4 tree)."""
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("T, F, B")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("R, B")])
    w_trf = ctx.sub.begin(w.view()).fetch(m("R"), m("B")).collect(m("R"), m("B")).to_trf(m("R"), m("B"))
    y = (ctx.main.begin(x.view()).fetch(m("T # 4, F # 8"), m("B")).collect(m("T # 4, F # 8"), m("B"))
         .contract_outer(w_trf, m("T # 4, F # 8"), m("B"))
         .contract_packet(m("1"))
         .contract_time(m("F # 8"))
         .contract_lane(m("F # 8"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit(m("F # 8, R")))
    return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("F, R")])


@device(chip=1)
def e4m3_rows(ctx: Context, x: HbmTensor[f8e4m3, Chip, m("I, K")],
              w: HbmTensor[f8e4m3, Chip, m("R, K")]) -> HbmTensor[f32, Chip, m("I, R")]:
    """f8e4m3 x f8e4m3, one row of x per slice (4 live slices), a depth-6 tree."""
    x = x.to_dm(ctx.tdma, DmTensor[f8e4m3, Chip, Cluster, m("I # 64"), m("K")])
    w = w.to_dm(ctx.tdma, DmTensor[f8e4m3, Chip, Cluster, m("I # 64"), m("R, K")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("K"))
             .collect(m("R, K / 32"), m("K % 32")).to_trf(m("R"), m("K")))
    y = (ctx.main.begin(x.view()).fetch(m("1"), m("K")).collect(m("K / 32"), m("K % 32"))
         .contract_outer(w_trf, m("K / 64"), m("K % 64"))
         .contract_packet(m("1"))
         .contract_time(m("1"))
         .contract_lane(m("1"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit(m("R")))
    return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("I, R")])


@device(chip=1)
def e5m2_rows(ctx: Context, x: HbmTensor[f8e5m2, Chip, m("I, K")],
              w: HbmTensor[f8e5m2, Chip, m("R, K")]) -> HbmTensor[f32, Chip, m("I, R")]:
    """f8e5m2 x f8e5m2: a depth-5 tree over K % 32, then K / 32 in time."""
    x = x.to_dm(ctx.tdma, DmTensor[f8e5m2, Chip, Cluster, m("I # 64"), m("K")])
    w = w.to_dm(ctx.tdma, DmTensor[f8e5m2, Chip, Cluster, m("I # 64"), m("R, K")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("K"))
             .collect(m("R, K / 32"), m("K % 32")).to_trf(m("R"), m("K")))
    y = (ctx.main.begin(x.view()).fetch(m("1"), m("K")).collect(m("K / 32"), m("K % 32"))
         .contract_outer(w_trf, m("K / 32"), m("K % 32"))
         .contract_packet(m("1"))
         .contract_time(m("1"))
         .contract_lane(m("1"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit(m("R")))
    return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("I, R")])


@device(chip=1)
def bf16_packet_padded(ctx: Context, x: HbmTensor[bf16, Chip, m("I, P")],
                       w: HbmTensor[bf16, Chip, m("R, P")]) -> HbmTensor[f32, Chip, m("I, R")]:
    """Padded tree leaves (P # 16, zeroed by fetch masks: PACKET-5) inside live time steps:
    their products are +0."""
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("I, P")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("R, P")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("P # 16")).fetch_mask(m("R"), m("P #{0} 16"))
             .collect(m("R"), m("P #{0} 16")).to_trf(m("R"), m("P #{0} 16")))
    y = (ctx.main.begin(x.view()).fetch(m("I"), m("P # 16")).fetch_mask(m("I"), m("P #{0} 16"))
         .collect(m("I"), m("P #{0} 16"))
         .contract_outer(w_trf, m("I"), m("P #{0} 16"))
         .contract_packet(m("1"))
         .contract_time(m("I"))
         .contract_lane(m("I"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit(m("I, R")))
    return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("I, R")])


@device(chip=1)
def i8_packet_padded(ctx: Context, x: HbmTensor[i8, Chip, m("I, Q")],
                     w: HbmTensor[i8, Chip, m("R, Q")]) -> HbmTensor[i32, Chip, m("R")]:
    """Padded tree leaves (Q # 32, zeroed by fetch masks: PACKET-5) in i8, summed in time."""
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("I, Q")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, Q")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("Q # 32")).fetch_mask(m("R"), m("Q #{0} 32"))
             .collect(m("R"), m("Q #{0} 32")).to_trf(m("R"), m("Q #{0} 32")))
    y = (ctx.main.begin(x.view()).fetch(m("I"), m("Q # 32")).fetch_mask(m("I"), m("Q #{0} 32"))
         .collect(m("I"), m("Q #{0} 32"))
         .contract_outer(w_trf, m("I"), m("Q #{0} 32"))
         .contract_packet(m("1"))
         .contract_time(m("1"))
         .contract_lane(m("1"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit(m("R")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("R")])
'''


def kernel(name: str):
    return getattr(load_source(KERNELS, "contract-fast"), name)


# ---- inputs ------------------------------------------------------------------------------


def bf16_data(rng: np.random.Generator, shape, kind: str) -> np.ndarray:
    """bf16 bit patterns: uniform in [-1, 1), special values, any pattern, or values whose
    magnitudes sit just inside (`tiny`, `huge`) or just outside (`tinier`, `huger`) the
    range where the fast float path needs no flush."""
    if kind == "uniform":
        return f32_to_bf16_bits(rng.uniform(-1.0, 1.0, shape).astype(np.float32))
    if kind == "special":
        bits = rng.integers(0, 1 << 16, shape).astype(np.uint16)
        pick = rng.random(shape) < 0.3
        return np.where(pick, rng.choice(np.array(BF16_SPECIAL, np.uint16), shape), bits)
    if kind == "bits":
        return rng.integers(0, 1 << 16, shape).astype(np.uint16)
    lo, hi = {"tiny": (-56, -40), "tinier": (-57, -40), "huge": (50, 58), "huger": (60, 64)}[kind]
    exp = rng.integers(lo, hi + 1, shape)
    mant = rng.integers(128, 256, shape)
    values = np.ldexp(mant.astype(np.float64) / 128, exp) * rng.choice([-1.0, 1.0], shape)
    values[rng.random(shape) < 0.1] = 0.0
    return f32_to_bf16_bits(values.astype(np.float32))


def i8_data(rng: np.random.Generator, shape, kind: str) -> np.ndarray:
    if kind == "extreme":
        return rng.choice(np.array(I8_EXTREME, np.int8), shape)
    return rng.integers(-128, 128, shape, dtype=np.int8)


def f8_data(rng: np.random.Generator, shape, kind: str) -> np.ndarray:
    """f8 codes: any code (NaN, infinities, subnormals included) or finite ones only."""
    codes = rng.integers(0, 256, shape).astype(np.uint8)
    if kind == "finite":
        codes = np.where((codes & 0x7F) >= 0x78, codes & 0x87, codes).astype(np.uint8)
    return codes


# kernel getter, operand shapes, operand family (bf16 / i8 / f8)
CASES = {
    "dot_product": (lambda: example("dot_product", "dot_product_kernel"), [(2048,), (2048,)], "bf16"),
    "gemv": (lambda: example("gemv", "gemv_kernel"), [(256, 2048), (2048,)], "bf16"),
    "gemm": (lambda: example("gemm", "gemm_kernel"), [(512, 64), (512, 64)], "bf16"),
    "gemm_bf16": (lambda: example("gemm_bf16", "gemm_bf16_kernel"), [(512, 128), (512, 128)], "bf16"),
    "gemm_i8": (lambda: example("gemm_i8", "gemm_i8_kernel"), [(512, 128), (512, 128)], "i8"),
    "row_sum": (lambda: example("row_sum", "row_sum_kernel"), [(2048, 128), (128,)], "i8"),
    "packet_pairs": (lambda: kernels_shapes.packet_pairs, [(4, 8, 2), (8, 2)], "bf16"),
    "trf_broadcast": (lambda: kernels_shapes.trf_broadcast, [(32,), (16, 32)], "bf16"),
    "small_bf16": (lambda: kernels_small.small_bf16, [(8, 64), (8, 64)], "bf16"),
    "small_i8": (lambda: kernels_small.small_i8, [(16, 64), (8, 64)], "i8"),
    "i8_time_padded": (lambda: kernel("i8_time_padded"), [(3, 6, 32), (8, 32)], "i8"),
    "bf16_time_padded": (lambda: kernel("bf16_time_padded"), [(3, 6, 16), (8, 16)], "bf16"),
    "e4m3_rows": (lambda: kernel("e4m3_rows"), [(4, 64), (8, 64)], "f8"),
    "e5m2_rows": (lambda: kernel("e5m2_rows"), [(4, 64), (8, 64)], "f8"),
    "bf16_packet_padded": (lambda: kernel("bf16_packet_padded"), [(4, 12), (8, 12)], "bf16"),
    "i8_packet_padded": (lambda: kernel("i8_packet_padded"), [(4, 24), (8, 24)], "i8"),
}
KINDS = {"bf16": ("uniform", "special", "bits", "tiny", "tinier", "huge", "huger"),
         "i8": ("uniform", "extreme"), "f8": ("any", "finite")}
BIG = {"gemm", "gemm_bf16", "gemm_i8", "gemv", "row_sum"}
DATA = {"bf16": bf16_data, "i8": i8_data, "f8": f8_data}


def _params():
    for name, (_, _, family) in CASES.items():
        kinds = KINDS[family]
        if name in BIG:
            kinds = kinds[:2]
        for kind in kinds:
            yield pytest.param(name, kind, id=f"{name}-{kind}")


# ---- the comparison ------------------------------------------------------------------------


def _bits(out) -> list[np.ndarray]:
    outs = out if isinstance(out, tuple) else (out,)
    return [np.asarray(o).view(f"u{np.asarray(o).dtype.itemsize}") for o in outs]


_DENSE: dict[object, list] = {}  # dense results shared by tests that run the same kernel on the same data


def fast_and_dense(monkeypatch: pytest.MonkeyPatch, kern, *args,
                   options: CpuOptions = CpuOptions(), share: object = None) -> tuple[list, list]:
    """The kernel's results by the fast path (which must not fall back to the dense one)
    and by the dense path alone (computed once per `share` key when one is given: the
    dense path's options never vary, so only the data and the kernel name its result)."""
    dense = contract._packet_dense

    def refuse(*a, **k):
        raise AssertionError("the fast contraction fell back to the dense path")

    with monkeypatch.context() as mp:
        mp.setattr(contract, "_packet_dense", refuse)
        fast = CpuBackend(options).run(kern, args)
    if share is not None and share in _DENSE:
        return _bits(fast), _DENSE[share]
    with monkeypatch.context() as mp:
        mp.setattr(contract, "_packet_dense", dense)
        slow = _bits(CpuBackend(CpuOptions(fast_contract=False)).run(kern, args))
    if share is not None:
        _DENSE[share] = slow
    return _bits(fast), slow


def assert_same(fast: list, slow: list) -> None:
    assert len(fast) == len(slow)
    for f, s in zip(fast, slow):
        assert f.shape == s.shape and f.dtype == s.dtype
        np.testing.assert_array_equal(f, s)


@pytest.mark.parametrize("name,kind", list(_params()))
def test_fast_path_is_bit_identical(monkeypatch: pytest.MonkeyPatch, name: str, kind: str) -> None:
    getter, shapes, family = CASES[name]
    rng = np.random.default_rng(zlib.crc32(f"{name}/{kind}".encode()))
    args = [DATA[family](rng, shape, kind) for shape in shapes]
    assert_same(*fast_and_dense(monkeypatch, getter(), *args))


def test_guard_sides(monkeypatch: pytest.MonkeyPatch) -> None:
    """`tiny` / `huge` data take the no-flush arithmetic, `tinier` / `huger` the flushed
    one (and bf16 subnormals or NaN the exact widening); both agree with the dense path."""
    seen = []
    guard = contract_float.exact_f32
    monkeypatch.setattr(contract_float, "exact_f32", lambda *a: seen.append(guard(*a)) or seen[-1])
    rng = np.random.default_rng(11)
    for kind, want in (("tiny", True), ("huge", True), ("uniform", True), ("tinier", False),
                       ("huger", False), ("special", False)):
        seen.clear()
        x, w = bf16_data(rng, (8, 64), kind), bf16_data(rng, (8, 64), kind)
        assert_same(*fast_and_dense(monkeypatch, kernels_small.small_bf16, x, w))
        assert seen == [want], kind


def test_value_broadcast_digits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A digit the stream's cells depend on but its values do not (the fetch broadcast of
    `N / 8 % 4` in the GEMMs) is dropped; a digit equal only in the first slice is not."""
    drops = []
    plan = contract_plan.plan

    def record(*a):
        drops.append(a[7:] if len(a) > 7 else ())
        return plan(*a)

    monkeypatch.setattr(contract_fast, "make_plan", record)
    rng = np.random.default_rng(12)
    a, w = i8_data(rng, (512, 128), "uniform"), i8_data(rng, (512, 128), "uniform")
    assert_same(*fast_and_dense(monkeypatch, example("gemm_i8", "gemm_i8_kernel"), a, w))
    assert any(d and d[0] for d in drops)
    drops.clear()
    a[:32] = a[0]  # slice 0 holds 32 equal rows of `a`: its M % 32 digit looks constant there
    assert_same(*fast_and_dense(monkeypatch, example("gemm_i8", "gemm_i8_kernel"), a, w))
    af = bf16_data(rng, (512, 128), "uniform")
    af[:32] = af[0]
    assert_same(*fast_and_dense(monkeypatch, example("gemm_bf16", "gemm_bf16_kernel"),
                                af, bf16_data(rng, (512, 128), "uniform")))


def test_skipped_steps_keep_a_negative_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """T # 4 pads the last time step: not added, it leaves -0 (a flushed 1.5 - 1.75 times
    2^-126, then -0 products) as it is, where adding its +0 would give +0."""
    x = np.zeros((3, 6, 16), np.uint16)
    x[0, :, 0], x[1, :, 0], x[2, :, 0] = 0x00C0, 0x80E0, 0x8000  # 1.5 * 2^-126, -1.75 * 2^-126, -0
    w = np.full((8, 16), 0xBF80, np.uint16)  # -1: every +0 of x gives a -0 product
    w[:, 0] = 0x3F80
    fast, slow = fast_and_dense(monkeypatch, kernel("bf16_time_padded"), x, w)
    assert (slow[0] == 0x80000000).all()
    assert_same(fast, slow)


def test_padded_leaves_are_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """A padded leaf reads some TRF cell (here +inf): its product must still be +0, not
    0 * inf = NaN."""
    x = np.full((4, 12), 0x3F80, np.uint16)
    w = np.full((8, 12), 0x3F80, np.uint16)
    w[:, 0] = 0x7F80
    fast, slow = fast_and_dense(monkeypatch, kernel("bf16_packet_padded"), x, w)
    assert (slow[0] == 0x7F800000).all()
    assert_same(fast, slow)


@pytest.mark.parametrize("threads", [1, 3])
def test_threads_do_not_change_results(monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    """The numpy float core's tasks (the compiled core's row blocks: test_contract_jit.py)."""
    tasks = []
    task = contract_float._float_task
    monkeypatch.setattr(contract_float, "PARALLEL_MIN", 1)
    monkeypatch.setattr(contract_float, "_float_task", lambda *a: tasks.append(a[1:]) or task(*a))
    rng = np.random.default_rng(13)
    for kind in ("uniform", "special"):
        a, b = bf16_data(rng, (512, 64), kind), bf16_data(rng, (512, 64), kind)
        assert_same(*fast_and_dense(monkeypatch, example("gemm", "gemm_kernel"), a, b,
                                    options=CpuOptions(threads=threads, jit=False),
                                    share=("threads", kind)))  # the same data for every thread count
    assert len(tasks) > 2 * threads


@SETTINGS
@given(x=bf16_arrays((8, 64)), w=bf16_arrays((8, 64)))
def test_small_bf16_any_bits(x: np.ndarray, w: np.ndarray) -> None:
    with pytest.MonkeyPatch.context() as mp:
        assert_same(*fast_and_dense(mp, kernels_small.small_bf16, x, w))


@SETTINGS
@given(x=bf16_arrays((3, 6, 16)), w=bf16_arrays((8, 16)))
def test_padded_time_any_bits(x: np.ndarray, w: np.ndarray) -> None:
    with pytest.MonkeyPatch.context() as mp:
        assert_same(*fast_and_dense(mp, kernel("bf16_time_padded"), x, w))


def test_ftz_matches_convert() -> None:
    bits = np.array([0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF,
                     0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x3F800000],
                    np.uint32)
    bits = np.concatenate([bits, np.random.default_rng(14).integers(0, 1 << 32, 4096).astype(np.uint32)])
    want = ca.ftz_f32(bits.view(np.float32)).view(np.uint32)
    got = contract_float.ftz(bits.view(np.float32).copy()).view(np.uint32)
    np.testing.assert_array_equal(got, want)


def test_slice_copies_share_one_matmul(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GEMM's slices hold copies of `a` along N / 32 and of `w` along M / 32: the
    per-slice matmuls fold into one, still bit-identical to the dense path; a slice
    whose copy differs (none here by construction: the data is checked, not assumed)
    keeps them apart."""
    splits = []
    split = contract_int._row_split
    monkeypatch.setattr(contract_int, "_row_split", lambda *a: splits.append(split(*a)) or splits[-1])
    rng = np.random.default_rng(14)
    a, w = i8_data(rng, (512, 128), "uniform"), i8_data(rng, (512, 128), "uniform")
    assert_same(*fast_and_dense(monkeypatch, example("gemm_i8", "gemm_i8_kernel"), a, w))
    assert splits and splits[0] is not None and splits[0][0] * splits[0][1] > 1
    a_small = i8_data(rng, (16, 64), "uniform")
    splits.clear()
    assert_same(*fast_and_dense(monkeypatch, kernels_small.small_i8, a_small, i8_data(rng, (8, 64), "uniform")))


def test_repeats_rejects_by_samples_and_still_reads_every_cell() -> None:
    """`_repeats` on a 9-axis strided view (a drawn bf16 kernel's operand, one axis of stride
    0): values that differ along axis 1 almost everywhere are rejected by the scattered
    samples (`_differs`), which `_repeats` asks before comparing whole rows (issue 61: 20-40 us
    each, three a contraction every run); one differing cell the samples miss is still found;
    values that repeat are found to. Every answer is numpy's over the whole view."""
    base = np.random.default_rng(8).integers(0, 60000, 65 * 4096, dtype=np.uint16)
    shape, steps = (65, 8, 2, 2, 2, 2, 2, 8, 16), (4096, 512, 2, 4, 8, 16, 32, 64, 0)
    view = np.lib.stride_tricks.as_strided(base, shape, tuple(2 * st for st in steps), writeable=False)
    assert value_samples.differs(view)
    repeated = np.ascontiguousarray(np.broadcast_to(view[:, :1], shape))
    assert not value_samples.differs(repeated)
    one_off = repeated.copy()
    one_off[40, 5, 1, 0, 1, 0, 1, 7, 3] += 1
    assert not value_samples.differs(one_off)  # the samples miss it
    for v, want in ((view, False), (repeated, True), (one_off, False)):
        assert contract_fast._repeats(v) == want == bool((v == v[:, :1]).all())
    assert not value_samples.differs(view[:, :, ::-1])  # a negative stride: left to the full check


@pytest.mark.parametrize("stored", ["array", "lazy"])
def test_apart_rejects_only_digits_whose_values_differ(stored: str) -> None:
    """`_apart` (issue 61: the stationary operand, new each tile, checked by one take of
    scattered samples from its stored rows) answers True only when the values differ along
    every candidate digit; `_value_independent` is numpy's answer over the whole view either
    way: values drawn at random, repeating along one digit, a zero-stride digit, one cell the
    samples miss. Read from a plain array and in place from a move not copied out."""
    from backends.cpu.contract_plan import Gather
    from backends.cpu.lazy_rows import LazyRows
    from backends.cpu.moves_strided import StridedForm

    shape, steps = (8, 2, 2, 2, 2, 2, 8, 16), (512, 2, 4, 8, 16, 32, 64, 0)
    gather = Gather(tuple(range(8)), shape, (8, 32, 8, 16), None, 0, steps)
    rng = np.random.default_rng(9)

    def view(raw: np.ndarray) -> np.ndarray:
        return np.lib.stride_tricks.as_strided(raw, (raw.shape[0], *shape), (raw.strides[0], *(2 * s for s in steps)))

    def operand(raw: np.ndarray) -> contract_fast._Operand:
        if stored == "array":
            return contract_fast._Operand(raw)
        form = StridedForm((raw.shape[1],), (1,), (raw.itemsize,), 0, 0, True)
        return contract_fast._Operand(LazyRows(raw, form, raw.shape[1], raw.shape))

    drawn = rng.integers(0, 60000, (5, 4096), dtype=np.uint16)
    along_6 = drawn.copy()
    view(along_6)[...] = view(drawn)[:, :, :, :, :, :, :, :1].copy()  # digit 6 (stride 64): repeats
    one_off = np.ascontiguousarray(np.broadcast_to(drawn[:, :512], (8, 5, 512)).transpose(1, 0, 2)).reshape(5, 4096)
    one_off[3, 7 * 512 + 98] += 1  # repeats along digit 0 (stride 512) but for one cell
    for raw, candidates, apart in ((drawn, (0, 6), True), (along_6, (0, 6), False), (drawn, (0, 7), False),
                                   (one_off, (0,), False)):
        v = view(raw)
        want = {k for k in candidates if bool((np.moveaxis(v, 1 + k, 1) == np.moveaxis(v, 1 + k, 1)[:, :1]).all())}
        assert value_samples.apart(operand(raw), gather, candidates) == apart
        assert contract_fast._value_independent(operand(raw), gather, candidates, "a") == want
    assert want == set()  # the one cell off is found by the exact check
