"""Two-chip add (examples/topology/two_chip_add.py): one kernel over two RNGD chips.

Each chip holds half of the data (`Chip = m("C")`, host array (2, 2048)) and adds the
constant 7 on its Vector Engine (wrapping i32 arithmetic) over 2 clusters x 256
slices x 4 values. An add of two tensors needs a Vector Engine operand from the VRF,
which npu-opt does not offer yet, so the second operand here is a constant.
Compiled for `rngd`, a chip=2 kernel uses the shipped `rngd-2chip` target.
"""

from npu_opt import *

axes(C=2, N=2048)


@device(chip=2)
def two_chip_add(ctx: Context, x: HbmTensor[i32, m("C"), m("N")]) -> HbmTensor[i32, m("C"), m("N")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("C"), m("N / 1024"), m("N / 4 % 256"), m("N % 4")])
    y = (ctx.main.begin(d.view())
         .fetch(m("1"), m("N % 4"))
         .fetch_cast(i32)
         .collect(m("1"), m("N % 4 # 8"))
         .vector_init()
         .vector_intra_slice_tag(TagMode.ZERO)
         .vector_fxp(FxpBinaryOp.ADD_FXP, 7)
         .vector_final()
         .commit_trim(m("N % 4"))
         .commit(m("N % 4")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, m("C"), m("N")])
