"""A refusal inside an unrolled Python loop is reported once per source location, as the
reference (which compiles the loop body once) reports it: every iteration traces the same
call, so the same code, message and location N times told the user nothing new. Refusals
that differ (another line, another message) all stay."""

from __future__ import annotations

import npu_opt
from npu_opt import *

axes(LRa=4, LRw=8)
_CL, _SL = m("1 # 2"), m("1 # 256")
_DM = DmTensor[i32, m("1"), _CL, _SL, m("LRa, LRw")]
_HBM = HbmTensor[i32, m("1"), m("LRa, LRw")]


@device(chip=1)
def _bad_collect_in_a_loop(ctx: Context, x: _HBM) -> _HBM:
    d = x.to_dm(ctx.tdma, _DM)
    out = _DM.new()
    for a in range(4):
        (ctx.main.begin(d.view().tile(m("LRa"), 1, m("1 # 4, LRw"), a))
         .fetch(m("1"), m("LRw"))
         .collect(m("1"), m("LRw # 16"))          # two flits of i32: refused in every iteration
         .commit_trim(m("LRw"))
         .commit_view(out.view_mut().tile(m("LRa"), 1, m("1 #{!} 4, LRw"), a)))
    return out.to_hbm(ctx.tdma)


@device(chip=1, pe=1)
def _runtime_if_in_a_loop(ctx: Context, x: HbmTensor[i32, m("1"), m("64, LRa, LRw")],
                          n: HbmScalar[usize]) -> HbmTensor[i32, m("1"), m("64, LRa, LRw")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1"), m("64"), m("LRa, LRw")])
    n = n.to_spm(ctx.tdma)
    for a in range(4):
        if a >= n:                                 # a Python `if` on a runtime value, 4 times
            break
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def _two_lines_in_a_loop(ctx: Context, x: _HBM) -> _HBM:
    d = x.to_dm(ctx.tdma, _DM)
    out = _DM.new()
    for a in range(3):
        (ctx.main.begin(d.view()).fetch(m("LRa"), m("LRw"))
         .collect(m("LRa"), m("LRw # 16")).commit_trim(m("LRw")).commit_view(out.view_mut()))
        (ctx.main.begin(d.view()).fetch(m("LRa"), m("LRw"))
         .collect(m("LRa"), m("LRw # 32")).commit_trim(m("LRw")).commit_view(out.view_mut()))
    return out.to_hbm(ctx.tdma)


def _codes(kernel):
    return [(d.code, d.line) for d in npu_opt.check(kernel).diagnostics]


def test_one_refusal_in_a_loop_is_reported_once():
    diags = npu_opt.check(_bad_collect_in_a_loop).diagnostics
    assert [d.code for d in diags] == ["COLLECT-2"]


def test_a_runtime_truth_value_in_a_loop_is_reported_once():
    diags = npu_opt.check(_runtime_if_in_a_loop).diagnostics
    assert [d.code for d in diags] == ["RUNTIME-1"]


def test_refusals_on_different_lines_are_each_kept():
    found = _codes(_two_lines_in_a_loop)
    lines = sorted({line for _, line in found})
    assert len(lines) == 2 and len(found) == 2, found
