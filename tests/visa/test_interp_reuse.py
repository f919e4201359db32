"""What the interpreter reuses across runs: pooled DM stores read zero (an earlier run's bytes
are zeroed where an access reaches them, or left to a writer of every byte), pooled TRF
stores come back zero, scratch arrays are handed to one run at a time, memoised record
plans follow the records' identity."""

from __future__ import annotations

import numpy as np
import pytest

from tests.visa import test_interp_commit_fill as tiled
from tu_ops.target import get_target
from visa.interp.fast.memo import per_record
from visa.interp.fast import pool
from visa.interp.dm import Dm
from visa.interp.memory import Memory
from visa.interp import execute_inout
from visa.interp.strided import flat_walk


@pytest.fixture(autouse=True)
def empty_pool():
    pool._POOL.clear()
    yield
    pool._POOL.clear()


def test_released_dm_store_is_zero_when_reused():
    mem = Memory(get_target("rngd"), dm_reserve=4096)
    dm = mem.dm(0, 0)
    dm.zero(mem.slices, 0, 4096)                   # touch, then write through the store
    dm._grow(4096)                                 # an access of every slice records itself
    dm.data[:, :4096] = 0xAB
    store = dm.data
    mem.release()
    again = Memory(get_target("rngd"), dm_reserve=4096).dm(0, 0)
    assert again.data is store and again.dirty == [(0, 4096)] and again.dirty_rows == mem.slices
    again._grow(4096)                              # an access reaches the bytes: zeroed first
    assert not again.data.any() and not again.dirty


def test_untouched_bytes_are_not_rezeroed_but_touched_ones_are():
    dm = Dm(4, 8192, 8192)
    dm.data[:, 100:200] = 7        # written without the store knowing: zero() past `touched` skips it
    dm.zero(4, 0, 8192)
    assert (dm.data[:, 100:200] == 7).all()
    dm._grow(300)                  # an access records the offsets it touches
    dm.zero(4, 0, 8192)
    assert not dm.data.any()


def test_only_the_slices_touched_are_rezeroed_and_handed_back_zero():
    dm = Dm(4, 8192, 8192)
    dm.data[2:, 100:200] = 7       # slices 2 and 3 written without the store knowing
    dm._grow(300, 2)               # an access of offsets < 300 in slices 0 and 1
    dm.data[:2, 100:200] = 5
    dm.zero(4, 0, 8192)
    assert not dm.data[:2].any() and (dm.data[2:, 100:200] == 7).all()
    dm.data[:2, 0:300] = 9
    dm._grow(300, 2)
    store = dm.data
    dm.release()
    again = Dm(4, 8192, 8192)
    assert again.data is store and (again.dirty_rows, again.dirty) == (2, [(0, 8192)])   # zero() touched them all
    again._grow(100, 4, 50)        # an access of offsets 50 .. 99: only those are zeroed
    assert not again.data[:2, 50:100].any() and (again.data[:2, :50] == 9).all()
    assert again.dirty == [(0, 50), (100, 8192)]


def test_a_walk_records_the_slices_it_touches():
    dm = Dm(8, 4096, 4096)
    assert flat_walk(dm, 2 * 4096 + 16, [3, 4], [4096, 4], 4) is not None  # slices 2 ... 4
    assert (dm.rows, dm.touched) == (5, 16 + 3 * 4 + 4)
    dm.locate(np.array([6 * 4096]), np.arange(4) * 4, 4, "a read", None)   # slice 6
    assert dm.rows == 7


def test_scratch_arrays_are_distinct_within_a_run_and_pooled_after():
    mem = Memory(get_target("rngd"))
    a, b = mem.scratch((64, 1024), np.uint16), mem.scratch((64, 1024), np.uint16)
    assert not np.shares_memory(a, b)
    mem.recycle()
    other = Memory(get_target("rngd"))
    c, d = other.scratch((64, 1024), np.uint16), other.scratch((64, 1024), np.uint16)
    assert {id(c), id(d)} == {id(a), id(b)}
    assert other.scratch((64, 1024), np.uint16) is not c


def test_per_record_follows_identity():
    calls = []

    @per_record
    def plan(record, n):
        calls.append((record, n))
        return np.arange(n)

    r1, r2 = object(), object()
    first = plan(r1, 3)
    assert plan(r1, 3) is first and len(calls) == 1
    assert not first.flags.writeable
    plan(r2, 3)
    plan(r1, 4)
    assert len(calls) == 3


