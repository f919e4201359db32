"""Fetch lifts (docs/machine/fetch-lift.md): cpu against numpy oracles, cpu == visa bit for
bit on every built-in target the kernel needs, the record's `lift=` field and FEED-16 on
edited records, the per-position bases against hand-computed ones, and the refusals."""

from __future__ import annotations

import runpy

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.fetch_lift import LiftDim, lift_offsets, placement_problem
from ir.mapping.api import m
from tu_ops import BUILTIN_TARGETS, rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.verify import verify_text

RNG = np.random.default_rng(27)


def _load(tmp_path, src):
    path = tmp_path / "k.py"
    path.write_text(src)
    return runpy.run_path(str(path))


def _both(kernel, *xs):
    """The cpu result; the artifact verifies on its own target and runs to the same bits."""
    text = npu_opt.compile(kernel).text
    target = text.split('target "', 1)[1].split('"', 1)[0]
    verify_text(text, BUILTIN_TARGETS[target]())
    cpu = npu_opt.run(kernel, *xs)
    visa = execute(parse_visa(text, target=BUILTIN_TARGETS[target]()), list(xs))
    assert cpu.dtype.itemsize == visa.dtype.itemsize
    np.testing.assert_array_equal(cpu.view(f"u{cpu.dtype.itemsize}"), visa.view(f"u{visa.dtype.itemsize}"))
    return cpu, text


def _bf16(shape):
    bits = RNG.integers(0, 2**16, shape, dtype=np.int64).astype(np.uint16)
    bits[(bits & 0x7F80) == 0x7F80] &= 0xBFFF  # no NaN or infinity
    return bits.view(ml_dtypes.bfloat16)


def _example(name):
    return runpy.run_path("examples/fetch_lift.py")[name]


def test_example_lifted_widen_against_numpy():
    x = RNG.integers(-128, 128, (128, 4, 32), dtype=np.int64).astype(np.int8)
    cpu, text = _both(_example("lifted_widen"), x)
    np.testing.assert_array_equal(cpu, x.astype(np.int32))
    assert 'lift=[(SLICE, "A, Q / 2", "Q % 2")]' in text
    assert "shapes=[{time=[2:32]" in text  # each slice reads two Q rows, not four


def test_example_every_dimension_against_numpy():
    x = _bf16((64, 4, 2, 2, 16))          # S, C, L, H, W
    cpu, text = _both(_example("every_dimension"), np.stack([x] * 4))   # Chip m("4"): one copy per chip
    want = x.transpose(1, 2, 0, 3, 4)      # chip C; then L, S, H, W
    np.testing.assert_array_equal(cpu.view(np.uint16), want.view(np.uint16))
    assert 'lift=[(CHIP, "C", "L, H"), (CLUSTER, "L", "H"), (SLICE, "S, H", "1")]' in text


_KERNELS = '''
from npu_opt import *
axes(A=128, H=2, G=2, Row=64, V=16)

@device(chip=1)
def two_slots(ctx: Context, x: HbmTensor[bf16, m("1"), m("Row, H, G, V")]) -> HbmTensor[bf16, m("1"), m("H, Row, G, V")]:
    d = x.to_dm(ctx.tdma, DmTensor[bf16, m("1"), m("1 # 2"), m("2, Row, 2"), m("H, G, V")])
    y = (ctx.main.begin(d.view()).fetch(m("H, G"), m("V"))
         .fetch_slice_lift(m("H, Row, G"), m("1"))
         .collect(m("1"), m("V")).commit_trim(m("V")).commit())
    return y.to_hbm(ctx.tdma, HbmTensor[bf16, m("1"), m("H, Row, G, V")])

@device(chip=1)
def onto_cluster(ctx: Context, x: HbmTensor[bf16, m("1"), m("A, H, V")]) -> HbmTensor[bf16, m("1"), m("H, A, V")]:
    d = x.to_dm(ctx.tdma, DmTensor[bf16, m("1"), m("2"), m("A, 1 # 2"), m("H, V")])
    y = (ctx.sub.begin(d.view()).fetch(m("H"), m("V"))
         .fetch_cluster_lift(m("H"), m("1"))
         .collect(m("1"), m("V")).commit_trim(m("V")).commit())
    return y.to_hbm(ctx.tdma, HbmTensor[bf16, m("1"), m("H, A, V")])

@device(chip=1)
def lifted_i8_rows(ctx: Context, x: HbmTensor[i8, m("1"), m("A, H, V # 32")]) -> HbmTensor[i8, m("1"), m("A, H, V # 32")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("1 # 2"), m("A, 2"), m("H, V # 32")])
    y = (ctx.main.begin(d.view()).fetch(m("H"), m("V # 32"))
         .fetch_slice_lift(m("A, H"), m("1"))
         .collect(m("1"), m("V # 32")).commit_trim(m("V # 32")).commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i8, m("1"), m("A, H, V # 32")])
'''


