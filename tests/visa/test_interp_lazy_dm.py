"""A DMA broadcast into DM held lazily (visa/interp/fast/lazy.py): the command's distinct
rows and each slice's row among them, not its copies; the padding slices of its new
tensor as one row of zeros. A reader that knows the form (a contraction's or TRF load's
feed, `feed._repeated`) reads each distinct row once; every other access of the DM store
writes the region out first (`Dm._grow`). Results stay the numpy oracle's bits, and the
cpu backend's."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from synth import contraction
from synth.space import build
from visa import parse_visa
from visa.interp import execute_inout
from visa.interp.fast import lazy
from visa.interp.dm import Dm, Lazy
from visa.interp.memory import gather, scatter
from visa.interp.strided import flat_walk, view
from npu_opt.compile_api import compile_kernel
from ir.dtypes import u8 as U8

# w's DMA repeats each row block over 8 slices, two slices apart (a loop of source stride
# 0); a's over 16: both broadcasts, one read by the contraction's feed, one by the TRF load
PLACEMENT = "16x8 of 8x16, on 1/2 of the slices"
SIZES = dict(m=128, n=128, k=64)


def _run(monkeypatch: pytest.MonkeyPatch, trf: str, through: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """(interpreter, cpu backend, oracle) results of the small broadcast GEMM, and the lazy
    regions held; `through`: False makes the feed unable to read the lazy form (so the
    region is written out by the read of the DM store)."""
    monkeypatch.setattr(lazy, "LAZY_BYTES", 0)     # the small kernel's broadcasts held too
    held: list = []
    hold = Dm.hold
    monkeypatch.setattr(Dm, "hold", lambda dm, region: held.append(region) or hold(dm, region))
    if not through:
        monkeypatch.setattr(Dm, "lazy_view", lambda *args: None)
    spec = contraction("out[n,m] = a[m,k] * w[n,k]", dtype="bf16:f32", sizes=SIZES, name="lazy")
    kernel = build(spec, dict(placement=PLACEMENT, trf=trf, packet=16), "<lazy dm>")
    rng = np.random.default_rng(5)
    host = {"a": rng.integers(-8, 9, (128, 64)), "w": rng.integers(-8, 9, (128, 64))}
    arrays = [host[name].astype(ml_dtypes.bfloat16) for name, _ in spec.operands] + [np.zeros((128, 128), np.float32)]
    results, finals = execute_inout(parse_visa(compile_kernel(kernel).text), [a.copy() for a in arrays])
    got = np.asarray((results + finals)[-1])
    cpu = np.asarray(npu_opt.run(kernel, *[a.copy() for a in arrays]))
    want = np.einsum("nk,mk->nm", host["w"].astype(np.float64), host["a"].astype(np.float64)).astype(np.float32)
    return got, cpu, want, held


@pytest.mark.parametrize("trf", ["a", "w"])
def test_a_broadcast_held_lazily_gives_the_oracles_bits(monkeypatch: pytest.MonkeyPatch, trf: str) -> None:
    got, cpu, want, held = _run(monkeypatch, trf, through=True)
    copies = [z for z in held if z.rows.shape[0] > 1]
    assert copies and all(z.slices.size >= 2 * z.rows.shape[0] for z in copies)   # distinct rows, not copies
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(cpu.view(np.uint32), want.view(np.uint32))


def test_a_reader_that_cannot_read_it_lazily_writes_it_out(monkeypatch: pytest.MonkeyPatch) -> None:
    got, cpu, want, held = _run(monkeypatch, "a", through=False)
    assert held
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(cpu.view(np.uint32), want.view(np.uint32))


def _region(dm: Dm) -> tuple[np.ndarray, Lazy]:
    """A lazy region over offsets [100, 164) of slices 1, 3, 5, 7 (two distinct rows), and the
    bytes the store must show for it (a model: slices x 200 offsets)."""
    rows = np.arange(128, dtype=np.uint8).reshape(2, 64) + 1
    which = np.full(dm.slices, -1, np.int64)
    which[[1, 3, 5, 7]] = [0, 0, 1, 1]
    model = np.zeros((dm.slices, 200), np.uint8)
    model[[1, 3, 5, 7], 100:164] = rows[[0, 0, 1, 1]]
    return model, Lazy(100, 164, np.array([1, 3, 5, 7], np.int64), which, rows)


def _bytes(dm: Dm, slices: int, width: int) -> np.ndarray:
    """Offsets [0, width) of the first `slices` slices, read through `gather`."""
    base = (np.arange(slices, dtype=np.int64) * dm.slice_bytes)[:, None]
    return gather(dm, base, np.arange(width, dtype=np.int64)[None], U8, 8)


def test_a_lazy_region_reads_as_its_bytes_and_a_write_into_part_of_it_keeps_the_rest() -> None:
    dm = Dm(16, 4096)
    model, region = _region(dm)
    dm.hold(region)
    rows, which = dm.lazy_view(110, 120, np.array([3, 5], np.int64), [5], [2], np.dtype("<u2"))
    assert np.array_equal(rows[which], model[[3, 5], 110:120].view("<u2"))
    u8 = np.dtype(np.uint8)
    assert dm.lazy_view(110, 120, np.array([2, 3], np.int64), [10], [1], u8) is None   # slice 2 is not in it
    assert dm.lazy_view(150, 170, np.array([3], np.int64), [20], [1], u8) is None      # past its end
    assert dm.lazy_view(170, 180, np.array([3], np.int64), [10], [1], u8) is None      # nothing held there
    # a write of four bytes into slice 5 (inside the region) writes those offsets of the
    # region out first (of every slice it holds); the offsets before and after stay held
    scatter(dm, np.array([[5 * dm.slice_bytes]]), np.arange(120, 124, dtype=np.int64)[None],
            np.full((1, 4), 200, np.uint8), U8, 8)
    model[5, 120:124] = 200
    assert [(z.lo, z.hi) for z in dm.lazy] == [(100, 120), (124, 164)]
    assert np.array_equal(dm.data[[1, 3, 5, 7], 120:124], model[[1, 3, 5, 7], 120:124])
    assert np.array_equal(_bytes(dm, 16, 200), model[:16])


def test_a_lazy_region_stays_lazy_for_an_access_elsewhere_and_is_forgotten_when_written_whole() -> None:
    dm = Dm(16, 4096)
    model, region = _region(dm)
    dm.hold(region)
    assert np.array_equal(_bytes(dm, 16, 100), model[:16, :100])   # offsets below the region: not written out
    assert dm.lazy
    dm.overwrite(64, 128, 16)         # a writer of every byte of [64, 192) in every slice
    assert not dm.lazy


def test_regions_on_other_slices_do_not_write_each_other_out() -> None:
    dm = Dm(16, 4096)
    model, region = _region(dm)
    dm.hold(region)
    zeros = np.flatnonzero(region.which[:16] < 0)
    which = np.full(dm.slices, -1, np.int64)
    which[zeros] = 0
    dm.hold(Lazy(100, 164, zeros, which, np.zeros((1, 64), np.uint8)))   # the other slices: zeros
    assert len(dm.lazy) == 2
    dm.hold(Lazy(90, 110, np.array([3], np.int64), np.where(np.arange(16) == 3, 0, -1), np.full((1, 20), 9, np.uint8)))
    model[3, 90:110] = 9   # a new region over part of slice 3: the offsets of the one it meets that it
    # covers are written out first, its others stay held
    assert sorted((z.lo, z.hi) for z in dm.lazy) == [(90, 110), (100, 164), (110, 164)]
    assert np.array_equal(_bytes(dm, 16, 200), model[:16])


def test_the_slices_a_dma_does_not_write_are_held_as_zeros(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lazy, "LAZY_BYTES", 0)
    dm = Dm(16, 4096)
    scatter(dm, (np.arange(16, dtype=np.int64) * dm.slice_bytes)[:, None], np.arange(200, dtype=np.int64)[None],
            np.full((16, 200), 7, np.uint8), U8, 8)       # an earlier tensor's bytes
    written = np.arange(16) % 2 == 0                        # the even slices: the DMA writes them
    dm.zero(16, 100, 64, written, lazy.zero_lazy)
    assert len(dm.lazy) == 1 and np.array_equal(dm.lazy[0].slices, np.flatnonzero(~written))
    model = np.full((16, 200), 7, np.uint8)
    model[~written, 100:164] = 0
    assert np.array_equal(_bytes(dm, 16, 200), model)


def _zeros_between(dm: Dm) -> Lazy:
    """Offsets [100, 164) of the odd slices held as zeros (a tensor's padding slices between
    its live even ones); the store under them holds 7s (what an earlier tensor left)."""
    dm._grow(200)
    dm.data[:, :200] = 7
    odd = np.arange(1, dm.slices, 2, dtype=np.int64)
    which = np.full(dm.slices, -1, np.int64)
    which[odd] = 0
    region = Lazy(100, 164, odd, which, np.zeros((1, 64), np.uint8))
    dm.hold(region)
    return region


def test_a_walk_of_the_live_slices_leaves_the_zeros_held_between_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A DMA command into the even slices (a slice loop of stride 2) reaches the offsets of
    the zeros held for the odd slices between them, but none of their slices: they stay held
    (a drawn bf16 kernel on 1/16 of the slices wrote out 44 MB of zeros a run); a walk that
    reaches one of their slices writes them out first."""
    dm = Dm(16, 4096)
    region = _zeros_between(dm)
    wrote: list = []
    write_out = Dm._write_out
    monkeypatch.setattr(Dm, "_write_out", lambda d, z: wrote.append((z.lo, z.hi)) or write_out(d, z))
    walk = flat_walk(dm, 2 * dm.slice_bytes + 96, [7, 80], [2 * dm.slice_bytes, 1], 1)   # slices 2, 4, .., 14
    assert walk is not None and not wrote and dm.lazy == [region]
    view(walk, [7, 80], np.dtype(np.uint8))[...] = 5
    model = np.full((16, 200), 7, np.uint8)
    model[1::2, 100:164] = 0
    model[2::2, 96:176] = 5
    assert np.array_equal(_bytes(dm, 16, 200), model)       # (the read writes the zeros out)
    dm2 = Dm(16, 4096)
    _zeros_between(dm2)
    assert flat_walk(dm2, 1 * dm2.slice_bytes + 96, [2, 80], [4 * dm2.slice_bytes, 1], 1) is not None  # slices 1, 5
    assert not dm2.lazy and (dm2.data[1::2, 100:164] == 0).all() and (dm2.data[0::2, 100:164] == 7).all()


