"""The bf16 contraction by float32 BLAS when no sum can round (backends/cpu/contract_blas.py).

Its guard is checked against a brute-force reading of every value (`unit_range`) and at
both sides of its bound (`no_rounding`); whole kernels drawn at random over valid layouts
(benchmarks/drawn_kernels.py) run on data at both sides of the guard, bit for bit against
the dense reference path and, where nothing rounds, against an independent numpy oracle
(the exact float64 sum); the BLAS path must really run where the guard holds and must not
where some sum rounds."""

from __future__ import annotations

import functools
import math
import operator

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from ir import bf16_exact
from ir import blas as ir_blas
from backends.cpu import CpuBackend, CpuOptions, blas_route, contract_blas, contract_float, contract_jit
from backends.cpu.gathers import Gather
from backends.cpu.lru import ByObject
from benchmarks.drawn_kernels import draw, pinned
from tests.backends.oracles import f32_to_bf16_bits
from tests.optional_deps import need


def _true_range(patterns: np.ndarray) -> tuple[int, int] | None:
    """unit_range by reading every value on its own: (top, the smallest unit exponent)."""
    mags = [int(p) & 0x7FFF for p in patterns.reshape(-1)]
    if any(m >= 0x7F80 or 0 < m < 0x80 for m in mags):
        return None
    units = []
    for m in mags:
        if m:
            value = float(np.array(m << 16, np.uint32).view(np.float32))
            e = -200
            while value % 2.0 ** (e + 1) == 0:  # the largest power of two dividing it
                e += 1
            units.append(e)
    return max(mags), min(units, default=1 << 14)


