"""Kernel sources of examples.md (examples 1-6, 4b and the refused fixtures R1-R20), verbatim.

Each source is executed in a fresh module (`example`, `refused`), because the examples declare axes of
different sizes under the same names. Fixture sources mark the refused line with `# <--`.
"""

from __future__ import annotations

import linecache
import types

EXAMPLES: dict[str, str] = {}

EXAMPLES["example_1"] = '''\
from npu_opt import *

axes(A=2048)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")          # one active slice

@device(chip=1)
def dot_product_kernel(ctx: Context,
                       lhs: HbmTensor[bf16, Chip, m("A")],
                       rhs: HbmTensor[bf16, Chip, m("A")]) -> HbmTensor[bf16, Chip, m("1")]:
    lhs = lhs.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("A")])
    rhs = rhs.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("A")])
    rhs_trf = (ctx.sub.begin(rhs.view())
               .fetch(m("1"), m("A"))
               .collect(m("A / 16"), m("A % 16"))
               .to_trf(m("1"), m("A")))
    out = (ctx.main.begin(lhs.view())
           .fetch(m("1"), m("A"))
           .collect(m("A / 16"), m("A % 16"))
           .contract_outer(rhs_trf, m("A / 32"), m("A % 32"))   # pairs flits: 64-byte packets
           .contract_packet(m("1"))                              # tree over 32 products
           .contract_time(m("1"))                                # 64 time steps summed
           .contract_lane(m("1"), m("1 # 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("1 # 16"))
           .commit_trim(m("1 # 8"))
           .commit(m("1 # 8")))
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("1")])
'''

EXAMPLES["example_2"] = '''\
from npu_opt import *

axes(I=256, J=2048)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I")                 # one row per slice

@device(chip=1)
def gemv_kernel(ctx: Context,
                matrix: HbmTensor[bf16, Chip, m("I, J")],
                vector: HbmTensor[bf16, Chip, m("J")]) -> HbmTensor[bf16, Chip, m("I")]:
    matrix = matrix.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J")])
    vector = vector.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J")])  # broadcast to every slice
    vector_trf = (ctx.sub.begin(vector.view())
                  .fetch(m("1"), m("J"))
                  .collect(m("J / 16"), m("J % 16"))
                  .to_trf(m("1"), m("J")))
    out = (ctx.main.begin(matrix.view())
           .fetch(m("J / 16"), m("J % 16"))
           .collect(m("J / 16"), m("J % 16"))
           .contract_outer(vector_trf, m("J / 32"), m("J % 32"))
           .contract_packet(m("1"))
           .contract_time(m("1"))
           .contract_lane(m("1"), m("1 # 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("1 # 16"))
           .commit_trim(m("1 # 4"))                    # 8 bytes: the smallest commit
           .commit(m("1 # 4")))
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("I")])
'''

EXAMPLES["example_3"] = '''\
from npu_opt import *

axes(I=512, J=512, K=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I / 32, J / 32")
Lane = m("J % 8")

@device(chip=1)
def gemm_kernel(ctx: Context,
                a: HbmTensor[bf16, Chip, m("I, K")],
                b: HbmTensor[bf16, Chip, m("J, K")]) -> HbmTensor[bf16, Chip, m("I, J")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("I % 32, K")])
    b = b.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J % 32, K")])
    b_trf = (ctx.sub.begin(b.view())
             .fetch(m("J % 8, J / 8 % 4"), m("K"))
             .collect(m("J % 8, J / 8 % 4, K / 16"), m("K % 16"))
             .to_trf())
    out = (ctx.main.begin(a.view())
           .fetch(m("I % 32, J / 8 % 4"), m("K"))
           .collect(m("I % 32, J / 8 % 4, K / 16"), m("K % 16"))
           .contract_outer(b_trf, m("I % 32, J / 8 % 4, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("I % 32, J / 8 % 4"))
           .contract_lane(m("I % 32, J / 8 % 4"), m("J % 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("J % 8 # 16"))
           .commit_trim(m("J % 8"))
           .commit())
    return out.to_hbm(ctx.tdma)
'''

