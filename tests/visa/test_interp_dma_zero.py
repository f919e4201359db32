"""A DMA that creates a DM tensor zeroes it first, except the slices its commands write
whole (visa/interp/dma.py `_written`, `Dm.zero`): on a placement on a part of the slices
the padded slices are zeroed and the written ones are not zeroed first. Pinned on the
slices `_written` marks (against a numpy walk of the commands), on `Dm.zero` over a store
an earlier run left dirty, and end to end: runs of the same kernel in one process (the
DM stores pooled, dirty) equal an independent numpy oracle bit for bit, with the speed
machinery on and off."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from npu_opt.compile_api import compile_kernel
from synth import contraction
from synth.space import build
from tu_ops.target import get_target
from visa import parse_visa
from visa.interp import dma, execute_inout
from visa.interp.dm import Dm

SLICE = get_target("rngd").constants.DM_SLICE_BYTES


def _artifact(placement: str):
    spec = contraction("out[m,n] = a[m,k] * w[n,k]", dtype="bf16:f32", sizes=dict(m=128, n=128, k=64), name="t")
    return spec, parse_visa(compile_kernel(build(spec, dict(placement=placement, trf="w", packet=16), "<zero>")).text)


def _whole_by_numpy(op, base: int, size: int) -> dict[tuple[int, int], np.ndarray]:
    """The oracle: per (chip, cluster), the slices each of whose window bytes some command
    writes exactly once (and no command writes outside the windows)."""
    out: dict[tuple[int, int], np.ndarray] = {}
    for part in {(c.part.chip, c.part.cluster) for c in op.commands}:
        addr = np.concatenate([dma.walk(c.dst_base, [e.size for e in c.entries], [e.dst_stride for e in c.entries])
                               .ravel() for c in op.commands if (c.part.chip, c.part.cluster) == part])
        sl, off = np.divmod(addr, SLICE)
        assert ((off >= base) & (off < base + size)).all()
        counts = np.zeros((op.output_type.slice.size, size), np.int64)
        np.add.at(counts, (sl, off - base), 1)
        out[part] = (counts == 1).all(axis=1)
    return out


def test_the_slices_a_dma_writes_whole_are_the_walks():
    _, art = _artifact("16x8 of 8x16, on 1/2 of the slices")
    ops = [s for s in art.kernel.steps if getattr(s, "MNEMONIC", "").startswith("dma") and s.output_type.kind == "dm"]
    assert ops
    for op in ops:
        size = dma.tensor_bytes(op.output_type, get_target("rngd"))
        base = op.commands[0].dst_base % SLICE
        got = dma._written(op, base, size, SLICE)
        want = _whole_by_numpy(op, base, size)
        assert got is not None and set(got) == set(want)
        for part in want:
            assert np.array_equal(got[part], want[part])
            assert 0 < want[part].sum() < want[part].size       # some slices written whole, the padded ones not


def test_zero_leaves_the_written_slices_and_clears_the_others():
    dm = Dm(8, 64, 64)
    rng = np.random.default_rng(0)
    dm.data[:] = rng.integers(1, 255, dm.data.shape, dtype=np.uint8)
    dm.rows, dm.touched = 8, 64
    before = dm.data.copy()
    written = np.array([True, False] * 4)
    dm.zero(8, 16, 32, written)
    assert (dm.data[~written, 16:48] == 0).all()
    assert np.array_equal(dm.data[written], before[written])                   # the caller writes those
    assert np.array_equal(dm.data[:, :16], before[:, :16]) and np.array_equal(dm.data[:, 48:], before[:, 48:])


@pytest.mark.parametrize("fast", [True, False])
def test_runs_in_one_process_equal_the_oracle(fast: bool):
    spec, art = _artifact("16x8 of 8x16, on 1/2 of the slices")
    for seed in range(3):   # the later runs take the DM stores the earlier ones left dirty (pooled)
        rng = np.random.default_rng(seed)
        host = {"a": rng.integers(-8, 9, (128, 64)), "w": rng.integers(-8, 9, (128, 64))}
        arrays = [host[name].astype(ml_dtypes.bfloat16) for name, _ in spec.operands]
        arrays.append(np.zeros((128, 128), np.float32))
        results, finals = execute_inout(art, arrays, fast=fast)
        want = (host["a"].astype(np.float64) @ host["w"].astype(np.float64).T).astype(np.float32)
        assert np.array_equal(np.asarray((results + finals)[-1]).view(np.uint32), want.view(np.uint32))
