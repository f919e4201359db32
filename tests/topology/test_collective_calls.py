"""The collectives of npu_opt.collectives (docs/collectives.md) on cpu and visa, bit for bit,
against numpy oracles written here: integer sums exact (int64, wrapped to i32), f32 sums in
the order each chip adds (each addition one numpy float32 add), and copies exact.

The f32 ring AllReduce leaves chips disagreeing in the last bits: each chip rounds its own
order of the same terms. That is what the chips compute; the butterfly, whose adds are
commutative pairs, gives every chip the same bits."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from tests.kernel_files import load_source, marked_line
from tests.topology import collective_kernels as k

RNG = np.random.default_rng(1618)


def _both(kernel, x):
    """The kernel's result on cpu and on visa, which agree bit for bit."""
    a, b = (npu_opt.run(kernel, x, backend=name) for name in ("cpu", "visa"))
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return a


def _i32(*shape):
    x = RNG.integers(-2 ** 31, 2 ** 31, shape).astype(np.int32)
    x.reshape(-1)[:3] = 2 ** 31 - 1          # sums that wrap
    return x


def _f32(*shape):
    return (RNG.standard_normal(shape) * np.exp2(RNG.integers(-6, 7, shape))).astype(np.float32)


def _wrapped(total):
    return ((total + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)


def _ring(x):
    """chip c: ((x[c] + x[c+1]) + x[c+2]) + ..., one f32 rounding per add."""
    n = x.shape[0]
    out = x.copy()
    for c in range(n):
        for step in range(1, n):
            out[c] = out[c] + x[(c + step) % n]
    return out


def _butterfly(x):
    """Round b: every chip adds its partner's partial (chip number XOR b) to its own."""
    t = x.copy()
    b = 1
    while b < x.shape[0]:
        t = np.stack([t[c] + t[c ^ b] for c in range(x.shape[0])])
        b *= 2
    return t


def _scatter(x):
    """chip c: ((x[c, c] + x[c+1, c]) + x[c+2, c]) + ... (x is [chip, shard, ...])."""
    n = x.shape[0]
    out = np.stack([x[c, c] for c in range(n)])
    for c in range(n):
        for step in range(1, n):
            out[c] = out[c] + x[(c + step) % n, c]
    return out


def _same(a, b):
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


# --- integers: exact -------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel, shape", [(k.ring_i32, (4, 256, 8)), (k.butterfly_i32, (4, 256, 4))])
def test_chip_all_reduce_i32_gives_every_chip_the_wrapped_sum(kernel, shape):
    x = _i32(*shape)
    out = _both(kernel, x)
    expected = _wrapped(x.astype(np.int64).sum(0))
    assert all((out[c] == expected).all() for c in range(4))


def test_chip_reduce_scatter_i32_leaves_shard_c_summed_on_chip_c():
    x = _i32(4, 4, 256, 8)                   # [chip, shard, slice, value]
    out = _both(k.reduce_scatter_i32, x)
    assert (out == np.stack([_wrapped(x[:, c].astype(np.int64).sum(0)) for c in range(4)])).all()


def test_cluster_collectives_i32():
    x = _i32(2, 2, 256, 4)                   # [cluster, shard, slice, value]
    out = _both(k.cluster_scatter_i32, x)
    assert (out == np.stack([_wrapped(x[:, g].astype(np.int64).sum(0)) for g in range(2)])).all()
    y = _i32(2, 256, 12)                     # an Element of 12 values, padded to 16
    summed = _both(k.cluster_sum_padded, y)
    assert (summed == _wrapped(y.astype(np.int64).sum(0))[None]).all()


# --- f32: each chip's order ----------------------------------------------------------------------------

def test_chip_ring_all_reduce_f32_adds_in_each_chips_order():
    x = _f32(4, 256, 24)
    _same(_both(k.ring_f32, x), _ring(x))


def test_chip_butterfly_all_reduce_f32():
    x = _f32(4, 256, 24)
    _same(_both(k.butterfly_f32, x), _butterfly(x))


def test_two_chip_ring_f32():
    x = _f32(2, 256, 8)
    out = _both(k.ring_two_chips, x)
    _same(out, _ring(x))
    _same(out[0], out[1])                    # x0 + x1 and x1 + x0: one rounding, the same


def test_chip_reduce_scatter_f32_adds_in_each_chips_order():
    x = _f32(4, 4, 256, 24)
    _same(_both(k.reduce_scatter_f32, x), _scatter(x))


def test_cluster_collectives_f32():
    x = _f32(2, 256, 24)
    out = _both(k.cluster_sum_f32, x)
    _same(out, np.stack([x[0] + x[1], x[1] + x[0]]))
    _same(out[0], out[1])
    y = _f32(2, 2, 256, 24)                  # [cluster, shard, slice, value]
    _same(_both(k.cluster_scatter_f32, y), np.stack([y[0, 0] + y[1, 0], y[1, 1] + y[0, 1]]))


def test_the_f32_ring_leaves_chips_disagreeing_and_the_butterfly_does_not():
    """The hardware's truth, as docs/collectives.md states it: in the ring each chip rounds
    its own order, so the chips' sums differ in some cells; the model of each chip's order
    predicts exactly which. The butterfly's chips agree everywhere."""
    x = RNG.standard_normal((4, 256, 24)).astype(np.float32)
    ring = _both(k.ring_f32, x)
    bits = ring.view(np.uint32)
    apart = (bits != bits[0]).any(axis=0)
    assert apart.mean() > 0.1, f"only {apart.mean():.1%} of the cells differ between chips"
    model = _ring(x).view(np.uint32)
    assert (apart == (model != model[0]).any(axis=0)).all()
    butterfly = _both(k.butterfly_f32, x).view(np.uint32)
    assert (butterfly == butterfly[0]).all()
    exact = x.astype(np.float64).sum(0)
    assert np.abs(ring - exact).max() <= 4 * np.spacing(np.abs(x).sum(0).astype(np.float32)).max()


# --- copies -------------------------------------------------------------------------------------------

def test_chip_all_gather_copies_any_element_type():
    x = RNG.standard_normal((4, 256, 24)).astype(ml_dtypes.bfloat16)
    out = _both(k.all_gather_bf16, x)
    assert out.shape == (4, 4, 256, 24)
    assert all(out[c].tobytes() == x.tobytes() for c in range(4))


def test_cluster_all_gather_gives_both_clusters_both_shards():
    x = _i32(2, 256, 8)
    out = _both(k.cluster_gather_i32, x)
    assert out.shape == (2, 2, 256, 8) and all((out[h] == x).all() for h in range(2))


# --- refusals -------------------------------------------------------------------------------------------

REFUSED = '''
from npu_opt import *
from npu_opt.collectives import chip_all_reduce, chip_reduce_scatter, cluster_all_gather, cluster_reduce_scatter

axes(P=4, S=4, G=2, T=2, N=256, W=16, Z=12)

@device(chip=4)
def bf16_sum(ctx: Context, x: HbmTensor[bf16, m("P"), m("N, W")]) -> HbmTensor[bf16, m("P"), m("N, W")]:
    d = x.to_dm(ctx.tdma, DmTensor[bf16, m("P"), m("1 # 2"), m("N"), m("W")])
    return chip_all_reduce(ctx, d).to_hbm(ctx.tdma)  # <--

@device(chip=4)
def twelve(ctx: Context, x: HbmTensor[i32, m("P"), m("N, Z")]) -> HbmTensor[i32, m("P"), m("N, Z")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("P"), m("1 # 2"), m("N"), m("Z")])
    return chip_all_reduce(ctx, d).to_hbm(ctx.tdma)  # <--

@device(chip=4)
def from_hbm(ctx: Context, x: HbmTensor[i32, m("P"), m("N, W")]) -> HbmTensor[i32, m("P"), m("N, W")]:
    return chip_all_reduce(ctx, x).to_hbm(ctx.tdma)  # <--

@device(chip=4)
def tree(ctx: Context, x: HbmTensor[i32, m("P"), m("N, W")]) -> HbmTensor[i32, m("P"), m("N, W")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("P"), m("1 # 2"), m("N"), m("W")])
    return chip_all_reduce(ctx, d, algorithm="tree").to_hbm(ctx.tdma)  # <--

@device(chip=1)
def one_chip(ctx: Context, x: HbmTensor[i32, m("1"), m("P, N, W")]) -> HbmTensor[i32, m("1"), m("P, N, W")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("N"), m("P, W")])
    return chip_reduce_scatter(ctx, d, m("P"), m("W")).to_hbm(ctx.tdma)  # <--

@device(chip=4)
def shard_kept(ctx: Context, x: HbmTensor[i32, m("P"), m("S, N, W")]) -> HbmTensor[i32, m("P"), m("N, W")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("P"), m("1 # 2"), m("N"), m("S, W")])
    return chip_reduce_scatter(ctx, d, m("S"), m("S, W")).to_hbm(ctx.tdma)  # <--

@device(chip=1)
def inner_shard(ctx: Context, x: HbmTensor[i32, m("1"), m("G, N, W, T")]) -> HbmTensor[i32, m("1"), m("G, N, W")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("G"), m("N"), m("W, T")])
    return cluster_reduce_scatter(ctx, d, m("T"), m("W")).to_hbm(ctx.tdma)  # <--

@device(chip=4)
def gather_a_view(ctx: Context, x: HbmTensor[i32, m("P"), m("N, W")]) -> HbmTensor[i32, m("P"), m("N, W")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("P"), m("1 # 2"), m("N"), m("W")])
    return cluster_all_gather(ctx, d.view()).to_hbm(ctx.tdma)  # <--
'''


@pytest.mark.parametrize("name, code, words", [
    ("bf16_sum", "COLL-1", "adds i32 and f32, not bf16"),
    ("twelve", "COLL-2", "holds 12 values"),
    ("from_hbm", "COLL-2", "takes a DmTensor, not HbmTensor"),
    ("tree", "COLL-2", "algorithm='tree'"),
    ("one_chip", "COLL-2", "has one position"),
    ("gather_a_view", "COLL-2", "takes a DmTensor, not DmReadView"),
    ("shard_kept", "REDIST-2", "leaves `W`"),        # the redistribution's own rules, reported once
    ("inner_shard", "REDIST-4 REDIST-3", "narrows the outermost digit range"),   # its own and the other's slice
])
def test_refusals_are_coded_at_the_call(name, code, words):
    kernel = getattr(load_source(REFUSED, "collective_refusals"), name)
    found = npu_opt.check(kernel).diagnostics
    assert [d.code for d in found] == code.split(), found
    assert words in found[0].message
    assert found[0].line == marked_line(kernel)