def test_a_writer_of_part_of_a_lazy_region_cuts_it_without_writing_it_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit's tensor over the first half of a dead tensor's zeros held lazily: the
    window's bytes are cut from the region, not written out into the store first; the rest
    stays held. A region with a slice past the writer's slices is kept whole."""
    dm = Dm(16, 4096)
    _zeros_between(dm)
    monkeypatch.setattr(Dm, "_write_out", lambda d, z: pytest.fail("written out"))
    dm.overwrite(64, 68, 16)            # [64, 132) of all 16 slices: the region's [100, 132)
    assert [(z.lo, z.hi) for z in dm.lazy] == [(132, 164)]
    dm.overwrite(140, 8, 15)            # slice 15 is the region's and is not written: kept whole
    assert [(z.lo, z.hi) for z in dm.lazy] == [(132, 164)]
    monkeypatch.undo()
    dm.data[:, 64:132] = 3              # the writer's bytes
    model = np.full((16, 200), 7, np.uint8)
    model[:, 64:132] = 3
    model[1::2, 132:164] = 0
    assert np.array_equal(_bytes(dm, 16, 200), model)


@pytest.mark.parametrize("trf", ["a", "w"])
def test_the_distinct_rows_of_a_broadcast_are_one_strided_copy(monkeypatch: pytest.MonkeyPatch, trf: str) -> None:
    """The distinct rows' source offsets are the walk of the loops that move the source: the
    rows are read by one walk of the source per command (they were one walk and one copy per
    distinct row: 64 a command on `drawn_s1_1`), and give the oracle's bits."""
    walks: list = []
    walk = lazy.flat_walk
    monkeypatch.setattr(lazy, "flat_walk", lambda *args: walks.append(args[2]) or walk(*args))
    got, cpu, want, held = _run(monkeypatch, trf, through=True)
    copies = [z for z in held if z.rows.any()]           # (the others: zeros held for padding slices)
    assert copies and any(z.rows.shape[0] > 1 for z in copies)
    assert len(walks) == len(copies)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("extra", [0, 1])
