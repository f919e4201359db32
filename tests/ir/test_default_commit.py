"""The default `commit()` element is `[Time, Packet]` term for term, and COMMIT-2/3 accept it
on every stream, including one that splits a padded axis over time and packet
(`R # 16 / 8 ; R # 16 % 8` with |R| = 10, whose element reads jointly as `R # 16`)."""

from __future__ import annotations

import numpy as np

import npu_opt
from tests.differential.harness import load_kernel

SPLIT_PADDED_ROW = '''\
from npu_opt import *

axes(S=256, A=4, R=10)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def split_row(ctx: Context, x: HbmTensor[f32, Chip, m("S, A, R")]) -> HbmTensor[f32, Chip, m("S, A, R")]:
    d = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, m("S"), m("A, R # 16")])
    y = (ctx.main.begin(d.view())
         .fetch(m("A"), m("R # 16"))
         .collect(m("A, R # 16 / 8"), m("R # 16 % 8"))
         .commit_trim(m("R # 16 % 8"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("S, A, R")])
'''


def test_the_default_commit_of_a_split_padded_row_is_accepted():
    kernel = load_kernel(SPLIT_PADDED_ROW)
    report = npu_opt.check(kernel)
    assert report.ok, [d.code for d in report.diagnostics]


def test_the_default_commit_of_a_split_padded_row_runs_on_cpu_and_visa():
    kernel = load_kernel(SPLIT_PADDED_ROW)
    x = np.arange(256 * 4 * 10, dtype=np.float32).reshape(256, 4, 10) * np.float32(-0.5)
    cpu = npu_opt.run(kernel, x.copy(), backend="cpu")
    assert np.array_equal(cpu, x)
    visa = npu_opt.run(kernel, x.copy(), backend="visa")
    assert np.array_equal(np.asarray(visa).view(np.uint32), np.asarray(cpu).view(np.uint32))