EXAMPLES["example_4"] = '''\
from npu_opt import *

axes(M=512, N=512, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 32")

@device(chip=1)
def gemm_i8_kernel(ctx: Context,
                   a: HbmTensor[i8, Chip, m("M, K")],
                   w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N % 32, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 4"), m("K"))
             .fetch_cast(i8)                                   # identity: accepted, no conversion
             .collect(m("N % 8, N / 8 % 4, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8 % 4, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .fetch_cast(i8)
           .collect(m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))                            # 8 x i32 = 32 bytes, no trim
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("M, N")])
'''

EXAMPLES["example_4b"] = '''\
from npu_opt import *

axes(M=512, N=512, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 32")

@device(chip=1)
def gemm_bf16_kernel(ctx: Context,
                     a: HbmTensor[bf16, Chip, m("M, K")],
                     w: HbmTensor[bf16, Chip, m("N, K")]) -> HbmTensor[f32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("N % 32, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 4"), m("K"))
             .fetch_cast(bf16)                                 # identity: accepted, no conversion
             .collect(m("N % 8, N / 8 % 4, K / 16"), m("K % 16"))
             .to_trf(m("N % 8"), m("N / 8 % 4, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .fetch_cast(bf16)
           .collect(m("M % 32, N / 8 % 4, K / 16"), m("K % 16"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))                            # 8 x f32 = 32 bytes, no trim
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("M, N")])
'''

EXAMPLES["example_5"] = '''\
from npu_opt import *

axes(I=2048, J=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I / 8")

@device(chip=1)
def row_sum_kernel(ctx: Context,
                   x: HbmTensor[i8, Chip, m("I, J")],
                   ones: HbmTensor[i8, Chip, m("J")]) -> HbmTensor[i32, Chip, m("I")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("I % 8, J")])
    ones = ones.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("J")])   # broadcast to every slice
    ones_trf = (ctx.sub.begin(ones.view())
                .fetch(m("1"), m("J"))
                .collect(m("J / 32"), m("J % 32"))
                .to_trf(m("1"), m("J")))                # default inference would give the same
    out = (ctx.main.begin(x.view())
           .fetch(m("J / 64, I % 8"), m("J % 64"))
           .collect(m("J / 64, I % 8, J / 32 % 2"), m("J % 32"))
           .contract_outer(ones_trf, m("J / 64, I % 8"), m("J % 64"))
           .contract_packet(m("1"))                     # depth 6: 64 products
           .contract_time(m("I % 8"))                   # J / 64 (outermost) summed: IT = 8
           .contract_lane(m("I % 8"), m("1 # 8"), LaneMode.SEQUENTIAL)
           .commit_trim(m("1 # 2"))                     # 2 x i32 = 8 bytes
           .commit(m("I % 8, 1 # 2")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("I")])
'''

EXAMPLES["example_6"] = '''\
from npu_opt import *

axes(A=4096, B=8)

Chip = m("1")
Cluster = m("1 # 2")

@device(chip=1)
def fetch_commit_simple(ctx: Context,
                        x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i32, Chip, m("B, A")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A / 16"), m("A / 8 % 2, A % 8, B")])
    y = (ctx.main.begin(x.view())
         .fetch(m("A / 8 % 2"), m("A % 8, B"))        # 64-byte i8 packets
         .fetch_cast(i32)                             # 256-byte packets
         .collect(m("A / 8 % 2, A % 8"), m("B"))      # 8 flits each
         .commit_trim(m("B"))
         .commit(m("A / 8 % 2, A % 8, B")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("B, A")])   # transposing DMA into HBM
'''

REFUSED_HEADER = '''\
from npu_opt import *

axes(A=8, B=64, E=32, F=6, R=8, K=128, P=32, T=64, W=8192, X=81920, N=16, C=2)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")
'''

# refused.py kernels (they share REFUSED_HEADER)
REFUSED: dict[str, str] = {}

