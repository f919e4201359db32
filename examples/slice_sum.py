"""A sum over all 256 slices (examples/slice_sum.py): y[a] = sum_r x[r, a].

Each of the 256 slices of a cluster holds one row x[r, :] of A = 64 elements. The
inter-slice reducer folds the rows across the slices in one pass (the InterFirst order:
straight after `vector_init`); the sum lands on a dummy `1 # 256` slice, so one slice
holds it. The i32 kernel wraps as a 32-bit add does; the f32 kernel adds in slice order,
rounding at every step.
"""

from npu_opt import *

axes(R=256, A=64)

Chip = m("1")
Cluster = m("1 # 2")


def _sum(x, op):
    return (x.fetch(m("A / 8"), m("A % 8"))
            .collect(m("A / 8"), m("A % 8"))
            .vector_init()
            .vector_inter_slice_reduce(m("1 # 256"), m("A / 8"), op)   # R leaves the slice
            .vector_final()
            .commit_trim(m("A % 8"))
            .commit(m("A")))


@device(chip=1)
def slice_sum_i32(ctx: Context, x: HbmTensor[i32, Chip, m("R, A")]) -> HbmTensor[i32, Chip, m("A")]:
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("R"), m("A")])
    return _sum(ctx.main.begin(x.view()), InterSliceReduceOpI32.ADD).to_hbm(ctx.tdma)


@device(chip=1)
def slice_sum_f32(ctx: Context, x: HbmTensor[f32, Chip, m("R, A")]) -> HbmTensor[f32, Chip, m("A")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, m("R"), m("A")])
    return _sum(ctx.main.begin(x.view()), InterSliceReduceOpF32.ADD).to_hbm(ctx.tdma)
