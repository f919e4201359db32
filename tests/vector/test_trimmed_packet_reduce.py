"""An intra-slice reduce over a padded time axis, on a 4-way packet trimmed from `A % 2 # 8`
(two live lanes): the record's shape after the trim is `A % 2 # 4`, the form the trace checks
and the Valid Count Generator counts (its normal form, the same cells, made the lowering
crash: an ICE where `check` found nothing). cpu, visa and a numpy sum agree."""

from __future__ import annotations

import numpy as np

import npu_opt
from ir.vector.ways import trim_shape
from npu_opt import (
    Context, DmTensor, HbmTensor, IntraSliceReduceOpI32, TagMode, axes, device, i32, m,
)

axes(A=8, R=10, X=64)
Chip = m("1")


@device(chip=1)
def sum_r(ctx: Context, x: HbmTensor[i32, Chip, m("X, A / 2, R # 16, A % 2")]) -> HbmTensor[i32, Chip, m("X, A")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, m("1 # 2"), m("X, A / 2"), m("R # 16, A % 2")])
    y = (ctx.main.begin(d.view()).fetch(m("R # 16"), m("A % 2")).collect(m("R # 16"), m("A % 2 # 8"))
         .vector_init().vector_intra_slice_tag(TagMode.ZERO)
         .vector_narrow_trim(m("A % 2 # 4"))
         .vector_intra_slice_reduce(m("R"), m("1"), m("A % 2 # 4"), IntraSliceReduceOpI32.ADD_SAT)
         .vector_widen_pad(m("A % 2 # 8")).vector_final()
         .commit_trim(m("A % 2")).commit())
    return y.to_hbm(ctx.tdma)


def test_the_trimmed_reduce_checks_compiles_and_sums():
    assert npu_opt.check(sum_r).diagnostics == ()
    text = npu_opt.compile(sum_r).text
    assert "vcg=" in text  # the padded R is counted
    rng = np.random.default_rng(7)
    x = rng.integers(-1000, 1000, size=(64, 4, 10, 2), dtype=np.int32)
    want = x.astype(np.int64).sum(axis=2).reshape(64, 8).astype(np.int32)  # the padded R rows excluded
    cpu = npu_opt.run(sum_r, x)
    np.testing.assert_array_equal(cpu, want)
    np.testing.assert_array_equal(npu_opt.run(sum_r, x, backend="visa"), cpu)


def test_the_record_shape_after_the_trim_is_the_written_one():
    assert trim_shape(m("R # 16"), m("A % 2 # 8")) == (m("R # 16"), m("A % 2 # 4"))
    assert trim_shape(m("R # 16"), m("A % 2 #{0} 8")) == (m("R # 16"), m("A % 2 #{0} 4"))