@pytest.mark.parametrize("seed", range(6))
def test_unit_range_reads_every_value(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ints = rng.integers(-255, 256, 200)
    scale = 2.0 ** rng.integers(-60, 60, 200) if seed % 2 else 2.0 ** int(rng.integers(-60, 60))
    patterns = f32_to_bf16_bits((ints * scale).astype(np.float32))
    want = _true_range(patterns)
    assert want is not None
    assert contract_blas.unit_range(patterns) == want


@pytest.mark.parametrize("bad", [0x7F80, 0xFF80, 0x7FC1, 0x0001, 0x807F])
def test_unit_range_refuses_nan_infinity_and_subnormals(bad: int) -> None:
    patterns = np.array([0x3F80, 0x4000, bad, 0x0000], np.uint16)
    assert contract_blas.unit_range(patterns) is None
    assert _true_range(patterns) is None


def test_unit_range_of_zeros() -> None:
    assert contract_blas.unit_range(np.array([0x0000, 0x8000], np.uint16)) == (0, 1 << 14)
    assert contract_blas.no_rounding((0, 1 << 14), (0x7F7F, 100), 1 << 30)


def test_no_rounding_bound_is_tight() -> None:
    """Integers up to 2^12 times integers up to 2^8 over 16 terms: 2^24 exactly is a float32
    sum of unit 1; a 17th term could give 2^24 + 1, which rounds."""
    a = contract_blas.unit_range(f32_to_bf16_bits(np.array([1.0, 4096.0], np.float32)))
    w = contract_blas.unit_range(f32_to_bf16_bits(np.array([1.0, 256.0], np.float32)))
    assert a[1] == w[1] == 0
    assert contract_blas.no_rounding(a, w, 16)
    assert not contract_blas.no_rounding(a, w, 17)
    tiny = contract_blas.unit_range(f32_to_bf16_bits(np.array([2.0 ** -63], np.float32)))
    assert contract_blas.no_rounding(tiny, tiny, 1)  # 2^-126: the smallest normal
    lower = contract_blas.unit_range(f32_to_bf16_bits(np.array([2.0 ** -64], np.float32)))
    assert not contract_blas.no_rounding(lower, tiny, 1)  # 2^-127 would be flushed


@pytest.mark.parametrize("seed", range(8))
def test_unit_floor_never_above_the_unit(seed: int) -> None:
    """`unit_floor` (the quick first look) gives the true top, a unit no larger than the
    brute-force one (so a guard it passes, the units pass), and refuses what they refuse."""
    rng = np.random.default_rng(seed)
    ints = rng.integers(-255, 256, 300)
    ints[rng.random(300) < 0.2] = 0
    scale = 2.0 ** rng.integers(-60, 60, 300) if seed % 2 else 2.0 ** int(rng.integers(-60, 60))
    patterns = f32_to_bf16_bits((ints * scale).astype(np.float32)).reshape(20, 15)
    top, unit = _true_range(patterns)
    got = contract_blas.unit_floor(patterns)
    assert got[0] == top and got[1] <= unit
    bad = patterns.copy()
    bad[3, 4] = (0x7FC1, 0x0001, 0xFF80, 0x807F)[seed % 4]
    assert contract_blas.unit_floor(bad) is None and _true_range(bad) is None


def test_unit_floor_exact_on_one_value_and_zeros() -> None:
    """One value: its own unit (6.0 = 3 x 2^1; 2^-126 the smallest normal); zeros: none."""
    for value, unit in ((6.0, 1), (2.0 ** -126, -126), (-40.0, 3), (255.0, 0)):
        patterns = f32_to_bf16_bits(np.array([value, 0.0, -0.0], np.float32))
        assert contract_blas.unit_floor(patterns) == _true_range(patterns), value
        assert contract_blas.unit_floor(patterns)[1] == unit, value
    assert contract_blas.unit_floor(np.array([0x0000, 0x8000], np.uint16)) == (0, 1 << 14)
    assert contract_blas.unit_floor(np.zeros(0, np.uint16)) == (0, 1 << 14)


@pytest.mark.parametrize("seed", range(6))
def test_the_guard_reads_widened_patterns_in_blocks(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """`unit_floor` and `unit_range` of widened patterns (uint32, pattern << 16: what the
    contraction checks, the cells its layouts read) equal those of the bf16 patterns, the
    floor taken a few cells at a time (`ir.bf16_exact._BLOCK`); a bad value in the last block, the
    smallest value in the first, the top in the middle, all found."""
    monkeypatch.setattr(bf16_exact, "_BLOCK", 7)
    rng = np.random.default_rng(seed)
    ints = rng.integers(-255, 256, 60)
    ints[rng.random(60) < 0.2] = 0
    scale = 2.0 ** rng.integers(-60, 60, 60) if seed % 2 else 2.0 ** int(rng.integers(-60, 60))
    patterns = f32_to_bf16_bits((ints * scale).astype(np.float32))
    patterns[30] = 0x7F00 if seed < 3 else patterns[30]
    wide = patterns.astype(np.uint32) << 16
    top, unit = _true_range(patterns)
    assert contract_blas.unit_range(wide) == contract_blas.unit_range(patterns) == (top, unit)
    got = contract_blas.unit_floor(wide.reshape(6, 10))
    assert got == contract_blas.unit_floor(patterns) and got[0] == top and got[1] <= unit
    bad = wide.copy()
    bad[-1] = (0x7FC1, 0x0001, 0xFF80)[seed % 3] << 16
    assert contract_blas.unit_floor(bad) is None and contract_blas.unit_range(bad) is None
    assert contract_blas.unit_floor(np.zeros(20, np.uint32) | np.uint32(0x80000000)) == (0, 1 << 14)


@pytest.mark.parametrize("bad_cell", [None, 0, 5])
def test_the_compiled_floor_reads_the_cells_the_layout_reads(bad_cell: int | None) -> None:
    """With numba loaded, `_floor` takes the bounds in one compiled pass over the widened
    cells (those the gather reads): the same floor as `unit_floor` of them, and a NaN in a
    cell no layout reads (cell 0; a read cell: 5) does not stop the BLAS path."""
    need("numba", "test")
    assert contract_jit.enabled(True)  # numba loaded
    rng = np.random.default_rng(5)
    raw = f32_to_bf16_bits((rng.integers(-100, 100, (4, 40)) * 0.25).astype(np.float32))
    raw[:, 1:3] = 0
    if bad_cell is not None:
        raw[2, bad_cell] = 0x7FC1
    i, g, r, n = 2, 2, 4, 2  # cells 4 + 16 i + 8 g + 2 r + n: 4..35, cell 0 never read
    index = 4 + np.add.outer(np.add.outer(np.add.outer(16 * np.arange(i), 8 * np.arange(g)), 2 * np.arange(r)),
                             np.arange(n))
    gather = Gather(digits=(0, 1, 2, 3), groups=(i, g, r, n), index=index, offset=4, shape=(i, g, r, n),
                    strides=(16, 8, 2, 1))
    bits = contract_blas._widened(raw, gather).view(np.uint32)
    got = contract_blas._floor(bits)
    assert got == contract_blas.unit_floor(bits)
    assert (got is None) == (bad_cell == 5)


@pytest.mark.parametrize("strided", [True, False])
def test_widened_reads_the_layout_cells(strided: bool) -> None:
    """`_widened`: the cells (classes, N', I, g R) a gather (I, g, R, N') names in each stored
    row, as float32, against an index-by-index reading of the bf16 values."""
    rng = np.random.default_rng(3)
    i, g, r, n = 3, 2, 4, 2
    raw = f32_to_bf16_bits(rng.integers(-100, 100, (5, 64)).astype(np.float32))
    index = rng.permutation(64)[:i * g * r * n].reshape(i, g, r, n)
    if strided:
        index = 7 + np.arange(i)[:, None, None, None] * 16 + np.arange(g)[None, :, None, None] * 8 \
            + np.arange(r)[None, None, :, None] * 2 + np.arange(n)
    gather = Gather(digits=(0, 1, 2, 3), groups=(i, g, r, n), index=index,
                    offset=7 if strided else None, shape=(i, g, r, n), strides=(16, 8, 2, 1) if strided else None)
    got = contract_blas._widened(raw, gather)
    assert got.dtype == np.float32 and got.shape == (5, n, i, g * r)
    values = (raw.astype(np.uint32) << 16).view(np.float32)
    for row, nn, ii, kk in np.ndindex(*got.shape):
        assert got[row, nn, ii, kk] == values[row, index[ii, kk // r, kk % r, nn]]


def test_widened_reads_a_layout_of_several_digits_per_group() -> None:
    """`_widened` over a strided gather whose groups are made of several digits each (I of
    two, g R of three, N' of two, a digit of size 1 among them), the digits' strides in no
    group order: the cells (classes, N', I, g R), against an index-by-index reading."""
    rng = np.random.default_rng(4)
    shape = (3, 2, 2, 1, 2, 2, 2, 2)  # I = 3 x 2, g = 2, R = 1 x 2 x 2, N' = 2 x 2
    strides = (1, 96, 3, 0, 48, 24, 6, 12)
    raw = f32_to_bf16_bits(rng.integers(-100, 100, (4, 200)).astype(np.float32))
    index = 5 + sum(np.arange(n).reshape([-1 if d == k else 1 for d in range(len(shape))]) * st
                    for k, (n, st) in enumerate(zip(shape, strides)))
    i, g, r, n = 6, 2, 4, 4
    gather = Gather(digits=tuple(range(len(shape))), groups=(i, g, r, n), index=index, offset=5, shape=shape,
                    strides=strides)
    got = contract_blas._widened(raw, gather)
    assert got.dtype == np.float32 and got.shape == (4, n, i, g * r)
    values = (raw.astype(np.uint32) << 16).view(np.float32)
    cells = index.reshape(i, g, r, n)
    for row, nn, ii, kk in np.ndindex(*got.shape):
        assert got[row, nn, ii, kk] == values[row, cells[ii, kk // r, kk % r, nn]]


def test_k_order_reads_a_by_its_smallest_stride_and_keeps_the_pairs() -> None:
    """`_k_order`: K's digits (bit-reversed leaves here, strides 1, 2, 4 outermost first) in
    the order that reads the stream operand A with its smallest stride innermost, the same
    for W; the widened operands then hold the same (A, W) pairs along K, only permuted, so
    every product and sum is the layout order's."""
    rng = np.random.default_rng(6)
    raw_a = f32_to_bf16_bits(rng.integers(-100, 100, (3, 64)).astype(np.float32))
    raw_w = f32_to_bf16_bits(rng.integers(-100, 100, (2, 96)).astype(np.float32))
    # A: I = 4 (stride 16), K = 2 x 2 x 2 (strides 1, 2, 4: leaves bit-reversed), N' = 1
    a = Gather(digits=(0, 5, 6, 7), groups=(4, 2, 4, 1), index=np.zeros(1, np.int64), offset=3,
               shape=(4, 2, 2, 2), strides=(16, 1, 2, 4))
    # W: J = 3 (stride 24), the same K digits with strides 3, 6, 12, N' = 1
    w = Gather(digits=(1, 5, 6, 7), groups=(3, 2, 4, 1), index=np.zeros(1, np.int64), offset=1,
               shape=(3, 2, 2, 2), strides=(24, 3, 6, 12))
    order = contract_blas._k_order(a, w)
    assert order == (2, 1, 0)
    plain_a, plain_w = contract_blas._widened(raw_a, a), contract_blas._widened(raw_w, w)
    fa, fw = contract_blas._widened(raw_a, a, order), contract_blas._widened(raw_w, w, order)
    assert fa.shape == plain_a.shape == (3, 1, 4, 8) and fw.shape == plain_w.shape == (2, 1, 3, 8)
    perm = np.arange(8).reshape(2, 2, 2).transpose(order).reshape(-1)  # K position -> layout position
    np.testing.assert_array_equal(fa, plain_a[..., perm])
    np.testing.assert_array_equal(fw, plain_w[..., perm])
    values = (raw_a.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(fa[0, 0, 0], values[0, 3 + np.arange(8)])  # A's cells read in a run
    np.testing.assert_array_equal(np.einsum("xnik,ynjk->xyij", fa, fw), np.einsum("xnik,ynjk->xyij", plain_a, plain_w))
    w_other = Gather(digits=(1, 5, 7, 6), groups=(3, 2, 4, 1), index=np.zeros(1, np.int64), offset=1,
                     shape=(3, 2, 2, 2), strides=(24, 3, 6, 12))
    assert contract_blas._k_order(a, w_other) is None  # other K digits: the layout's order


@pytest.mark.parametrize("permutation", [True, False])
def test_placed_puts_each_value_at_its_cells(permutation: bool) -> None:
    """`blas_route.placed`: acc (rows, N', I, J) at the cells `dest` (I, J, N', Z) names, repeated over
    Z, -0 made +0, +0 where nothing lands; checked cell by cell (a dest that is not a
    permutation of the cells takes the general placing)."""
    rng = np.random.default_rng(5)
    rows, nn, ni, nj, nz = 3, 2, 4, 5, 2
    acc = rng.integers(-3, 4, (rows, nn, ni, nj)).astype(np.float32)
    acc[acc == 0] = -0.0
    cells = ni * nj * nn * nz + (0 if permutation else 7)
    dest = rng.permutation(cells)[:ni * nj * nn * nz].reshape(ni, nj, nn, nz)
    got = blas_route.placed(acc, dest, cells)
    want = np.zeros((rows, cells), np.float32)
    for i, j, n, z in np.ndindex(*dest.shape):
        want[:, dest[i, j, n, z]] = acc[:, n, i, j] + np.float32(0)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert not np.signbit(got[got == 0]).any()
    again = blas_route.placed(acc * 2, dest, cells)  # the index kept for this dest
    np.testing.assert_array_equal(again, want * 2 + np.float32(0))


# ---- whole kernels drawn at random ---------------------------------------------------------

DRAWN = draw(61, 5, scale="small", dtypes=("bf16:f32",))
# one product per spatial row (once drawn by seed 64; pinned by its layout since the draws follow synth's levers)
PER_ROW = pinned("drawn_s64_4", "out[n,m] = a[m,k] * w[n,k]", "bf16:f32", {"k": 64, "m": 96, "n": 1024},
                 {"placement": "64x4 of 16x32", "trf": "w", "packet": 32, "order": "ji", "reuse": "all"}, "tiled")


def _data(rng: np.random.Generator, arrays: list[np.ndarray], kind: str) -> list[np.ndarray]:
    """Operands of `kind`: `exact` (integers up to 255 times one power of two per operand,
    sums far below 2^24 units), `negzero` (zeros of both signs and -1: every product a
    zero, some -0), `rounds` (the integers of `exact` with a few values 2^20 times larger
    and some odd: sums that need more than 24 bits) and `normal` (standard normal)."""
    out = []
    for a in arrays[:-1]:
        shape = a.shape
        if kind == "exact":
            v = rng.integers(-255, 256, shape) * 2.0 ** int(rng.integers(-30, 30))
        elif kind == "negzero":
            v = np.where(rng.random(shape) < 0.5, -0.0, 0.0) if not out else -np.ones(shape)
        elif kind == "rounds":
            v = rng.integers(-255, 256, shape) * 1.0
            v[rng.random(shape) < 0.1] *= 2.0 ** 20
        else:
            v = rng.standard_normal(shape)
        out.append(f32_to_bf16_bits(v.astype(np.float32)).view(a.dtype))
    return [*out, np.zeros_like(arrays[-1])]


@pytest.mark.parametrize("kind", ["exact", "negzero", "rounds", "normal"])
@pytest.mark.parametrize("index", range(len(DRAWN)), ids=[d.name for d in DRAWN])
def test_drawn_kernels_bit_exact(monkeypatch: pytest.MonkeyPatch, index: int, kind: str) -> None:
    d = DRAWN[index]
    rng = np.random.default_rng(1000 * index + len(kind))
    arrays = _data(rng, d.inputs(rng), kind)
    used = []
    blas = contract_blas.contract
    monkeypatch.setattr(contract_blas, "contract", lambda *a: used.append(blas(*a) is not None) or blas(*a))
    fast = [a.copy() for a in arrays]
    CpuBackend(CpuOptions(threads=2, blas_threads=1)).run(d.kernel, tuple(fast))
    dense = [a.copy() for a in arrays]
    CpuBackend(CpuOptions(fast_contract=False)).run(d.kernel, tuple(dense))
    got, ref = fast[-1].view(np.uint32), dense[-1].view(np.uint32)
    np.testing.assert_array_equal(got, ref, err_msg=d.layout)
    assert used, d.layout
    if kind in ("exact", "negzero"):
        assert all(used), d.layout
        want = np.asarray(d.oracle(*arrays[:-1], arrays[-1]), np.float32) + np.float32(0)  # the chip's +0
        np.testing.assert_array_equal(got, want.view(np.uint32), err_msg=d.layout)
    else:
        assert not any(used), d.layout


def test_rows_split_over_threads_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """The matmul split by rows over the float threads (BLAS on one thread) gives the bits
    of one matmul."""
    d = DRAWN[0]
    rng = np.random.default_rng(7)
    arrays = _data(rng, d.inputs(rng), "exact")
    one = [a.copy() for a in arrays]
    CpuBackend(CpuOptions(threads=1, blas_threads=1)).run(d.kernel, tuple(one))
    monkeypatch.setattr(contract_blas, "_SHARE_MIN", 1)
    calls = []
    matmul = np.matmul
    monkeypatch.setattr(contract_blas.np, "matmul", lambda *a, **k: calls.append(1) or matmul(*a, **k))
    split = [a.copy() for a in arrays]
    CpuBackend(CpuOptions(threads=3, blas_threads=1)).run(d.kernel, tuple(split))
    np.testing.assert_array_equal(split[-1].view(np.uint32), one[-1].view(np.uint32))
    assert len(calls) >= 3


def test_a_matmul_is_shared_only_in_parts_that_pay(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_matmul` on two threads: a 512 x 256 x 128 product (one `_SHARE_MIN` of work) stays one
    BLAS call on the calling thread (handing half of 0.35 ms to a thread of a busy machine
    costs more than it saves: issue 61), a product of 8 such is cut into at most two parts
    per thread, each of at least `_SHARE_MIN`; both equal numpy's product."""
    rng = np.random.default_rng(5)
    shared: list[int] = []
    real = contract_blas.share
    monkeypatch.setattr(contract_blas, "share", lambda parts, threads: shared.append(len(parts)) or real(parts, threads))
    for m, parts in ((512, []), (4096, [4])):
        left = rng.integers(-8, 9, (1, m, 256)).astype(np.float32)
        right = rng.integers(-8, 9, (1, 256, 128)).astype(np.float32)
        shared.clear()
        got = contract_blas._matmul(left, right, 2)
        np.testing.assert_array_equal(got, left @ right)
        assert shared == parts, m
    assert contract_blas._SHARE_MIN == 512 * 256 * 128


def _per_row_contraction(monkeypatch: pytest.MonkeyPatch, seed: int, threads: int) -> tuple:
    """The arguments of `contract_blas.contract`'s first call when `PER_ROW` runs on the cpu
    backend with `threads` threads (its own pool and BLAS's) on exact data drawn with `seed`."""
    seen = []
    blas = contract_blas.contract
    monkeypatch.setattr(contract_blas, "contract", lambda *a: seen.append(a) or blas(*a))
    rng = np.random.default_rng(seed)
    arrays = _data(rng, PER_ROW.inputs(rng), "exact")
    CpuBackend(CpuOptions(threads=threads, blas_threads=threads)).run(PER_ROW.kernel, tuple(arrays))
    monkeypatch.setattr(contract_blas, "contract", blas)
    return seen[0]


def test_per_row_products_a_block_of_rows_at_a_time_keep_the_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-product-per-spatial-row form takes its rows a block at a time (issue 61: no
    copy of every row's operands at once): `PER_ROW`'s contraction with every spatial row
    its own class (so neither one matmul of every class nor the grouped form applies), in
    blocks of one row, gives the bits of the contraction on its classes."""
    blas = contract_blas.contract
    (raw_a, ca), (raw_w, cw), plan, threads, pool = _per_row_contraction(monkeypatch, 50, 1)
    want = blas((raw_a, ca), (raw_w, cw), plan, threads, pool)
    monkeypatch.setattr(contract_blas, "_ROW_BLOCK_BYTES", 1)
    blocks = []
    matmul = contract_blas._matmul
    monkeypatch.setattr(contract_blas, "_matmul", lambda left, *a: blocks.append(left.ndim == 4 and len(left) == 1)
                        or matmul(left, *a))
    rows = np.arange(len(ca))
    got = blas((raw_a[ca], rows), (raw_w[cw], rows), plan, threads, pool)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert blocks and all(blocks) and len(blocks) == len(ca)


@pytest.mark.parametrize("nn", [1, 2])
@pytest.mark.parametrize("by_a", [True, False])
def test_grouped_products_are_each_rows_pair(monkeypatch: pytest.MonkeyPatch, by_a: bool, nn: int) -> None:
    """`_grouped`: the rows' (A class, W class) products in one matmul per class of the
    side with fewer classes, blocks of one group, each row's acc its own pair's product
    (a numpy product per row); groups of different sizes, or of one pair each, are
    left to the per-row form (None)."""
    rng = np.random.default_rng(3 + by_a + 2 * nn)
    da, dw = (3, 12) if by_a else (12, 3)
    fa = rng.integers(-8, 9, (da, nn, 4, 16)).astype(np.float32)
    fw = rng.integers(-8, 9, (dw, nn, 5, 16)).astype(np.float32)
    few, many = (da, dw) if by_a else (dw, da)
    own = np.repeat(np.arange(few), 4)  # each class of the few meets 4 of the many
    other = np.concatenate([rng.choice(many, 4, replace=False) for _ in range(few)])
    ca, cw = (own, other) if by_a else (other, own)
    ca, cw = np.concatenate([ca, ca[:5]]), np.concatenate([cw, cw[:5]])  # rows repeating a pair
    calls = []
    matmul = contract_blas._matmul
    monkeypatch.setattr(contract_blas, "_matmul", lambda left, *a: calls.append(len(left)) or matmul(left, *a))
    monkeypatch.setattr(contract_blas, "_ROW_BLOCK_BYTES", 1)
    got = contract_blas._grouped(fa, fw, ca, cw, 1)
    want = np.stack([fa[a] @ fw[w].transpose(0, 2, 1) for a, w in zip(ca, cw)])  # (rows, N', I, J)
    np.testing.assert_array_equal(got, want)
    assert calls == [1] * few
    assert contract_blas._grouped(fa, fw, ca[:-6], cw[:-6], 1) is None  # one group of 3 pairs, the others 4
    assert contract_blas._grouped(fa, fw, np.arange(3), np.arange(3), 1) is None  # a pair per group


def test_grouped_classes_meeting_the_same_set_share_one_matmul_of_views(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batched GEMM's shape: A classes 0 and 1 meet W classes 0..3, A classes 2 and 3 meet
    4..7 (rows in any order): one matmul of both sets, its operands views of the widened
    classes (no gather), each row's acc its own pair's product."""
    rng = np.random.default_rng(11)
    fa = rng.integers(-8, 9, (4, 1, 3, 8)).astype(np.float32)
    fw = rng.integers(-8, 9, (8, 1, 5, 8)).astype(np.float32)
    ca = np.array([a for a in range(4) for _ in range(4)])
    cw = np.array([4 * (a // 2) + j for a in range(4) for j in range(4)])
    shuffle = rng.permutation(len(ca))
    ca, cw = ca[shuffle], cw[shuffle]
    calls = []
    matmul = contract_blas._matmul
    monkeypatch.setattr(contract_blas, "_matmul", lambda left, right, t: calls.append(
        (np.shares_memory(left, fa), np.shares_memory(right, fw))) or matmul(left, right, t))
    got = contract_blas._grouped(fa, fw, ca, cw, 1)
    want = np.stack([fa[a] @ fw[w].transpose(0, 2, 1) for a, w in zip(ca, cw)])
    np.testing.assert_array_equal(got, want)
    assert calls == [(True, True)]


def test_blas_runs_on_one_thread_whatever_blas_threads_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one matmul of every class and a product per row alike take BLAS's pool down to one
    thread (its threads wait for each other by spinning: on a loaded machine a pool of 2 cost
    20-100x the arithmetic, issue 61), the backend's own threads sharing a large matmul
    instead; `blas_threads=None` leaves the pool as it is."""
    blas = contract_blas.contract
    (raw_a, ca), (raw_w, cw), plan, threads, _ = _per_row_contraction(monkeypatch, 51, 2)
    limits = []
    real = contract_blas.blas_threads
    monkeypatch.setattr(contract_blas, "blas_threads", lambda limit: limits.append(limit) or real(limit))
    want = blas((raw_a, ca), (raw_w, cw), plan, threads, 2)  # one matmul of every class
    rows = np.arange(len(ca))
    got = blas((raw_a[ca], rows), (raw_w[cw], rows), plan, threads, 2)  # a product per row
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    loose = blas((raw_a, ca), (raw_w, cw), plan, threads, None)
    np.testing.assert_array_equal(loose.view(np.uint32), want.view(np.uint32))
    assert limits == [1, 1, None]


@pytest.mark.parametrize("options, seed", [(CpuOptions(threads=1), 3), (CpuOptions(threads=2, blas_threads=2), 4)],
                         ids=["one_thread", "blas_threads_2"])
def test_a_run_limits_blas_once(monkeypatch: pytest.MonkeyPatch, options: CpuOptions, seed: int) -> None:
    """With BLAS's pool at two threads, a run of two contractions changes the pool once (the
    run's limit; each contraction's own is then a nested block), not once per contraction
    (~60 us each: issue 61, per-op overhead). With `blas_threads=2` too: a kernel whose
    contractions all accumulate floats runs its matmuls on one BLAS thread anyway, so the run
    holds that limit once (~25 us a change saved). The result is the oracle's either way."""
    d = pinned("two_tiles", "out[m,n] = a[m,k] * w[n,k]", "bf16:f32", dict(m=64, n=256, k=64),
               dict(placement="2x4 of 32x32, on 1/16 of the slices", trf="w", packet=16, pieces=1), "tiled")
    arrays = d.inputs(np.random.default_rng(seed))
    changes, contractions = [], []
    limiter, blas = ir_blas._limiter, contract_blas.contract
    monkeypatch.setattr(ir_blas, "_limiter", lambda limit: changes.append(limit) or limiter(limit))
    monkeypatch.setattr(contract_blas, "contract", lambda *a: contractions.append(1) or blas(*a))
    with threadpool_limits(2, user_api="blas"):
        CpuBackend(options).run(d.kernel, tuple(arrays))
    want = np.asarray(d.oracle(*arrays), np.float32) + np.float32(0)
    np.testing.assert_array_equal(arrays[-1].view(np.uint32), want.view(np.uint32))
    assert len(contractions) == 2 and changes == [1]


@pytest.mark.parametrize("form", ["whole", "grouped", "rows"])
def test_the_one_take_index_places_what_the_two_passes_place(monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    """The route's index (`blas_route.route`: the spread of each row's pair and the placing in one
    take) gives the bits of the spread and `placed` taken apart (`_INDEX_MAX` 0), for each
    way the products are made: `PER_ROW`'s classes as they are, the W side a class per row
    (each A class meets an equal set), every row its own class on both sides."""
    (raw_a, ca), (raw_w, cw), plan, threads, pool = _per_row_contraction(monkeypatch, 52, 1)
    rows = np.arange(len(ca))
    a, w = {"whole": ((raw_a, ca), (raw_w, cw)), "grouped": ((raw_a, ca), (raw_w[cw], rows)),
            "rows": ((raw_a[ca], rows), (raw_w[cw], rows))}[form]
    routes = []
    route = blas_route.route
    monkeypatch.setattr(blas_route, "route", lambda *args: routes.append(route(*args)) or routes[-1])
    monkeypatch.setattr(blas_route, "_ROUTES", ByObject())
    got = contract_blas.contract(a, w, plan, threads, pool)
    monkeypatch.setattr(blas_route, "_ROUTES", ByObject())
    monkeypatch.setattr(blas_route, "_INDEX_MAX", 0)
    apart = contract_blas.contract(a, w, plan, threads, pool)
    assert [r.kind for r in routes] == [form] * 2 and routes[0].taken and not routes[1].taken
    np.testing.assert_array_equal(got.view(np.uint32), apart.view(np.uint32))
    want = contract_blas.contract((raw_a, ca), (raw_w, cw), plan, threads, pool)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert not np.signbit(got[got == 0]).any()  # the chip's +0


def test_the_products_hold_result_cells_in_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The float plan orders its rows' and columns' digits as the result holds its cells, the
    lane innermost (`contract_plan._result_order`): the placing reads runs of products (with
    the lane digit first it read one cell per lane: the drawn kernels took every result cell
    across lanes), so it is a strided copy (`blas_route._runs`), bit for bit the take.
    Equal to an independent numpy product."""
    d = pinned("runs", "out[m,n] = a[m,k] * w[n,k]", "bf16:f32", dict(m=64, n=128, k=64),
               dict(placement="2x4 of 32x32, on 1/16 of the slices", trf="w", packet=16, pieces=1), "gemm")
    found: list[blas_route.Route] = []
    route = blas_route.route
    monkeypatch.setattr(blas_route, "route", lambda *args: found.append(route(*args)) or found[-1])
    arrays = d.inputs(np.random.default_rng(3))
    a, w = (x.astype(np.float64) for x in arrays[:2])
    results = []
    for min_run in (blas_route._MIN_RUN, 1 << 30):  # the strided copy, then the take
        monkeypatch.setattr(blas_route, "_MIN_RUN", min_run)
        monkeypatch.setattr(blas_route, "_ROUTES", ByObject())
        args = [x.copy() for x in arrays]
        CpuBackend().run(d.kernel, tuple(args))
        results.append(args[-1])
    assert np.array_equal(results[0][:64, :128], (a @ w.T).astype(np.float32))
    assert np.array_equal(results[0].view(np.uint32), results[1].view(np.uint32))
    assert found[0].runs is not None and found[-1].runs is None
    assert found[0].index is None  # a strided read keeps no index of every cell (1 MiB on drawn_s2_3)
    first, shape, steps = found[0].runs  # the take's cells, from its strided form (no index kept for it)
    runs = (first + sum(i * st for i, st in zip(np.indices(shape), steps))).reshape(-1)
    assert np.mean(np.diff(runs) == 1) > 0.9  # was 0: each next cell in another lane's block
    assert found[-1].index is not None and np.array_equal(found[-1].index.reshape(-1), runs)  # the take's own index


@pytest.mark.parametrize("case", ["mixed", "zeros", "nan", "subnormal"])
def test_the_compiled_bounds_of_widened_cells(case: str) -> None:
    """`contract_jit.widened_bounds`: the largest magnitude pattern, the smallest nonzero one
    (the sign bit when every one is zero) and the OR of the magnitudes of widened bf16
    patterns, as numpy finds them; `_floor` from them equals `unit_floor`."""
    need("numba", "test")
    assert contract_jit.enabled(True)  # numba loaded
    rng = np.random.default_rng(9)
    patterns = rng.integers(0, 0x10000, (3, 50)).astype(np.uint16)
    patterns[rng.random(patterns.shape) < 0.3] = 0x8000  # -0
    patterns &= np.uint16(0xFFFF if case != "zeros" else 0x8000)
    patterns[1, 7] = {"mixed": patterns[1, 7], "zeros": 0, "nan": 0x7FC1, "subnormal": 0x8003}[case]
    if case == "mixed":
        patterns[(patterns & 0x7FFF) >= 0x7F80] = 0x3F80
        patterns[((patterns & 0x7FFF) > 0) & ((patterns & 0x7FFF) < 0x80)] = 0x4000
    bits = patterns.astype(np.uint32) << 16
    mags = [int(m) << 16 for m in (patterns & 0x7FFF).reshape(-1)]
    nonzero = [m for m in mags if m]
    want = (max(mags), min(nonzero, default=0x80000000), functools.reduce(operator.or_, mags, 0))
    assert contract_jit.widened_bounds(bits) == want
    assert contract_blas._floor(bits) == contract_blas.unit_floor(bits)
    assert contract_jit.widened_bounds(np.zeros(0, np.uint32)) == (0, 0x80000000, 0)
