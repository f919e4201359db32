"""A kernel generic over its inner axis, made once per axis by a factory (the porting rule
for `#[device] fn f<A: AxisName>`). `rows_copy(inner, keep_low_digit=False)` moves the
rows to DM over a broadcast Cluster `m("2")` and Slice `R / 2`, so the digit `R % 2` has
no place: half the rows would be lost. The reference type-checks such a kernel when
nothing launches it (v0.8 generic.rs); npu-opt checks every kernel it makes whole and
refuses the copy (DMA-4). With the Cluster `R % 2` the same copy is lossless."""

from npu_opt import *

axes(R=512, G=16, H=32)


def rows_copy(inner: str, keep_low_digit: bool):
    cluster = m("R % 2") if keep_low_digit else m("2")

    @device(chip=1)
    def rows_copy(ctx: Context, x: HbmTensor[i32, m("1"), m(f"R, {inner}")]
                  ) -> HbmTensor[i32, m("1"), m(f"R, {inner}")]:
        d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), cluster, m("R / 2"), m(inner)])  # DMA-4 when lossy
        return d.to_hbm(ctx.tdma)
    return rows_copy


lossy_g = rows_copy("G", keep_low_digit=False)
lossless_g = rows_copy("G", keep_low_digit=True)
lossless_h = rows_copy("H", keep_low_digit=True)
