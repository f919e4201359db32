"""A reduce on the merged stream of a paired pass is refused at the user's line with
PAIR-REDUCE-1 (npu-opt's `vector_pair` record has no reduce step), never an internal error;
the same reduce in a pass of its own, after committing the zipped stream, runs."""

from __future__ import annotations

import runpy

import numpy as np

import npu_opt
from visa.interp import execute
from visa.parser import parse_visa

_SRC = '''
from npu_opt import *
axes(X=256, R=10, B=4, I=2)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("X")

@device(chip=1)
def zipped_min(ctx: Context, x: HbmTensor[i32, Chip, m("X, R # 16, B")],
               y: HbmTensor[i32, Chip, m("X, R # 16, B")]) -> HbmTensor[i32, Chip, m("X, B")]:
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("R # 16, B")])
    y = y.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("R # 16, B")])
    s = (ctx.main.begin_interleaved(x.view(), y.view(), m("I")).fetch(m("R # 16, I"), m("B"))
         .collect(m("R # 16, I"), m("B # 8")).vector_init()
         .vector_intra_slice_unzip(m("I"), m("R # 16, 1 # 2"), m("R # 16"))
         .vector_fxp_zip(FxpBinaryOp.ADD_FXP))
    if {split}:
        s = s.vector_final().commit_trim(m("B # 8")).commit()
        s = (ctx.main.begin(s.view()).fetch(m("R # 16"), m("B # 8")).collect(m("R # 16"), m("B # 8"))
             .vector_init().vector_intra_slice_tag(TagMode.ZERO))
    z = (s.vector_narrow_trim(m("B"))
         .vector_intra_slice_reduce(m("R"), m("1"), m("B"), IntraSliceReduceOpI32.MIN)
         .vector_widen_pad(m("B # 8")).vector_final().commit_trim(m("B")).commit())
    return z.to_hbm(ctx.tdma)
'''


def _kernel(tmp_path, split):
    path = tmp_path / "zipped_min.py"
    path.write_text(_SRC.format(split=split))
    return runpy.run_path(str(path))["zipped_min"]


def test_a_reduce_in_the_paired_pass_is_pair_reduce_1(tmp_path):
    (d, *_) = npu_opt.check(_kernel(tmp_path, False)).diagnostics
    assert d.code == "PAIR-REDUCE-1", d.render()
    line = next(i for i, t in enumerate(_SRC.format(split=False).splitlines(), 1) if "intra_slice_reduce" in t)
    assert d.file.endswith("zipped_min.py") and d.line == line


def test_the_reduce_in_a_pass_of_its_own_runs(tmp_path):
    kernel = _kernel(tmp_path, True)
    rng = np.random.default_rng(3)
    x, y = (rng.integers(-1000, 1000, (256, 10, 4), dtype=np.int32) for _ in range(2))
    cpu = np.asarray(npu_opt.run(kernel, x, y))
    np.testing.assert_array_equal(cpu, (x + y).min(axis=1))
    np.testing.assert_array_equal(np.asarray(execute(parse_visa(npu_opt.compile(kernel).text), [x, y])), cpu)
