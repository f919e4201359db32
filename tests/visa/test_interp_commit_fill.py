"""A commit that writes every element of its new DM tensor in every slice skips zeroing the
tensor first (issue 29: `drain._fills`, `drain._every_slice`). examples/gemm_tiled.py commits
into DM bytes an earlier weight tile used, so a commit that leaves cells unwritten shows
those old bytes if the zeroing is skipped wrongly: the bits are checked against a numpy GEMM
both for the full commit and for one trimmed to the front half of each packet."""

from __future__ import annotations

import attrs
import numpy as np

from tu_ops.program import TuProgram
from tu_ops.target import get_target
from visa.interp.memory import Memory
from visa.interp import drain, execute_inout
from visa.interp.shortcuts import Held
from tests.visa.test_interp_dma_in_place import tiled_bf16_gemm


def _gemm_tiled():
    art, arrays = tiled_bf16_gemm(5)
    return art.kernel, arrays


def _half_commits(kernel):
    """Every commit keeps the first 4 of its 8 cells per packet (valid_bytes 16)."""
    def trim(op):
        if op.MNEMONIC != "commit":
            return op
        packet = attrs.evolve(op.write.packet[0], size=4)
        return attrs.evolve(op, valid_bytes=16, write_bytes=16, write=attrs.evolve(op.write, packet=(packet,)))
    steps = tuple(attrs.evolve(s, ops=tuple(trim(o) for o in s.ops)) if isinstance(s, TuProgram) else s
                  for s in kernel.steps)
    return attrs.evolve(kernel, steps=steps)


def _commits(kernel):
    return [o for s in kernel.steps if isinstance(s, TuProgram) for o in s.ops if o.MNEMONIC == "commit"]


def _oracle(arrays, keep_cols: int):
    want = (arrays[0].astype(np.float64) @ arrays[1].astype(np.float64).T).astype(np.float32)
    want[:, np.arange(want.shape[1]) % 8 >= keep_cols] = 0
    return want


def test_fills_only_a_write_plan_covering_every_element_once():
    kernel, _ = _gemm_tiled()
    target = get_target("rngd")
    full, half = _commits(kernel)[0], _commits(_half_commits(kernel))[0]
    assert drain._fills(full, target, 128, 8) is True
    assert drain._fills(half, target, 128, 8) is False
    twice = attrs.evolve(full, write=attrs.evolve(full.write, time=(attrs.evolve(full.write.time[0], stride=4),)))
    assert drain._fills(twice, target, 128, 8) is False     # overlapping packets: some elements twice, some never


def test_a_commit_that_fills_its_tensor_gives_the_zeroing_bits(monkeypatch):
    """... and its drain reaches it as a view of the accumulator (visa/interp/fast/lane_view.py):
    no lane is copied first, and the bits are the same."""
    kernel, arrays = _gemm_tiled()
    calls: list[int] = []
    real = drain.Memory.zero_dm
    folds: list[int] = []
    fold = drain.run_lane_fold

    def spy(self, *args):
        calls.append(1)
        return real(self, *args)

    def copies(*args):
        folds.append(1)
        return fold(*args)

    monkeypatch.setattr(drain.Memory, "zero_dm", spy)
    monkeypatch.setattr(drain, "run_lane_fold", copies)
    fast = np.asarray(execute_inout(kernel, arrays)[1][0])
    skipped = not calls
    monkeypatch.setattr(drain, "_fills", lambda *a: False)
    monkeypatch.setattr(drain, "_viewed", lambda *a: None)   # the plain drain: lane by lane
    slow = np.asarray(execute_inout(kernel, arrays)[1][0])
    assert skipped and calls          # the fast run zeroed nothing, the forced one did
    assert folds and len(folds) == len(_commits(kernel))    # only the forced run copied lanes, once a commit
    assert fast.tobytes() == slow.tobytes() and np.array_equal(fast, _oracle(arrays, 8))


def test_a_commit_leaving_cells_unwritten_still_zeroes_them():
    kernel, arrays = _gemm_tiled()
    half = _half_commits(kernel)
    got = np.asarray(execute_inout(half, arrays)[1][0])
    assert np.array_equal(got, _oracle(arrays, 4))   # the other cells: zero, not the weight tile's old bytes


def test_lane_fold_writes_each_cycle_s_lanes_as_the_numpy_transpose():
    """The drain before those commits copies the accumulator lane by lane: cycle `s`, cell `l`
    must be accumulator (lane l, slot s), as numpy's transpose has it (f32 held as its bits)."""
    kernel, _ = _gemm_tiled()
    fold = next(o for s in kernel.steps if isinstance(s, TuProgram) for o in s.ops if o.MNEMONIC == "lane_fold")
    mem = Memory(get_target("rngd"))
    acc = np.random.default_rng(2).standard_normal((5, fold.lanes, fold.cycles, 1)).astype(np.float32)
    got = drain.run_lane_fold(fold, acc, mem)
    want = acc[..., 0].transpose(0, 2, 1).view(np.uint32)
    assert got.dtype == np.uint32 and got.shape == want.shape and np.array_equal(got, want)
    # the view a commit takes instead (`drain._viewed`), and what any other reader gets from it
    ints = np.random.default_rng(3).integers(-2**31, 2**31, acc.shape, dtype=np.int64).astype(np.int32)
    for acc, want in ((acc, want), (ints, ints[..., 0].transpose(0, 2, 1))):
        held = drain._viewed(fold, acc, mem)
        assert isinstance(held, Held) and held.KIND == "strided"
        for got in (held.strided(), held.materialize()):
            assert got.dtype == want.dtype and np.array_equal(got, want)
        assert held.materialize().flags.c_contiguous