REFUSED["r01_half_flit"] = '''\
@device(chip=1)
def r01_half_flit(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    y = (ctx.main.begin(x.view())
         .fetch(m("A"), m("B"))
         .collect(m("A, B / 16"), m("B % 16"))          # <-- 16 bytes, a flit is 32
         .commit_trim(m("B % 16"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("A, B")])
'''

REFUSED["r02_i8_to_bf16"] = '''\
@device(chip=1)
def r02_i8_to_bf16(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> HbmTensor[bf16, Chip, m("A, E")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
    y = (ctx.main.begin(x.view())
         .fetch(m("A"), m("E"))
         .fetch_cast(bf16)                              # <-- i8 -> bf16 is not a Fetch Adapter cast
         .collect(m("A, E / 16"), m("E % 16"))
         .commit_trim(m("E % 16"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("A, E")])
'''

REFUSED["r03_commit_i9"] = '''\
@device(chip=1)
def r03_commit_i9(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> HbmTensor[i8, Chip, m("A, E")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
    y = (ctx.main.begin(x.view())
         .fetch(m("A"), m("E"))
         .fetch_zero_point_sub(i9, 3)
         .collect(m("A"), m("E"))
         .commit_trim(m("E"))                           # <-- i9 may only feed contract_outer
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("A, E")])
'''

REFUSED["r04_trf_too_big"] = '''\
@device(chip=1)
def r04_trf_too_big(ctx: Context, w: HbmTensor[bf16, Chip, m("R, W")]) -> None:
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("R, W")])   # 128 KiB: fits DM
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("R"), m("W"))
             .collect(m("R, W / 16"), m("W % 16"))
             .to_trf(m("R"), m("W")))                   # <-- 8 lanes x 16384 B = 131072 B > 65536 B
'''

REFUSED["r05a_time_mismatch"] = '''\
@device(chip=1)
def r05a_time_mismatch(ctx: Context,
                       x: HbmTensor[i8, Chip, m("A, E")],
                       w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("F, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, E")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("E")).fetch_cast(i8)
             .collect(m("R"), m("E")).to_trf(m("R"), m("E")))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("E")).fetch_cast(i8)
         .collect(m("A"), m("E"))
         .contract_outer(w_trf, m("F"), m("E"))         # <-- Time is A (8 steps), out_time F has 6
         .contract_packet(m("1"))
         .contract_time(m("F"))
         .contract_lane(m("F"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("F, R")])
'''

REFUSED["r05b_flit_mismatch"] = '''\
@device(chip=1)
def r05b_flit_mismatch(ctx: Context,
                       x: HbmTensor[i8, Chip, m("A, B")],
                       w: HbmTensor[i8, Chip, m("R, B")]) -> HbmTensor[i32, Chip, m("A, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, B")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("B")).fetch_cast(i8)
             .collect(m("R, B / 32"), m("B % 32")).to_trf(m("R"), m("B")))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("B")).fetch_cast(i8)
         .collect(m("A, B / 32"), m("B % 32"))
         .contract_outer(w_trf, m("A"), m("K % 64"))    # <-- inner flit K % 32 is not B % 32
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])
'''

REFUSED["r05c_packed_time"] = '''\
@device(chip=1)
def r05c_packed_time(ctx: Context,
                     x: HbmTensor[i8, Chip, m("A, B")],
                     w: HbmTensor[i8, Chip, m("R, B")]) -> HbmTensor[i32, Chip, m("A, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, B")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("B")).fetch_cast(i8)
             .collect(m("R, B / 32"), m("B % 32")).to_trf(m("R"), m("B")))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("B")).fetch_cast(i8)
         .collect(m("A, B / 32"), m("B % 32"))
         .contract_outer(w_trf, m("A"), m("A / 4, B % 32"))   # <-- packed half is B / 32, not A / 4
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])
'''

REFUSED["r06_three_lanes"] = '''\
@device(chip=1)
def r06_three_lanes(ctx: Context, w: HbmTensor[i8, Chip, m("R, B")]) -> None:
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, B")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("R"), m("B"))
             .fetch_cast(i8)
             .collect(m("R, B / 32"), m("B % 32"))
             .to_trf(m("1 # 3"), m("R, B")))            # <-- lanes must be 1, 2, 4 or 8
'''

