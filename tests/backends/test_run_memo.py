"""Results kept within a run from a buffer's unchanged contents (backends/cpu/run_memo.py):
a tiled bf16 kernel widens its stream once for all its contractions, and a kept result is
never used once the memory it was computed from was handed out again or written in place."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from backends.cpu import CpuBackend, CpuOptions, arena, contract_blas, contract_fast, executor, run_memo
from benchmarks.drawn_kernels import pinned

BIG = (1 << 18,)  # int32: 1 MiB, an arena buffer

# issue 61's drawn_s101_0 at a small k: `a` stored k first, turned on the device, streamed to
# three column tiles of `w` (three contractions reading one stream)
TILED = pinned("memo_tiled", "out[n,m] = a[k,m] * w[n,k]", "bf16:f32", {"k": 32, "m": 512, "n": 384},
               dict(placement="1x64 of 128x8, on 1/4 of the slices", trf="w", packet=32, order="ji",
                    reuse="outer", pieces=1, pair=False), "gemm", transpose="device")


def _counted(monkeypatch, module, name: str) -> list:
    calls: list = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: calls.append(a) or real(*a, **k))
    return calls


def test_the_stream_is_widened_and_checked_once_for_its_three_contractions(monkeypatch) -> None:
    contractions = _counted(monkeypatch, contract_blas, "contract")
    widened = _counted(monkeypatch, contract_blas, "_widened")
    compared = _counted(monkeypatch, contract_fast, "_compared")
    arrays = TILED.inputs(np.random.default_rng(3))
    want = TILED.oracle(*arrays[:-1], arrays[-1])
    backend = CpuBackend(CpuOptions(threads=1, blas_threads=1))
    for _ in range(2):  # the second run finds nothing of the first's: the memo ends with its run
        del contractions[:], widened[:], compared[:]
        got = [a.copy() for a in arrays]
        backend.run(TILED.kernel, tuple(got))
        np.testing.assert_array_equal(got[-1].view(np.uint32), np.asarray(want, np.float32).view(np.uint32))
        streams = [c[0] for c in contractions]  # (stored rows, classes) of `a`
        assert len(streams) == 3
        # the stream's stored rows are one memory for the three; each `w` tile its own
        assert len({arena.memory_owner(s[0]).ctypes.data for s in streams}) == 1
        stream_gather = contractions[0][2].a
        assert sum(1 for c in widened if c[1] is stream_gather) == 1  # was 3
        assert len(widened) == 4  # the stream once, each of the three `w` tiles
        stream_compares = [c for c in compared if c[0].lazy is not None and c[1] is stream_gather]
        assert len(stream_compares) <= 1


def test_a_kept_result_is_found_for_the_same_view_and_key_only() -> None:
    with arena.scope(arena.Arena()):
        buf = arena.empty(BIG, np.int32)
        buf[:] = 7
        assert run_memo.put("k", buf[8:], ("key",), "found")
        assert run_memo.get("k", buf[8:], ("key",)) == "found"  # a new view object of the same cells
        assert run_memo.get("k", buf[8:], ("other",)) is None
        assert run_memo.get("k", buf[16:], ("key",)) is None
        assert run_memo.get("k", buf[8:].view(np.uint32), ("key",)) is None
        assert run_memo.get("other kind", buf[8:], ("key",)) is None


def test_a_recycled_arena_buffer_drops_what_was_kept_from_it() -> None:
    with arena.scope(arena.Arena()):
        buf = arena.empty(BIG, np.int32)
        run_memo.put("k", buf, "key", "found")
        address = buf.ctypes.data
        assert arena.give_back(buf)
        again = arena.empty(BIG, np.int32)  # the same memory, handed out to a new maker
        assert again.ctypes.data == address
        assert run_memo.get("k", again, "key") is None


def test_a_buffer_written_in_place_drops_what_was_kept_from_it() -> None:
    with arena.scope(arena.Arena()):
        small = np.arange(64, dtype=np.int32)  # not an arena buffer: its own memory
        run_memo.put("k", small[4:], "key", "found")
        assert run_memo.get("k", small[4:], "key") == "found"
        arena.written(small[:8])  # the executor hands a view of it over (`_owned`)
        assert run_memo.get("k", small[4:], "key") is None


def test_one_entry_per_kind_and_the_one_replaced_is_dropped() -> None:
    dropped = []
    with arena.scope(arena.Arena()):
        a, b = np.zeros(8), np.ones(8)
        run_memo.put("k", a, "key", "first", dropped.append)
        run_memo.put("k", b, "key", "second", dropped.append)
        assert dropped == ["first"]
        assert run_memo.get("k", a, "key") is None and run_memo.get("k", b, "key") == "second"


def test_nothing_is_kept_outside_a_run() -> None:
    buf = np.zeros(8)
    assert not run_memo.put("k", buf, "key", "found")
    assert run_memo.get("k", buf, "key") is None


def test_products_taken_in_order_are_the_result_with_plus_zero_added_in_place(monkeypatch) -> None:
    """A matmul whose products are the result cells in order (`blas_route` runs reading
    every cell once, in order) gives them as the result: no second buffer, no copy (it failed
    so before); the bits are the oracle's, zero sums of -0 products +0 as on the chip."""
    made, placed = [], []
    matmul, contract = contract_blas._matmul, contract_blas.contract
    monkeypatch.setattr(contract_blas, "_matmul", lambda *a: made.append(matmul(*a)) or made[-1])
    monkeypatch.setattr(contract_blas, "contract", lambda *a: placed.append(contract(*a)) or placed[-1])
    arrays = TILED.inputs(np.random.default_rng(4))
    arrays[0].view(np.uint16)[:, :5] = 0x8000  # -0 operands: products and sums of -0 in five result columns
    arrays[1].view(np.uint16)[:] &= 0x7FFF  # w >= 0: those sums add -0 products only
    want = np.asarray(TILED.oracle(*arrays[:-1], arrays[-1]), np.float32) + np.float32(0)
    got = [a.copy() for a in arrays]
    CpuBackend(CpuOptions(threads=1, blas_threads=1)).run(TILED.kernel, tuple(got))
    np.testing.assert_array_equal(got[-1].view(np.uint32), want.view(np.uint32))
    assert (got[-1][:, :5].view(np.uint32) == 0).all()  # +0
    assert len(placed) == len(made) == 3 and all(np.shares_memory(p, m) for p, m in zip(placed, made))