def test_two_broadcast_slots_against_numpy(tmp_path):
    x = _bf16((64, 2, 2, 16))                     # Row, H, G, V
    cpu, text = _both(_load(tmp_path, _KERNELS)["two_slots"], x)
    np.testing.assert_array_equal(cpu.view(np.uint16), x.transpose(1, 0, 2, 3).view(np.uint16))
    assert 'lift=[(SLICE, "H, Row, G", "1")]' in text


def test_cluster_lift_in_the_sub_context_against_numpy(tmp_path):
    x = _bf16((128, 2, 16))
    cpu, text = _both(_load(tmp_path, _KERNELS)["onto_cluster"], x)
    np.testing.assert_array_equal(cpu.view(np.uint16), x.transpose(1, 0, 2).view(np.uint16))
    assert "context=SUB" in text and 'lift=[(CLUSTER, "H", "1")]' in text


def test_lifted_i8_rows_against_numpy(tmp_path):
    x = RNG.integers(-128, 128, (128, 2, 16), dtype=np.int64).astype(np.int8)
    cpu, _ = _both(_load(tmp_path, _KERNELS)["lifted_i8_rows"], x)
    np.testing.assert_array_equal(cpu, x)


_AFTER = '''
from npu_opt import *

axes(A=128, H=2, B=8, C=16, I=2)

Chip = m("1")
Cluster = m("1 # 2")

@device(chip=1)
def lift_forward(ctx: Context, x: HbmTensor[i8, Chip, m("A, H, B, C")]) -> HbmTensor[i8, Chip, m("A, H, B, C")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A, 2"), m("H, B, C")])
    y = (ctx.main.begin(d.view())
         .fetch(m("H, B"), m("C"))
         .fetch_slice_lift(m("A, H"), m("B"))
         .switch(m("A, H"), m("B"), SwitchConfig.FORWARDING)
         .collect(m("B"), m("C # 32"))
         .commit_trim(m("C"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("A, H, B, C")])

@device(chip=1)
def lift_permute(ctx: Context, x: HbmTensor[i8, Chip, m("A, H, B, C")]) -> HbmTensor[i8, Chip, m("A, H, B, C")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A, 2"), m("H, B, C")])
    y = (ctx.main.begin(d.view())
         .fetch(m("H, B"), m("C"))
         .fetch_slice_lift(m("A, H"), m("B"))
         .switch(m("H, A"), m("B"), SwitchConfig.CUSTOM_BROADCAST(ring_size=256))
         .collect(m("B"), m("C # 32"))
         .commit_trim(m("C"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("A, H, B, C")])

@device(chip=1)
def lift_interleaved(ctx: Context, x: HbmTensor[bf16, Chip, m("A, H, C")], z: HbmTensor[bf16, Chip, m("A, H, C")]) -> HbmTensor[bf16, Chip, m("A, H, I, C")]:
    a = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("A, 2"), m("H, C")])
    b = z.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("A, 2"), m("H, C")])
    y = (ctx.main.begin_interleaved(a.view(), b.view(), m("I"))
         .fetch(m("H, I"), m("C"))
         .fetch_slice_lift(m("A, H"), m("I"))
         .collect(m("I"), m("C"))
         .commit_trim(m("C"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("A, H, I, C")])
'''