REFUSED["r08_mixed_operands"] = '''\
@device(chip=1)
def r08_mixed_operands(ctx: Context,
                       x: HbmTensor[i8, Chip, m("A, E")],
                       w: HbmTensor[bf16, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("R, E")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("E"))
             .collect(m("R, E / 16"), m("E % 16")).to_trf(m("R"), m("E")))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("E")).collect(m("A"), m("E"))
         .contract_outer(w_trf, m("A"), m("E"))         # <-- i8 x bf16 is not a MAC pair
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])
'''

REFUSED["r11_accumulator"] = '''\
@device(chip=1)
def r11_accumulator(ctx: Context,
                    x: HbmTensor[bf16, Chip, m("T, A, P")],
                    w: HbmTensor[bf16, Chip, m("R, T")]) -> HbmTensor[f32, Chip, m("A, R, P")]:
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("T, A, P")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("R, T")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("T"))
             .collect(m("R, T / 16"), m("T % 16")).to_trf(m("R"), m("T")))
    y = (ctx.main.begin(x.view()).fetch(m("T, A"), m("P"))
         .collect(m("T, A, P / 16"), m("P % 16"))
         .contract_outer(w_trf, m("T, A"), m("P"))      # R = 1: P is a TRF broadcast
         .contract_packet(m("P"))                       # depth 0: nothing summed in the packet
         .contract_time(m("A"))                         # T (outermost) summed: IT = 8
         .contract_lane(m("A, R, P / 8"), m("P % 8"), LaneMode.SEQUENTIAL)   # <-- 8 x 8 x 32 = 2048 > 1024
         .commit_trim(m("P % 8"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("A, R, P")])
'''

REFUSED["r12_sub_contraction"] = '''\
@device(chip=1)
def r12_sub_contraction(ctx: Context,
                        x: HbmTensor[i8, Chip, m("A, E")],
                        w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, E")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("E"))
             .collect(m("R"), m("E")).to_trf(m("R"), m("E")))
    y = (ctx.sub.begin(x.view()).fetch(m("A"), m("E")).collect(m("A"), m("E"))
         .contract_outer(w_trf, m("A"), m("E"))         # <-- the sub context has no Contraction Engine
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])
'''

REFUSED["r13_transposing_dma"] = '''\
@device(chip=1)
def r13_transposing_dma(ctx: Context, x: HbmTensor[i8, Chip, m("E, A")]) -> HbmTensor[i8, Chip, m("E, A")]:
    y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])   # <-- burst is 1 cell = 1 byte
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("E, A")])
'''

REFUSED["r14_partial_fetch"] = '''\
@device(chip=1)
def r14_partial_fetch(ctx: Context, x: HbmTensor[i8, Chip, m("K")]) -> HbmTensor[i8, Chip, m("K")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("K")])
    y = (ctx.main.begin(x.view())
         .fetch(m("1"), m("K % 64"))                    # <-- K / 64 is never read
         .collect(m("K / 32 % 2"), m("K % 32"))
         .commit_trim(m("K % 32"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("K")])
'''

REFUSED["r15_dm_full"] = '''\
@device(chip=1)
def r15_dm_full(ctx: Context,
                x: HbmTensor[i32, Chip, m("X")],
                y: HbmTensor[i32, Chip, m("X")]) -> tuple[HbmTensor[i32, Chip, m("X")], HbmTensor[i32, Chip, m("X")]]:
    dx = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("X")])   # 320 KiB per slice
    dy = y.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("X")])   # <-- 640 KiB live > 512 KiB
    return dx.to_hbm(ctx.tdma), dy.to_hbm(ctx.tdma)
'''