def test_the_executor_tells_the_arena_before_a_buffer_is_written_in_place(monkeypatch) -> None:
    """Every buffer the executor hands over to be written in place (a tile written into its
    destination, `executor._owned`) is reported to `arena.written` first."""
    told, owned = [], []
    written, decide = arena.written, executor._owned
    monkeypatch.setattr(arena, "written", lambda buf: told.append(buf) or written(buf))
    monkeypatch.setattr(executor, "_owned", lambda *a, **k: owned.append(decide(*a, **k)) or owned[-1])
    arrays = TILED.inputs(np.random.default_rng(5))
    CpuBackend(CpuOptions(threads=1)).run(TILED.kernel, tuple(arrays))
    assert sum(owned) == len(told) >= 2  # the second and third tiles at least write in place


def test_a_large_widened_operand_is_kept_and_its_memory_taken_by_the_next_widening(monkeypatch) -> None:
    # a stationary operand of 1 MiB widened (arena scratch): two tiles reading it widen it once
    # (drawn_s101_2, drawn_s103_1/2 widened theirs per tile); another operand widened on the same
    # side gives the kept one back first and takes its memory (no more scratch at once than before)
    from backends.cpu.gathers import Gather
    widened = _counted(monkeypatch, contract_blas, "_widened")
    gather = Gather((0, 1, 2, 3), (64, 1, 1024, 1), (64, 1, 1024, 1), np.zeros(0, np.int64), 0, (1024, 0, 1, 0))
    rng = np.random.default_rng(4)
    with arena.scope(arena.Arena()):
        raw = arena.empty((4, 64 * 1024), np.uint16)
        raw[:] = rng.integers(0, 1 << 16, raw.shape, dtype=np.uint16)
        first = contract_blas._widened_kept("w", raw, gather, None)
        again = contract_blas._widened_kept("w", raw, gather, None)
        assert len(widened) == 1 and again[0] is first[0] and first[2] and first[0].nbytes == arena.MIN_BYTES
        want = (raw.astype(np.uint32) << 16).reshape(4, 1, 64, 1024)  # each pattern widened: the oracle
        assert np.array_equal(first[0].view(np.uint32), want)
        other = arena.empty((4, 64 * 1024), np.uint16)
        other[:] = 3
        address = first[0].ctypes.data
        third = contract_blas._widened_kept("w", other, gather, None)
        assert len(widened) == 2 and third[0].ctypes.data == address
        assert np.array_equal(third[0].view(np.uint32), np.full((4, 1, 64, 1024), 3 << 16, np.uint32))