@pytest.mark.parametrize("name", ["lift_forward", "lift_permute"])
def test_a_switch_after_the_lift_against_numpy(tmp_path, name):
    """The switch reads the lifted stream (its Slice `A, H`); forwarding and a custom
    permutation of the 256 slices leave every element in place once committed."""
    x = RNG.integers(-128, 128, (128, 2, 8, 16), dtype=np.int64).astype(np.int8)
    cpu, text = _both(_load(tmp_path, _AFTER)[name], x)
    np.testing.assert_array_equal(cpu, x)
    assert 'lift=[(SLICE, "A, H", "B")]' in text and "switch=" in text


def test_an_interleaved_begin_lifts_both_tensors_against_numpy(tmp_path):
    x, z = _bf16((128, 2, 16)), _bf16((128, 2, 16))
    cpu, text = _both(_load(tmp_path, _AFTER)["lift_interleaved"], x, z)
    np.testing.assert_array_equal(cpu.view(np.uint16), np.stack([x, z], axis=2).view(np.uint16))
    assert "interleave=" in text and 'lift=[(SLICE, "A, H", "I")]' in text


def test_every_lift_reads_its_own_copy(tmp_path):
    """Copies that differ (a replicated DM never holds them; the cpu handler is driven
    directly): every output cell still comes from its own slice's row, at the step the
    lifted coordinates name."""
    from backends.cpu.fetch_lift import fetch_lift

    ns = _load(tmp_path, _KERNELS)
    kernel = ns["two_slots"].trace().kernel
    op = next(o for o in kernel.ops if o.STAGE == "fetch_slice_lift")
    t = op.input.type
    assert (t.cluster.size, t.slice.size, t.time.size, t.packet.size) == (2, 256, 4, 16)
    buf = np.arange(2 * 256 * 4 * 16, dtype=np.int32).reshape(1, 2, 256, 4, 16)
    out = fetch_lift(op, buf).reshape(2, 256, 16)
    assert not out[1].any()                         # the padding cluster
    out = out[0]
    h, row, g = np.meshgrid(np.arange(2), np.arange(64), np.arange(2), indexing="ij")
    slice_ = (h * 64 + row) * 2 + g                # the output placement H, Row, G
    step = h * 2 + g                               # the time H, G the slice would have walked
    want = buf[0, 0][slice_.reshape(-1), step.reshape(-1)]
    np.testing.assert_array_equal(out, want)


def test_bases_are_the_lifted_coordinates_placed_by_the_element():
    """Broadcasts filled in an order of their own: position d*128 + a*64 + x*4 + c*2 + b reads
    at a*32 + b*16 + c*8 + d*4 of the element `A, B, C, D, V` (V = 4)."""
    ax = {"A": 2, "B": 2, "C": 2, "D": 2, "X": 16, "V": 4}
    placement = m("D, A, X, C, B", axes=ax)
    got = lift_offsets((m("1", axes=ax), m("1", axes=ax), placement), frozenset("ABCD"),
                       m("A, B, C, D, V", axes=ax))
    p = np.arange(256)
    d, a, c, b = p // 128, p // 64 % 2, p // 2 % 2, p % 2
    np.testing.assert_array_equal(got, a * 32 + b * 16 + c * 8 + d * 4)