REFUSED["r16_fetch_digit_twice"] = '''\
@device(chip=1)
def r16_fetch_digit_twice(ctx: Context, x: HbmTensor[i8, Chip, m("B, A, E")]) -> HbmTensor[i8, Chip, m("B, A, E")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("B"), m("A, E")])
    y = (ctx.main.begin(x.view())
         .fetch(m("A, B / 32"), m("E"))                 # <-- B / 32 is already placed by Slice = B
         .collect(m("A, B / 32"), m("E"))
         .commit_trim(m("E"))
         .commit(m("A, B / 32, E")))
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("B, A, E")])
'''

REFUSED["r17_commit_digit_twice"] = '''\
@device(chip=1)
def r17_commit_digit_twice(ctx: Context, x: HbmTensor[i8, Chip, m("B, A, E")]) -> HbmTensor[i8, Chip, m("B, A, E")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("B"), m("A, E")])
    y = (ctx.main.begin(x.view())
         .fetch(m("A"), m("E"))
         .collect(m("A"), m("E"))
         .commit_trim(m("E"))
         .commit(m("B / 32, A, E")))                    # <-- B / 32 is already placed by Slice = B
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("B, A, E")])
'''

REFUSED["r18_sub_i4_widen"] = '''\
@device(chip=1)
def r18_sub_i4_widen(ctx: Context, x: HbmTensor[i4, Chip, m("A, B")]) -> HbmTensor[i32, Chip, m("A, B")]:
    x = x.to_dm(ctx.tdma, DmTensor[i4, Chip, Cluster, Slice, m("A, B")])
    y = (ctx.sub.begin(x.view())
         .fetch(m("A, B / 16"), m("B % 16"))            # 16 x i4 = 8 bytes: one sub-context read
         .fetch_cast(i32)                               # <-- the 8 bytes read would become 64
         .collect(m("A, B / 16, B / 8 % 2"), m("B % 8"))
         .commit_trim(m("B % 8"))
         .commit(m("A, B")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, B")])
'''

REFUSED["r19_sub_short_read"] = '''\
@device(chip=1)
def r19_sub_short_read(ctx: Context, x: HbmTensor[i8, Chip, m("A")]) -> HbmTensor[i32, Chip, m("A")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A")])
    y = (ctx.sub.begin(x.view())
         .fetch(m("A / 2"), m("A % 2"))                 # <-- 2 bytes per packet; the sub context reads 8
         .fetch_cast(i32)
         .collect(m("A / 2"), m("A % 2 # 8"))
         .commit_trim(m("A % 2"))
         .commit(m("A / 2, A % 2")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A")])
'''

REFUSED["r20_i4_strided_packet"] = '''\
@device(chip=1)
def r20_i4_strided_packet(ctx: Context, x: HbmTensor[i4, Chip, m("N, C")]) -> HbmTensor[i4, Chip, m("C, N")]:
    x = x.to_dm(ctx.tdma, DmTensor[i4, Chip, Cluster, Slice, m("N, C")])
    y = (ctx.main.begin(x.view())
         .fetch(m("C"), m("N"))                         # <-- packet entry [16 : 2]: nibbles 2 apart
         .collect(m("C"), m("N # 64"))
         .commit_trim(m("N"))
         .commit(m("C, N")))
    return y.to_hbm(ctx.tdma, HbmTensor[i4, Chip, m("C, N")])
'''

# R7, R9, R10: whole modules
REFUSED_MODULES: dict[str, str] = {}

REFUSED_MODULES["r07_time_order"] = '''\
from npu_opt import *

axes(I=512, J=512, K=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I / 32, J / 32")
Lane = m("J % 8")

@device(chip=1)
def r07_time_order(ctx: Context,
                   a: HbmTensor[bf16, Chip, m("I, K")],
                   b: HbmTensor[bf16, Chip, m("J, K")]) -> HbmTensor[bf16, Chip, m("I, J")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("I % 32, K")])
    b = b.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J % 32, K")])
    b_trf = (ctx.sub.begin(b.view())
             .fetch(m("J % 8, J / 8 % 4"), m("K"))
             .collect(m("J % 8, J / 8 % 4, K / 16"), m("K % 16"))
             .to_trf())
    out = (ctx.main.begin(a.view())
           .fetch(m("I % 32, J / 8 % 4"), m("K"))
           .collect(m("I % 32, J / 8 % 4, K / 16"), m("K % 16"))
           .contract_outer(b_trf, m("I % 32, J / 8 % 4, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("J / 8 % 4, I % 32"))                       # <-- order differs from Time
           .contract_lane(m("J / 8 % 4, I % 32"), m("J % 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("J % 8 # 16"))
           .commit_trim(m("J % 8"))
           .commit())
    return out.to_hbm(ctx.tdma)
'''