def _memo_sizes(monkeypatch) -> list[tuple[str, int]]:
    """(op class name, entries in the run's memo when its handler is called) of every op a run executes."""
    seen: list[tuple[str, int]] = []
    find = executor._handler

    def spied(op_cls, found):
        handler = find(op_cls, found)
        if handler is None:
            return handler
        return lambda op, *a, **k: seen.append((type(op).__name__, len(arena.current().memo))) or handler(op, *a, **k)
    monkeypatch.setattr(executor, "_handler", spied)
    return seen


# issue 61's drawn_s1_3 at a smaller n: one contraction, its bf16 result cast, committed and written
ONE = pinned("memo_one", "out[m,n] = a[m,k] * w[k,n]", "bf16:bf16", {"k": 32, "m": 512, "n": 512},
             dict(placement="4x4 of 128x128, on 1/4 of the slices", trf="a", packet=16, pieces=2), "tiled",
             transpose="device")


def test_kept_results_are_dropped_once_no_later_step_contracts(monkeypatch) -> None:
    # issue 61, first-run memory: the widened operands were held to the end of the run (4.4 MiB
    # beside drawn_s1_3's commit and tile write); the steps after the last contraction find none
    seen = _memo_sizes(monkeypatch)
    arrays = ONE.inputs(np.random.default_rng(6))
    want = ONE.oracle(*arrays[:-1], arrays[-1])
    CpuBackend(CpuOptions(threads=1, blas_threads=1)).run(ONE.kernel, tuple(arrays))
    np.testing.assert_array_equal(arrays[-1].view(np.uint16), np.asarray(want, ml_dtypes.bfloat16).view(np.uint16))
    last = max(k for k, (name, _) in enumerate(seen) if name == "ContractTime")
    assert seen[last + 1:] and all(n == 0 for _, n in seen[last + 1:])


def test_a_rolled_loop_keeps_them_for_its_next_iterations(monkeypatch) -> None:
    # the stationary operand's widening, kept while the loop may contract again (its last
    # contraction is not the run's last reader: the loop's end is)
    from tests.loops import kernels as K
    seen = _memo_sizes(monkeypatch)
    widened = _counted(monkeypatch, contract_blas, "_widened")
    rng = np.random.default_rng(7)
    a = rng.integers(-4, 5, (512 * K.T, 128)).astype(ml_dtypes.bfloat16)  # small integers: every sum exact
    w = rng.integers(-4, 5, (512, 128)).astype(ml_dtypes.bfloat16)
    out = np.zeros((512 * K.T, 512), np.float32)
    CpuBackend(CpuOptions(threads=1, blas_threads=1)).run(K.gemm_bf16_rolled, (a, w, out))
    np.testing.assert_array_equal(out, (a.astype(np.float64) @ w.astype(np.float64).T).astype(np.float32))
    at = [k for k, (name, _) in enumerate(seen) if name == "ContractTime"]
    assert len(at) == K.T and all(seen[k][1] > 0 for k in at[1:])  # found by the later iterations
    assert len(widened) == 1 + K.T  # the TRF operand once, each tile of `a`