@pytest.mark.parametrize("before, after, code", [
    ("S, 2", "S, Q / 2", None),            # the inner broadcast filled by Q's outer digit
    ("2, S, 2", "H, S, G", None),          # two broadcasts at once
    ("S, 4", "S, H, G", None),             # one broadcast of 4 holding two axes
    ("[T, 2] # 256", "[T, H] # 256", None),  # under padding
    ("S, 2", "S, 2", "LIFT-2"),
    ("Q", "Q / 2, Q % 2", "LIFT-2"),       # the same placement, spelled otherwise
    ("S, 2", "S, Q", "LIFT-1"),
    ("S, H", "S, Q / 2", "LIFT-3"),        # a live axis renamed
    ("S, 1 # 2", "S, H", "LIFT-3"),        # padding made live
    ("[U, 3] # 256", "[U, Tri] # 256", "LIFT-3"),  # a broadcast of 3
    ("S, 2", "S, 1 # 2", "LIFT-4"),
])
def test_placement_rule(before, after, code):
    ax = {"S": 64, "Q": 4, "H": 2, "G": 2, "T": 63, "U": 85, "Tri": 3}
    found = placement_problem(LiftDim.SLICE, m(before, axes=ax), m(after, axes=ax))
    assert (None if found is None else found.code) == code


@pytest.mark.parametrize("old, new", [
    ('lift=[(SLICE, "A, Q / 2", "Q % 2")]', 'lift=[(SLICE, "A, Q / 2", "Q")]'),
    ('lift=[(SLICE, "A, Q / 2", "Q % 2")]', 'lift=[(SLICE, "A, 2", "Q % 2")]'),
    ('lift=[(SLICE, "A, Q / 2", "Q % 2")]', 'lift=[(SLICE, "A, Q / 2", "Q % 2"), (CHIP, "1", "Q % 2")]'),
])
def test_edited_lift_is_refused(old, new):
    text = npu_opt.compile(_example("lifted_widen")).text
    assert old in text
    with pytest.raises(Exception, match="FEED-16"):
        verify_text(text.replace(old, new, 1), rngd())


def test_dropping_the_lift_is_refused():
    """Without `lift=` the commit's DM tensor no longer lives on the program's space."""
    text = npu_opt.compile(_example("lifted_widen")).text
    with pytest.raises(Exception, match="differ from the program's space"):
        verify_text(text.replace(' lift=[(SLICE, "A, Q / 2", "Q % 2")]', ""), rngd())


def _first(tmp_path, src):
    from npu_opt.device import DeviceKernel

    kernel = next(v for v in _load(tmp_path, src).values() if isinstance(v, DeviceKernel))
    report = npu_opt.check(kernel)
    assert report.diagnostics, "the kernel was accepted"
    return report.diagnostics[0]


@pytest.mark.parametrize("code", ["LIFT-1", "LIFT-2", "LIFT-3", "LIFT-4", "LIFT-5", "LIFT-6"])
def test_page_refusal_at_the_users_line(tmp_path, code):
    from driver.explain import page

    src = page(code).example
    d = _first(tmp_path, src)
    assert d.code == code, d.render()
    assert d.line == next(n for n, line in enumerate(src.splitlines(), 1) if "# <--" in line)


_BAD = '''
from npu_opt import *
axes(A=128, H=2, G=2, Q=4, Six=6, Four=4, V=16)
@device(chip=1)
def k(ctx: Context, x: HbmTensor[bf16, m("1"), m("A, H, G, Q, V")]) -> HbmTensor[bf16, m("1"), m("A, H, G, Q, V")]:
    d = x.to_dm(ctx.tdma, DmTensor[bf16, m("1"), {cluster}, m("A, 2"), m("H, G, Q, V")])
    y = (ctx.main.begin(d.view()).fetch(m("H, G, Q"), m("V")){calls}
         .collect(m("1"), m("V")).commit_trim(m("V")).commit())
    return y.to_hbm(ctx.tdma)
'''