REFUSED_MODULES["r09_narrow_commit"] = '''\
from npu_opt import *

axes(I=2048, J=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I / 8")

@device(chip=1)
def r09_narrow_commit(ctx: Context,
                      x: HbmTensor[i8, Chip, m("I, J")],
                      ones: HbmTensor[i8, Chip, m("J")]) -> HbmTensor[i32, Chip, m("I")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("I % 8, J")])
    ones = ones.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("J")])   # broadcast to every slice
    ones_trf = (ctx.sub.begin(ones.view())
                .fetch(m("1"), m("J"))
                .collect(m("J / 32"), m("J % 32"))
                .to_trf(m("1"), m("J")))                # default inference would give the same
    out = (ctx.main.begin(x.view())
           .fetch(m("J / 64, I % 8"), m("J % 64"))
           .collect(m("J / 64, I % 8, J / 32 % 2"), m("J % 32"))
           .contract_outer(ones_trf, m("J / 64, I % 8"), m("J % 64"))
           .contract_packet(m("1"))                     # depth 6: 64 products
           .contract_time(m("I % 8"))                   # J / 64 (outermost) summed: IT = 8
           .contract_lane(m("I % 8"), m("1 # 8"), LaneMode.SEQUENTIAL)
           .commit_trim(m("1"))                         # <-- 1 x i32 = 4 bytes, a commit is at least 8
           .commit(m("I % 8")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("I")])
'''

REFUSED_MODULES["r10_i32_to_bf16"] = '''\
from npu_opt import *

axes(M=512, N=512, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 32")

@device(chip=1)
def r10_i32_to_bf16(ctx: Context,
                    a: HbmTensor[i8, Chip, m("M, K")],
                    w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N % 32, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 4"), m("K"))
             .fetch_cast(i8)                                   # identity: accepted, no conversion
             .collect(m("N % 8, N / 8 % 4, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8 % 4, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .fetch_cast(i8)
           .collect(m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("N % 8 # 16"))                        # <-- i32 -> bf16 is not a Cast Engine pair
           .commit_trim(m("N % 8"))                            # 8 x i32 = 32 bytes, no trim
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("M, N")])
'''

_LOADED: dict[str, types.ModuleType] = {}


def _exec(key: str, source: str) -> types.ModuleType:
    """Run `source` as a fresh module named after `key` (its own axis registry)."""
    if key in _LOADED:
        return _LOADED[key]
    filename = f"<kernels_fetch:{key}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(f"kernels_fetch_{key}")
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - our own fixture text
    _LOADED[key] = module
    return module


def example(key: str):
    """The kernel of example `key` (e.g. "example_3")."""
    module = _exec(key, EXAMPLES[key])
    kernels = [v for v in vars(module).values() if type(v).__name__ == "DeviceKernel"]
    (kernel,) = kernels
    return kernel


def refused_source(name: str) -> str:
    """The full module text of a refused fixture."""
    if name in REFUSED_MODULES:
        return REFUSED_MODULES[name]
    return REFUSED_HEADER + "\n" + REFUSED[name]


def refused(name: str):
    """The refused fixture kernel `name` (e.g. "r01_half_flit")."""
    return getattr(_exec(name, refused_source(name)), name)


def marked_line(name: str) -> int:
    """1-based line of the `# <--` marker in the fixture's module text."""
    lines = refused_source(name).splitlines()
    return next(i + 1 for i, text in enumerate(lines) if "# <--" in text)