def test_a_sparse_feed_places_each_stored_rows_bytes_a_row_at_a_time_or_gathered(extra: int) -> None:
    """`gather_groups` on a lazy broadcast, sparse: every stored row of each group (its slices'
    first row of each distinct source row) holds that source row, copied one row at a time
    up to `_ROW_BY_ROW` stored rows and gathered past it; the other rows are not written."""
    from visa.interp.fast import lazy
    rng = np.random.default_rng(21)
    n_rows, n_src = 2 * (lazy._ROW_BY_ROW + extra), lazy._ROW_BY_ROW + extra
    which = np.concatenate([np.arange(n_src), rng.integers(0, n_src, n_rows - n_src)])   # every source row used
    source = rng.integers(0, 1 << 16, (n_src, 3, 5)).astype(np.uint16)
    half = n_rows // 2                         # two groups: rows [0, half) and [half, n_rows)
    groups = [((0, 0), np.arange(half), np.arange(half), True), ((0, 1), np.arange(half, n_rows), np.arange(half), True)]
    views = [(source, which[:half]), (source, which[half:])]
    helds = [at + _first_of_each(which[at:at + half]) for at in (0, half)]   # each row's first equal row
    got = np.full((n_rows, 3, 5), 0xABCD, np.uint16)
    lazy.gather_groups(got, groups, views, helds, True)
    want = np.full_like(got, 0xABCD)
    for h in np.concatenate(helds):
        want[h] = source[which[h]]
    assert np.array_equal(got, want)


