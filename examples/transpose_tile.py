"""Transpose a bf16 tile in every slice through the Transpose Engine: y[s, c, r] = x[s, r, c].

S = 256 slices, each holding one R x C = 16 x 16 tile. The stream carries 8 of a row's
columns per time step (a bf16 transpose reads 8 elements per packet), so one transposed
row gathers two packets (packets_per_col 2, 16 columns); a transposed packet holds 4 rows
(64 bits of bf16), so the 16 rows leave in 4 groups. The commit writes each group of 4
rows (8 bytes) into the transposed layout.
"""

from npu_opt import *

axes(S=256, R=16, C=16)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("S")                 # one tile per slice

@device(chip=1)
def transpose_tile(ctx: Context, x: HbmTensor[bf16, Chip, m("S, R, C")]) -> HbmTensor[bf16, Chip, m("S, C, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("R, C")])
    y = (ctx.main.begin(x.view())
         .fetch(m("R, C / 8"), m("C % 8"))
         .collect(m("R, C / 8"), m("C % 8 # 16"))
         .transpose(m("R / 4, C"), m("R % 4 # 16"))      # rows of 16 columns, 4 rows per packet
         .commit_trim(m("R % 4"))
         .commit(m("C, R")))
    return y.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("S, C, R")])
