"""Transpose tiles whose packets carry 16 live elements: the Transpose Engine's doubled
input packing (furiosa-opt v0.7), for 8- and 16-bit elements.

The engine reads 8 elements of each input packet, or 16 when an 8- or 16-bit packet has
live elements past the 8th; the record then says `fetch_in_width_shift=1`. Each packet
still takes one cycle, so a tile fed 16 elements per packet needs half the packets (and
half the engine cycles) of the same tile fed 8 per packet.

- `transpose_tile_wide`: the bf16 16 x 16 tile of `examples/transpose_tile.py`, but one
  whole row per packet (16 bf16 fill the 32-byte flit): 16 packets per tile instead of 32.
- `transpose_i8_wide`: an i8 tile of R = 8 rows and C = 32 columns, 16 columns per packet
  (two packets per transposed row, 32 columns); a transposed packet holds the 8 rows.
"""

from npu_opt import *

axes(S=256, R=16, C=16, Q=8, W=32)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("S")                 # one tile per slice


@device(chip=1)
def transpose_tile_wide(ctx: Context, x: HbmTensor[bf16, Chip, m("S, R, C")]) -> HbmTensor[bf16, Chip, m("S, C, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("R, C")])
    y = (ctx.main.begin(x.view())
         .fetch(m("R"), m("C"))
         .collect(m("R"), m("C"))                     # 16 live bf16: the whole flit
         .transpose(m("R / 4, C"), m("R % 4 # 16"))   # one packet per 16-column row, 4 rows per packet
         .commit_trim(m("R % 4"))
         .commit(m("C, R")))
    return y.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("S, C, R")])


@device(chip=1)
def transpose_i8_wide(ctx: Context, x: HbmTensor[i8, Chip, m("S, Q, W")]) -> HbmTensor[i8, Chip, m("S, W, Q")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("Q, W")])
    y = (ctx.main.begin(x.view())
         .fetch(m("Q, W / 16"), m("W % 16"))
         .collect(m("Q, W / 16"), m("W % 16 # 32"))   # 16 live i8 of 32
         .transpose(m("W"), m("Q # 32"))              # two packets per 32-column row, 8 rows per packet
         .commit_trim(m("Q"))
         .commit(m("W, Q")))
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("S, W, Q")])