def _first_of_each(which: np.ndarray) -> np.ndarray:
    """For each entry of `which`, the index of the first entry equal to it."""
    return np.array([int(np.flatnonzero(which == v)[0]) for v in which])


def test_a_region_cut_by_a_new_tensor_keeps_its_other_bytes_as_views_and_reads_them() -> None:
    """A tensor placed over the middle of a lazy region (`Dm.overwrite`) leaves the bytes
    before and after it held as views of the region's rows (not copied), and every read of
    them through `lazy_view` (u8 and u16, strided) gives the region's bytes there."""
    dm = Dm(16, 4096)
    model, region = _region(dm)
    dm.hold(region)
    dm.overwrite(120, 8, 16)          # [120, 128) of every slice written next
    assert [(z.lo, z.hi) for z in dm.lazy] == [(100, 120), (128, 164)]
    assert all(np.shares_memory(z.rows, region.rows) for z in dm.lazy)
    slices = np.array([1, 3, 7], np.int64)
    for lo, n, step, dtype in ((100, 10, 2, "<u2"), (130, 5, 6, "<u2"), (128, 36, 1, "u1"), (101, 19, 1, "u1")):
        width = np.dtype(dtype).itemsize
        rows, which = dm.lazy_view(lo, lo + (n - 1) * step + width, slices, [n], [step], np.dtype(dtype))
        want = np.stack([model[s, lo + k * step:lo + k * step + width].view(dtype)[0] for s in slices
                         for k in range(n)]).reshape(len(slices), n)
        assert np.array_equal(rows[which], want)