@pytest.mark.parametrize("cluster, calls, code, words", [
    # a dimension lifted twice, or out of order: the stage does not offer it
    ('m("1 # 2")', '.fetch_slice_lift(m("A, H"), m("G, Q")).fetch_slice_lift(m("A, H"), m("G, Q"))', "TYPE-1",
     "fetch_slice_lift"),
    ('m("2")', '.fetch_slice_lift(m("A, H"), m("G, Q")).fetch_cluster_lift(m("G"), m("Q"))', "TYPE-1",
     "fetch_cluster_lift"),
    # the lift takes 16 steps out of the time, but the cluster has 2 positions
    ('m("2")', '.fetch_cluster_lift(m("H"), m("1"))', "LIFT-5", "more than the 2 positions"),
    # out_time of 6 steps does not divide the 16 the fetch walks
    ('m("2")', '.fetch_cluster_lift(m("H"), m("Six"))', "LIFT-5", "does not divide"),
    # G is neither lifted nor kept
    ('m("1 # 2")', '.fetch_slice_lift(m("A, H"), m("Q"))', "LIFT-5", "neither lifted nor kept"),
    # the cluster shrinks
    ('m("2")', '.fetch_cluster_lift(m("1"), m("H, G, Q"))', "LIFT-1", "keeps the Cluster size"),
    ('m("2")', '.fetch_cluster_lift("H", m("G, Q"))', "TYPE-6", "out_cluster"),
])
def test_refusals_of_our_own(tmp_path, cluster, calls, code, words):
    src = _BAD.format(cluster=cluster, calls=calls)
    d = _first(tmp_path, src)
    assert d.code == code, d.render()
    assert words in d.render()


def test_a_slice_lift_costs_one_dma_startup_a_chip_or_cluster_lift_nothing():
    """Slice bases are copied in by a compiler DMA before the read; chip and cluster bases
    are static fields of the read command (the schedule model: the feed's declared cost,
    tu_ops/feed_cost.py)."""
    import attrs

    from visa.schedule.rates import builtin_rates

    def record_cycles(op, rates, target):
        return op.busy_cycles(rates, target)

    rates = builtin_rates("rngd")
    feed = next(op for op in parse_visa(npu_opt.compile(_example("lifted_widen")).text).kernel.ops()
                if op.MNEMONIC == "feed_buffer")
    with_lift, without = record_cycles(feed, rates, rngd()), record_cycles(attrs.evolve(feed, lift=None), rates, rngd())
    assert with_lift - without == rates("dma", "startup_cycles") > 0
    chip = attrs.evolve(feed, lift=(attrs.evolve(feed.lift[0], dim=LiftDim.CHIP),))
    assert record_cycles(chip, rates, rngd()) == without


_TRF = '''
from npu_opt import *

axes(S=128, G=2, M=32, N=8, K=128)

Chip = m("1")
Cluster = m("1 # 2")

@device(chip=1)
def lifted_weights(ctx: Context, a: HbmTensor[i8, Chip, m("G, M, K")], w: HbmTensor[i8, Chip, m("G, N, K")]
                   ) -> HbmTensor[i32, Chip, m("G, M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("128, G"), m("M, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("256"), m("G, N, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("G, N"), m("K"))
             .fetch_slice_lift(m("128, G"), m("N"))
             .collect(m("N, K / 32"), m("K % 32"))
             .to_trf(m("N"), m("K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M"), m("K"))
           .collect(m("M, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M"))
           .contract_lane(m("M"), m("N"), LaneMode.INTERLEAVED)
           .commit_trim(m("N"))
           .commit(m("M, N")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("G, M, N")])
'''


def test_lifted_weights_into_the_trf_against_numpy(tmp_path):
    """Weights replicated on every slice; the sub-context lift gives each slice of a pair its
    own group `G` in the TRF, and each contracts the activations of that group."""
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, (2, 32, 128), dtype=np.int64).astype(np.int8)
    w = rng.integers(-128, 128, (2, 8, 128), dtype=np.int64).astype(np.int8)
    cpu, text = _both(_load(tmp_path, _TRF)["lifted_weights"], a, w)
    want = np.einsum("gmk,gnk->gmn", a.astype(np.int64), w.astype(np.int64)).astype(np.int32)
    np.testing.assert_array_equal(cpu, want)
    assert "dest=(TRF_LOAD" in text and 'lift=[(SLICE, "128, G", "N")]' in text