def test_released_trf_is_zero_when_reused():
    mem = Memory(get_target("rngd"))
    mem.trf_rows(0, 1, 8, 3, 2)[:] = 0x5C           # rows 3..4 of every lane of every slice
    store = mem.trf(0, 1)
    assert store.any()
    mem.release()
    again = Memory(get_target("rngd")).trf(1, 0)     # same shape: the pooled store comes back
    assert again is store
    assert not again.any()


def test_a_large_store_touched_in_one_slice_is_pooled_by_the_bytes_it_holds():
    # 256 slices x 512 KiB: the pool's whole budget by its size, but one slice's worth
    # of written pages is all it holds; it must not be dropped (and reallocated, page
    # fault by page fault, every run) because another pooled array is there
    pool.give_back(np.empty(1 << 20, np.uint8))
    shape = (256, 524288)
    dm = Dm(*shape, reserve=shape[1])
    dm._grow(65536, 1)
    dm.data[0, :65536] = 3
    store = dm.data
    dm.release()
    again = Dm(*shape, reserve=shape[1])
    assert again.data is store
    again._grow(65536, 1)
    assert not again.data[0].any()


def test_a_writer_of_every_byte_takes_its_range_unzeroed_only_over_every_dirty_slice():
    dm = Dm(4, 8192, 8192)
    dm._grow(1000)
    dm.data[:, :1000] = 9
    store = dm.data
    dm.release()
    again = Dm(4, 8192, 8192)
    again.overwrite(0, 400, 3)      # three slices of four: not every dirty one, nothing forgotten
    assert again.dirty == [(0, 1000)]
    again.overwrite(0, 400, 4)
    again._grow(1000)
    assert again.data is store and (again.data[:, :400] == 9).all()   # left for the writer
    assert not again.data[:, 400:].any() and not again.dirty
    again.zero(4, 0, 400)           # zero() of every dirty slice: the bytes are zero after it
    assert not again.data.any()


def test_a_pooled_scratch_array_is_a_dirty_store_and_never_a_trf():
    mem = Memory(get_target("rngd"))
    trf_shape = (mem.trf_bytes // mem.row_bytes, mem.slices, mem.row_bytes)
    mem.scratch((4, 8192), np.uint8)[:] = 5
    mem.scratch(trf_shape, np.uint8)[:] = 6
    mem.recycle()
    dm = Dm(4, 8192, 8192)
    assert (dm.data == 5).all() and dm.dirty == [(0, 8192)] and dm.dirty_rows == 4
    dm._grow(8192)
    assert not dm.data.any()
    assert not Memory(get_target("rngd")).trf(0, 0).any()     # not the pooled scratch of its shape


def test_runs_after_runs_give_the_oracle_bits():
    """Each run reuses the stores the one before left (dirty): a GEMM on other inputs, and
    one whose commits leave half of each packet unwritten over an earlier weight tile."""
    kernel, arrays = tiled._gemm_tiled()
    half = tiled._half_commits(kernel)
    rng = np.random.default_rng(3)
    for _ in range(2):
        for k, keep in ((kernel, 8), (half, 4), (kernel, 8)):
            a = rng.integers(-8, 8, arrays[0].shape).astype(np.float32).astype(arrays[0].dtype)
            got = np.asarray(execute_inout(k, [a, arrays[1], arrays[2]])[1][0])
            assert np.array_equal(got, tiled._oracle([a, arrays[1]], keep))


def test_a_load_of_every_slice_takes_its_trf_rows_unzeroed_the_rest_are_zeroed():
    mem = Memory(get_target("rngd"))
    mem.trf_rows(0, 0, 8, 3, 2)[:] = 0x5C
    mem.trf_rows(0, 0, 4, 10, 1)[:] = 0x11
    store = mem.trf(0, 0)
    mem.release()
    again = Memory(get_target("rngd"))
    rows = again.trf_rows(0, 0, 8, 3, 2, every_slice=True)
    assert again.trf(0, 0) is store
    assert (rows == 0x5C).all()                           # left for the load, which writes every byte
    lanes = again.trf_lanes(0, 0, 4)
    assert not lanes[:, 10].any()                         # another run's rows: zeroed
    rest = np.ones(store.shape[0], bool)
    for lane in range(8):
        rest[lane * 256 + 3:lane * 256 + 5] = False
    assert not store[rest].any()
    again.release()
    third = Memory(get_target("rngd"))
    part = third.trf_rows(0, 0, 8, 3, 1)                  # not every slice: everything stale is zeroed
    assert third.trf(0, 0) is store and not part.any() and not store.any()
