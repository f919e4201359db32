"""A commit whose rows are a grid of slices (a placement on a part of the slices: every
n-th slice) writes through one strided view of the DM, as one on consecutive slices does
(`drain._write_strided` over `rows.slice_grid`), and zeroes first only the slices it does
not write when its plan fills each slice's tensor (`drain._row_slices`). Two runs in one
process (pooled DM stores, dirty from the run before) give the numpy oracle's bits, with
the speed machinery on and off."""

from __future__ import annotations

import numpy as np
import pytest

from npu_opt.compile_api import compile_kernel
from synth import contraction
from synth.space import build, space_of
from visa import parse_visa
from visa.interp import drain, execute_inout


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("placement, dtype", [("8x8 of 32x32, on 1/4 of the slices", "bf16:f32"),
                                              ("64x2 of 8x128, on 1/2 of the slices", "i8:i32")])
def test_a_commit_on_every_nth_slice_writes_a_strided_view(monkeypatch, fast, placement, dtype):
    m, n = (512, 256) if "8x128" in placement else (256, 256)
    spec = contraction("out[m,n] = a[m,k] * w[n,k]", dtype=dtype, sizes=dict(m=m, n=n, k=64), name="commit_grid")
    kernel = build(spec, dict(placement=placement, trf="w", packet=32))
    artifact = parse_visa(compile_kernel(kernel).text)
    space = space_of(spec, run=True)
    zeroed: list[object] = []
    real_zero = drain.Memory.zero_dm

    def refused(*args, **kwargs):
        raise AssertionError("the commit scattered its stream by index")

    def zero_dm(self, parts, slices, base, size, op=None, written=None, lazily=None):
        zeroed.append(written)
        return real_zero(self, parts, slices, base, size, op, written, lazily)

    monkeypatch.setattr(drain, "scatter", refused)
    monkeypatch.setattr(drain.Memory, "zero_dm", zero_dm)
    for seed in (1, 2):
        arrays = list(space.inputs(np.random.default_rng(seed)))
        want = np.asarray(space.oracle(*arrays))
        results, finals = execute_inout(artifact, arrays, fast=fast)
        got = np.asarray((results + finals)[-1])
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    masks = [w for w in zeroed if w is not None]
    assert masks and all(0 < int(m.sum()) < m.size for w in masks for m in w.values())   # the rows' slices only
