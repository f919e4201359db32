"""Copy kernels through the element-wise stages: a Fetch Adapter table lookup (f8e4m3 ->
bf16), a widening fetch_cast (i4 -> i32), and the Cast Engine (f32 -> f8e5m2) followed by a
trimmed commit."""

from npu_opt import *

axes(A=256, B=8)

Chip = m("1")
Cluster = m("1 # 2")
One = m("1 # 64")


@device(chip=1)
def lut_e4m3(ctx: Context, x: HbmTensor[f8e4m3, Chip, m("A")]) -> HbmTensor[bf16, Chip, m("A")]:
    x = x.to_dm(ctx.tdma, DmTensor[f8e4m3, Chip, Cluster, One, m("A")])
    y = (ctx.main.begin(x.view())
         .fetch(m("A / 32"), m("A % 32"))
         .fetch_table_lookup(bf16)                      # 32 x bf16: two flits per packet
         .collect(m("A / 32, A / 16 % 2"), m("A % 16"))
         .commit_trim(m("A % 16"))
         .commit(m("A")))
    return y.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("A")])


@device(chip=1)
def widen_i4(ctx: Context, x: HbmTensor[i4, Chip, m("A")]) -> HbmTensor[i32, Chip, m("A")]:
    x = x.to_dm(ctx.tdma, DmTensor[i4, Chip, Cluster, One, m("A")])
    y = (ctx.main.begin(x.view())
         .fetch(m("A / 64"), m("A % 64"))
         .fetch_cast(i32)
         .collect(m("A / 64, A / 8 % 8"), m("A % 8"))
         .commit_trim(m("A % 8"))
         .commit(m("A")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A")])


@device(chip=1)
def narrow_e5m2(ctx: Context, x: HbmTensor[f32, Chip, m("B")]) -> HbmTensor[f8e5m2, Chip, m("B")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, One, m("B")])
    y = (ctx.main.begin(x.view())
         .fetch(m("1"), m("B"))
         .collect(m("1"), m("B"))
         .cast(f8e5m2, m("B # 32"))
         .commit_trim(m("B"))                           # 8 x f8 = 8 bytes
         .commit(m("B")))
    return y.to_hbm(ctx.tdma, HbmTensor[f8e5m2, Chip, m("B")])
