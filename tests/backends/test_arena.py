"""The run-scoped scratch of the cpu backend (`backends.cpu.arena`) is invisible: results
are fresh arrays that a later run never overwrites, concurrent runs do not share
buffers, and row classes recorded for a buffer do not outlive its run."""

from __future__ import annotations

import mmap
import threading

import numpy as np

from backends.cpu import CpuBackend, CpuOptions, arena, contract_int, layout, moves, row_classes
from benchmarks.drawn_kernels import pinned
from ir.dtypes import f32
from ir.mapping import m
from ir.ops import ToDm
from ir.types import DmType
from tests.kernel_files import example

BIG = (arena.MIN_BYTES // 4, 2)  # 2 x MIN_BYTES of int32


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_buffers_of_one_run_are_distinct_and_the_next_run_reuses_them():
    scratch = arena.Arena()
    with arena.scope(scratch):
        first, second = arena.empty(BIG, np.int32), arena.zeros(BIG, np.int32)
        assert not np.shares_memory(first, second)
        assert not second.any()
        seen = {_address(first), _address(second)}
        first[...] = 7
    with arena.scope(scratch):
        again = arena.zeros(BIG, np.int32)
        assert _address(again) in seen
        assert not again.any()  # zeros really zeroes reused memory
    with arena.scope(scratch):
        pass
    assert scratch.free == {}  # buffers a run did not ask for are let go


def test_small_buffers_and_calls_outside_a_scope_are_plain_numpy():
    scratch = arena.Arena()
    with arena.scope(scratch):
        small = arena.empty((4, 4), np.int32)
    assert small.base is None and scratch.free == {}
    outside = arena.empty(BIG, np.int32)
    assert outside.base is None


def test_row_classes_do_not_outlive_the_run():
    op = next(o for o in example("gemm_i8_kernel").trace("rngd").kernel.ops if isinstance(o, ToDm))
    src = np.ones(layout.shape_of(op.src.type), layout.storage_dtype(op.src.type.dtype))
    n_rows = layout.n_rows(op.result.type)
    scratch = arena.Arena()
    with arena.scope(scratch):
        out = moves.move_global(src, op.src.type, op.result.type)
        assert out.base is not None  # from the arena
        assert row_classes.classes_of(out.reshape(n_rows, -1)) is not None
        address = _address(out)
    with arena.scope(scratch):
        reused = arena.empty(out.shape, out.dtype)
        assert _address(reused) == address
        assert row_classes.classes_of(reused.reshape(n_rows, -1)) is None


def _gemm_inputs(seed):
    rng = np.random.default_rng(seed)
    return (rng.integers(-128, 128, (512, 128), dtype=np.int8),
            rng.integers(-128, 128, (512, 128), dtype=np.int8))


def _want(a, w):
    return (a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32)


def test_a_later_run_never_overwrites_an_earlier_result():
    backend, kernel = CpuBackend(), example("gemm_i8_kernel")
    a1, w1 = _gemm_inputs(1)
    first = backend.run(kernel, (a1, w1))
    kept = first.copy()
    a2, w2 = _gemm_inputs(2)
    second = backend.run(kernel, (a2, w2))
    assert np.array_equal(first, kept) and np.array_equal(first, _want(a1, w1))
    assert np.array_equal(second, _want(a2, w2))
    assert not np.shares_memory(first, second)
    assert backend._arenas and backend._arenas[0].free  # the scratch was kept and reused


def test_concurrent_runs_get_their_own_scratch():
    backend, kernel = CpuBackend(), example("gemm_i8_kernel")
    inputs = [_gemm_inputs(10 + k) for k in range(4)]
    backend.run(kernel, inputs[0])  # traced once first: tracing is not what this test is about
    got: dict[int, list[np.ndarray]] = {k: [] for k in range(4)}
    start = threading.Barrier(4)

    errors: list[BaseException] = []

    def work(k):
        try:
            start.wait()
            for _ in range(3):
                got[k].append(backend.run(kernel, inputs[k]))
        except BaseException as e:  # noqa: BLE001 -- reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k, (a, w) in enumerate(inputs):
        assert len(got[k]) == 3
        for result in got[k]:
            assert np.array_equal(result, _want(a, w))


def test_a_buffer_given_back_is_handed_out_again_in_the_same_run():
    scratch = arena.Arena()
    with arena.scope(scratch):
        first = arena.empty(BIG, np.int32)
        address = _address(first)
        assert arena.give_back(first)
        again = arena.zeros(BIG, np.int32)
        assert _address(again) == address and not again.any()
        assert not arena.give_back(np.zeros(BIG, np.int32))  # not the arena's: refused


def test_a_buffer_given_back_in_a_run_is_kept_for_the_next_run():
    """A buffer the run gave back (its value dead) and did not take again is still the
    arena's at the end of the run: the next run gets the same memory (no page faults)."""
    scratch = arena.Arena()
    with arena.scope(scratch):
        first = arena.empty(BIG, np.int32)
        address = _address(first)
        assert arena.give_back(first)
    with arena.scope(scratch):
        assert _address(arena.empty(BIG, np.int32)) == address


def test_a_noted_buffer_is_found_again_only_while_its_note_holds():
    """`empty_noted` prefers a free buffer its last maker left with the same note; a
    buffer handed out without that note (its maker may write anything) loses it."""
    scratch = arena.Arena()
    with arena.scope(scratch):
        first, kept = arena.empty_noted(BIG, np.int32, "zeros at the end")
        address = _address(first)
        assert not kept
    with arena.scope(scratch):
        again, kept = arena.empty_noted(BIG, np.int32, "zeros at the end")
        assert kept and _address(again) == address
    with arena.scope(scratch):
        assert not arena.empty_noted(BIG, np.int32, "another promise")[1]
    with arena.scope(scratch):
        other = arena.empty(BIG, np.int32)
        assert _address(other) == address
    with arena.scope(scratch):
        assert not arena.empty_noted(BIG, np.int32, "zeros at the end")[1]


def test_a_buffer_handed_over_to_be_written_in_place_loses_its_note():
    """A noted buffer the executor hands over to a handler that writes it in place
    (`forget_note`, backends/cpu/executor.py `_owned`) keeps no promise for the next run."""
    scratch = arena.Arena()
    with arena.scope(scratch):
        first, _ = arena.empty_noted(BIG, np.int32, "zeros at the end")
    with arena.scope(scratch):
        again, kept = arena.empty_noted(BIG, np.int32, "zeros at the end")
        assert kept
        arena.forget_note(again.base)
    with arena.scope(scratch):
        third, kept = arena.empty_noted(BIG, np.int32, "zeros at the end")
        assert _address(third) == _address(first) and not kept


def test_a_padded_move_zeroes_its_padding_again_after_another_maker_wrote_it():
    """A strided move whose rows are one run of cells keeps its buffer's padding from the
    run before; when another value took that memory in between and wrote its padding
    cells, the move zeroes them again."""
    from backends.cpu import moves_strided

    n = arena.MIN_BYTES // 2  # int32 cells of a row: the buffer is 2 x MIN_BYTES
    rows = np.arange(n // 2, dtype=np.int32).reshape(1, -1)
    form = moves_strided.StridedForm((n // 2,), (1,), (4,), 0, 0, False)
    scratch = arena.Arena()
    want = np.concatenate([rows[0], np.zeros(n - n // 2, np.int32)])
    for writer in (False, True, False):
        with arena.scope(scratch):
            if writer:
                arena.empty((1, n), np.int32).fill(7)  # another maker's value, padding cells included
            else:
                out = moves_strided.apply_form(rows, form, n, None)
                assert np.array_equal(out[0], want)


def test_a_move_onto_a_sparse_grid_keeps_its_zeros_from_the_run_before(monkeypatch):
    """A strided move writing every other cell of a row (a packet padded to twice its cells)
    zeroes its buffer on its first run only: the next run finds the buffer its zeros were
    left in (`empty_noted`) and writes the grid alone; when another value took that memory
    in between and wrote it, the move zeroes it again. Every run equals numpy's."""
    from backends.cpu import moves_strided

    n = arena.MIN_BYTES // 2  # int32 cells of a row: the buffer is 2 x MIN_BYTES
    rows = np.arange(1, n // 2 + 1, dtype=np.int32).reshape(1, -1)
    form = moves_strided.StridedForm((n // 2,), (2,), (4,), 0, 0, False)  # every other cell
    want = np.zeros(n, np.int32)
    want[::2] = rows[0]
    kept = _noted_over_runs(monkeypatch, lambda: moves_strided.apply_form(rows, form, n, None)[0], want)
    assert kept == [False, True, False]


def test_a_full_buffer_of_uneven_live_rows_keeps_its_zero_rows_from_the_run_before(monkeypatch):
    """`layout.from_rows` of a type whose live rows are not one evenly spaced set (12 of every
    16 slices) zeroes its padding rows on its first run only; every run, another maker's
    writes in between included, gives the live rows in place and zero elsewhere."""
    ax = {"M": 64, "N": 12}
    t = DmType(f32, m("1"), m("1 # 2"), m("(M / 16, N # 16)", axes=ax), m("M % 16", axes=ax))
    live = layout.live_rows(t)
    assert len(live) == 48 and layout.even_rows(t) is None
    tail = arena.MIN_BYTES // (4 * 16)  # cells a row: the buffer is 2 x MIN_BYTES
    values = np.arange(1, len(live) * tail + 1, dtype=np.float32).reshape(len(live), tail)
    want = np.zeros((layout.n_rows(t), tail), np.float32)
    want[live] = values
    kept = _noted_over_runs(monkeypatch, lambda: layout.from_rows(values, t).reshape(want.shape), want)
    assert kept == [False, True, False]


def _noted_over_runs(monkeypatch, run, want: np.ndarray) -> list[bool]:
    """Four runs of `run` in one arena, the third replaced by another maker writing 7s over a
    buffer of `want`'s size (the zeros a note kept); each other run must give `want`. What
    each `empty_noted` call found (its note kept or not), in order."""
    kept, noted = [], arena.empty_noted

    def spy(*args):
        found = noted(*args)
        kept.append(found[1])
        return found

    monkeypatch.setattr(arena, "empty_noted", spy)
    scratch = arena.Arena()
    for writer in (False, False, True, False):
        with arena.scope(scratch):
            if writer:
                arena.empty(want.shape, want.dtype).fill(7)  # another maker's value over the zeros
            else:
                assert np.array_equal(run(), want)
    return kept


def test_at_most_keep_bytes_survive_a_run(monkeypatch):
    monkeypatch.setattr(arena, "KEEP_BYTES", 3 * arena.MIN_BYTES)
    scratch = arena.Arena()
    with arena.scope(scratch):
        for _ in range(3):
            arena.empty(BIG, np.int32)  # 2 x MIN_BYTES each
    assert sum(r.nbytes for pool in scratch.free.values() for r in pool) == 2 * arena.MIN_BYTES


def test_a_tiled_kernel_reuses_its_scratch_within_a_run():
    """16 tiles of examples/gemm_tiled.py-like work: the buffers a run allocates afresh stay
    those of about one tile, not one set per tile (the rest are given back and reused): on
    the dense contraction path, whose stages make whole buffers. On the fast path the
    float contraction's tail keeps its live rows only (tests/backends/test_contract_tail.py):
    the only buffers of a tile's size are the BLAS path's widened operand and the cells its
    take places, taken afresh by the first tile and given back for the next
    (backends/cpu/contract_blas.py)."""
    kernel = example("gemm_tiled")
    rng = np.random.default_rng(4)
    a = rng.integers(-8, 8, (1024, 128)).astype(np.float32)
    w = rng.integers(-8, 8, (1024, 128)).astype(np.float32)
    import ml_dtypes
    args = (a.astype(ml_dtypes.bfloat16), w.astype(ml_dtypes.bfloat16))
    inner = arena.Arena.take
    for options, most in ((CpuOptions(fast_contract=False), None), (CpuOptions(), 2)):
        out = np.zeros((1024, 1024), np.float32)
        fresh = []

        def take(self, shape, dtype, note=None):
            nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
            fresh.append(not self.free.get(nbytes))
            return inner(self, shape, dtype, note)

        arena.Arena.take = take
        try:
            CpuBackend(options).run(kernel, (*args, out))
        finally:
            arena.Arena.take = inner
        np.testing.assert_array_equal(out, a @ w.T)
        if most is None:
            assert fresh and sum(fresh) < len(fresh) / 2, (sum(fresh), len(fresh))
        else:
            assert sum(fresh) <= most, fresh

def test_a_request_no_free_buffer_fits_exactly_takes_one_up_to_twice_its_size():
    """A run's scratch given back is taken again by a request of another size it can hold
    (up to twice as large): a first run's memory is the scratch it holds at once, not every
    size it asked for (issue 61: the transposed stream's buffer held the products' place).
    The next run takes the same buffers again; a note's request, and one that would waste
    more than half a buffer, make a new one."""
    scratch = arena.Arena()
    big, fits, small = (1 << 18, 5), (1 << 18, 4), (1 << 17, 3)   # int32: 5, 4 and 1.5 MiB
    with arena.scope(scratch):
        first = arena.empty(big, np.int32)
        where = _address(first)
        assert arena.give_back(first)
        assert _address(arena.empty(small, np.int32)) != where   # 1.5 of 5 MiB: a new buffer
        taken = arena.empty(fits, np.int32)
        assert _address(taken) == where and taken.shape == fits
        taken[...] = 3
        assert arena.give_back(taken)
        noted, kept = arena.empty_noted(fits, np.int32, "a note")
        assert _address(noted) != where and not kept
    with arena.scope(scratch):
        assert _address(arena.empty(big, np.int32)) == where        # kept for the next run


def test_make_room_gives_up_the_pages_of_this_runs_idle_buffers():
    """Before a run first writes memory not its own (a tile written into the caller's result),
    the free buffers it allocated itself give up their pages (issue 61, first-run memory):
    read again they hold zero pages, which only the system's dropping them explains (they
    were filled with 7); a buffer still handed out, a noted one, and the arena's own memory as
    destination are left alone."""
    scratch = arena.Arena()
    foreign = np.empty(BIG, np.int32)
    with arena.scope(scratch):
        idle, held = arena.empty(BIG, np.int32), arena.empty(BIG, np.int32)
        noted, _ = arena.empty_noted((BIG[0], 3), np.int32, ("kept", 1))
        idle[...], held[...], noted[...] = 7, 7, 7
        assert arena.give_back(idle) and arena.give_back(noted)
        assert arena.make_room(held, idle.nbytes) == 0  # the arena's own buffer: resident already
        assert (idle == 7).all()
        assert arena.make_room(foreign, idle.nbytes) >= idle.nbytes
        zero = np.count_nonzero(idle.view(np.uint8) == 0)  # its whole pages were dropped: zero on the next
        assert zero >= idle.nbytes - 2 * mmap.PAGESIZE    # read (the partial pages at its ends are kept)
        assert (held == 7).all() and (noted == 7).all()
        assert arena.make_room(foreign, idle.nbytes) == 0  # dropped once only
        again = arena.empty(BIG, np.int32)  # the dropped buffer is handed out again, whole
        again[...] = 3
        assert (again == 3).all()


def test_make_room_keeps_the_buffers_an_earlier_run_left():
    """A steady run drops nothing: the buffers it takes from the pool stay resident for it."""
    scratch = arena.Arena()
    with arena.scope(scratch):
        arena.empty(BIG, np.int32)
    foreign = np.empty(BIG, np.int32)
    with arena.scope(scratch):
        kept = arena.empty(BIG, np.int32)
        kept[...] = 7
        assert arena.give_back(kept)
        assert arena.make_room(foreign, kept.nbytes) == 0
        assert (kept == 7).all()
    assert arena.make_room(foreign, 1 << 20) == 0  # outside a run


def test_commit_trim_writes_into_the_runs_free_scratch():
    """A large commit_trim (`moves.trim`) takes a buffer the run gave back (resident
    already) instead of fresh memory beside it (issue 61: drawn_s1_3's first run held 1.1
    MiB more at its peak), and keeps the leading cells of every packet (numpy's slice)."""
    packets = np.arange(arena.MIN_BYTES // 2, dtype=np.int32).reshape(-1, 64)  # 2 x MIN_BYTES
    scratch = arena.Arena()
    with arena.scope(scratch):
        idle = arena.empty(BIG, np.int32)
        raw = idle.base
        assert arena.give_back(idle)
        kept = moves.trim(packets, 48)  # 1.5 x MIN_BYTES: the first bytes of the idle buffer
        assert arena.memory_owner(kept) is raw
        np.testing.assert_array_equal(kept, packets[:, :48])


def test_an_integer_contractions_products_are_scratch_the_next_run_takes_again(monkeypatch):
    """The folded matmul of an i8 contraction writes its f32 products (1 MiB here) into the
    run's arena and gives them back once cast (issue 61, first-run memory: drawn_s1_4's
    commit trim took fresh pages beside them), so the backend's next run takes the same
    memory again; the result is numpy's, exactly. (The commit of this kernel keeps every
    cell of its packets and so copies nothing: `moves.trim` writing into free scratch is
    test_commit_trim_writes_into_the_runs_free_scratch.)"""
    d = pinned("int_trim", "out[n,m] = a[m,k] * w[k,n]", "i8:i32", {"k": 64, "m": 512, "n": 512},
               {"placement": "4x16 of 256x32, on 1/4 of the slices", "trf": "w", "packet": 64}, "tiled",
               transpose="device")
    made: list[np.ndarray] = []
    real = contract_int._folded
    monkeypatch.setattr(contract_int, "_folded", lambda *a, **kw: made.append(real(*a, **kw)) or made[-1])
    arrays = d.inputs(np.random.default_rng(3))
    want = d.oracle(*arrays)
    backend = CpuBackend(CpuOptions(threads=1))
    for _ in range(2):
        arrays[-1][...] = 0
        backend.run(d.kernel, tuple(arrays))
        np.testing.assert_array_equal(arrays[-1], want)
    owners = [arena.memory_owner(y) for y in made if y.nbytes >= arena.MIN_BYTES]
    assert len(owners) == 2 and owners[0] is owners[1]
