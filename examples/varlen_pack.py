"""Variable-length pack (examples/varlen_pack.py): padded rows stored densely.

Each of the 256 slices holds 5 rows of 10 f32 values, laid out in DM as a padded 8 x 16
block (`H # 8, R # 16`: the row count padded to 8, the row length to 16), as a batch buffer
with fixed-size slots would be (here the DMA from HBM fills the slots). The sub context streams the block a flit (8 cells) at a time
and the Valid Count Generator counts each flit's live prefix: 8, 2 for a row, and 0 for
the three padding rows (a time filter on `H`, the packet clipper on `R`). The packed commit
writes only the counted cells, back to back, so the result is the dense `H, R` rows: 50
values a slice instead of 128.
"""

from npu_opt import *

axes(A=256, H=5, R=10)

Chip = m("1")
Cluster = m("1 # 2")

@device(chip=1)
def varlen_pack(ctx: Context,
                x: HbmTensor[f32, Chip, m("A, H, R")]) -> HbmTensor[f32, Chip, m("A, H, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, m("A"), m("H # 8, R # 16")])   # rows into slots
    y = (ctx.sub.begin(x.view())
         .fetch(m("H # 8"), m("R # 16"))                    # one padded row per step
         .collect(m("H # 8, R # 16 / 8"), m("R # 16 % 8"))  # two flits a row
         .commit_trim(m("R # 16 % 8"))
         .commit_valid_count_pack()                         # counts 8, 2 per row
         .commit(m("H, R")))                                # the live cells, back to back
    return y.to_hbm(ctx.tdma)
