"""Kernel sources for the DMA and Cast/Commit rule tests.

The valid examples 1-6 and 4b of examples.md, the refused fixtures R9, R10, R13 and R17
(examples.md 7), and small kernels that each break exactly one rule of pipeline.md 4 and
10. Each source is a module of its own (the examples declare clashing axes), compiled
under a pseudo file name and registered with linecache so diagnostics render. The line
a refusal must point at carries the marker `# <--`.
"""

from __future__ import annotations

import linecache
import textwrap
import types
from typing import Any

__all__ = ["EXAMPLES", "FIXTURES", "RULE_KERNELS", "load", "marked_line", "kernel"]

# --- examples.md 1-6, 4b (verbatim) --------------------------------------------------------

EX1 = '''
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

EX2 = '''
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

EX3 = '''
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

EX4 = '''
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

EX4B = '''
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

EX5 = '''
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

EX6 = '''
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

EXAMPLES: dict[str, tuple[str, str]] = {
    "ex1": (EX1, "dot_product_kernel"), "ex2": (EX2, "gemv_kernel"), "ex3": (EX3, "gemm_kernel"),
    "ex4": (EX4, "gemm_i8_kernel"), "ex4b": (EX4B, "gemm_bf16_kernel"), "ex5": (EX5, "row_sum_kernel"),
    "ex6": (EX6, "fetch_commit_simple"),
}

# --- examples.md 7 fixtures (verbatim) -----------------------------------------------------

REFUSED_HEADER = '''
from npu_opt import *

axes(A=8, B=64, E=32, F=6, R=8, K=128, P=32, T=64, W=8192, X=81920, N=16, C=2)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")
'''

R09 = '''
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

R10 = '''
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

R13 = REFUSED_HEADER + '''
@device(chip=1)
def r13_transposing_dma(ctx: Context, x: HbmTensor[i8, Chip, m("E, A")]) -> HbmTensor[i8, Chip, m("E, A")]:
    y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])   # <-- burst is 1 cell = 1 byte
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("E, A")])
'''

R17 = REFUSED_HEADER + '''
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

# name -> (source, kernel function, expected code)
FIXTURES: dict[str, tuple[str, str, str]] = {
    "R9": (R09, "r09_narrow_commit", "TRIM-1"),
    "R10": (R10, "r10_i32_to_bf16", "CAST-1"),
    "R13": (R13, "r13_transposing_dma", "DMA-5"),
    "R17": (R17, "r17_commit_digit_twice", "COMMIT-7"),
}

# --- kernels that break one rule each ------------------------------------------------------


def _dma(body: str, header: str = REFUSED_HEADER) -> str:
    """A kernel `k` taking x: Hbm[i8; 1; A, E] (unless the body's signature says otherwise)."""
    return header + textwrap.dedent(body)


# An f32 stream (A x R, one 32-byte flit per time step), narrowed or committed as told.
F32_HEAD = REFUSED_HEADER + '''
@device(chip=1)
def k(ctx: Context, x: HbmTensor[f32, Chip, m("A, R")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("A, R")])
    s = ctx.{ctx}.begin(x.view()).fetch(m("A"), m("R")).collect(m("A"), m("R"))
'''


def _f32(tail: str, ctx: str = "main") -> str:
    return F32_HEAD.replace("{ctx}", ctx) + textwrap.indent(textwrap.dedent(tail), "    ")


RULE_KERNELS: dict[str, tuple[str, str]] = {
    # DMA-1: the destination dtype differs
    "DMA-1": ("DMA-1", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("A, E")])   # <--
        ''')),
    # DMA-2: the destination Chip differs
    "DMA-2": ("DMA-2", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, m("1 # 2"), Cluster, Slice, m("A, E")])   # <--
        ''')),
    # DMA-3: SPACE-2 of the destination (3 clusters)
    "DMA-3/cluster": ("DMA-3", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, m("1 # 3"), Slice, m("A, E")])   # <--
        ''')),
    # DMA-3: SPACE-3 of the destination (32 slices)
    "DMA-3/slice": ("DMA-3", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("1 # 32"), m("A, E")])   # <--
        ''')),
    # DMA-3: MEM-1 of the destination (640 KiB of i32 per slice)
    "DMA-3/capacity": ("DMA-3", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i32, Chip, m("C, X")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("C, X")])   # <--
        ''')),
    # DMA-3: DM -> DM changes the Cluster mapping
    "DMA-3/dm-cluster": ("DMA-3", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
            z = y.to_dm(ctx.tdma, DmTensor[i8, Chip, m("1"), Slice, m("A, E")])   # <--
        ''')),
    # DMA-3: DM -> DM changes the number of slices
    "DMA-3/dm-slice": ("DMA-3", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
            z = y.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("1 # 128"), m("A, E")])   # <--
        ''')),
    # DMA-4: the destination drops the source's A
    "DMA-4/drop": ("DMA-4", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("E")])   # <--
        ''')),
    # DMA-4: no common refinement (F split at 3 in DM, at 2 in the destination)
    "DMA-4/refinement": ("DMA-4", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("F, K")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F % 3, F / 3, K")])
            z = y.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F % 2, F / 2, K")])   # <--
        ''')),
    # DMA-4: the destination places B / 32 twice (Slice = B)
    "DMA-4/twice": ("DMA-4", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("B, A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("B"), m("B / 32, A, E")])   # <--
        ''')),
    # DMA-6: the burst is 8 bytes (zero padding is not Top), the Z rows are 12 bytes apart
    "DMA-6": ("DMA-6", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("W, A")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("Z, W #{0} 3, A")])   # <--
        ''', header=REFUSED_HEADER.replace("axes(A=8,", "axes(Z=2, A=4,").replace("W=8192", "W=2"))),
    # CAST-1: f32 -> i8 is not a Cast Engine pair
    "CAST-1": ("CAST-1", _f32('''
        s = s.cast(i8, m("R # 32"))   # <--
        s.commit_trim(m("R")).commit()
        ''')),
    # CAST-3: the cast packet is 8 x bf16 = 16 bytes
    "CAST-3": ("CAST-3", _f32('''
        s = s.cast(bf16, m("R"))   # <--
        s.commit_trim(m("R")).commit()
        ''')),
    # CAST-4: 32 bytes, but the padding is not the tail of the packet
    "CAST-4": ("CAST-4", _f32('''
        s = s.cast(bf16, m("R, 1 # 2"))   # <--
        s.commit_trim(m("R")).commit()
        ''')),
    # TRIM-2: 16 bytes, but not a prefix of the packet
    "TRIM-2": ("TRIM-2", _f32('''
        s = s.commit_trim(m("R / 2"))   # <--
        s.commit()
        ''')),
    # CTX-4: commit_cast in the sub context
    "CTX-4": ("CTX-4", _f32('''
        s = s.commit_trim(m("R")).commit_cast(bf16)   # <--
        s.commit()
        ''', ctx="sub")),
    # CCAST-1: the Commit Adapter converts only f32 -> bf16
    "CCAST-1": ("CCAST-1", _f32('''
        s = s.commit_trim(m("R")).commit_cast_relu(f8e4m3)   # <--
        s.commit()
        ''')),
    # CCAST-2: 2 x f32 = 8 bytes cannot be converted
    "CCAST-2": ("CCAST-2", _f32('''
        s = s.commit_trim(m("R % 2")).commit_cast(bf16)   # <--
        s.commit()
        ''')),
    # COMMIT-2: the element lacks the packet's R
    "COMMIT-2": ("COMMIT-2", _f32('''
        s.commit_trim(m("R")).commit(m("A"))   # <--
        ''')),
    # COMMIT-3: T % 2 of the element is never written
    "COMMIT-3/unwritten": ("COMMIT-3", _f32('''
        s.commit_trim(m("R")).commit(m("T % 2, A, R"))   # <--
        ''')),
    # COMMIT-3: a broadcast element factor holds copies no commit writes
    "COMMIT-3/broadcast": ("COMMIT-3", _f32('''
        s.commit_trim(m("R")).commit(m("A, 2, R"))   # <--
        ''')),
    # COMMIT-3: the packet's padding would land on live cells of the element
    "COMMIT-3/padding": ("COMMIT-3", _f32('''
        s = s.cast(bf16, m("R # 16")).commit_trim(m("R # 16"))
        s.commit(m("A, R"))   # <--
        ''')),
    # COMMIT-4: eight time entries and one packet entry
    "COMMIT-4": ("COMMIT-4", '''
from npu_opt import *

axes(Y=256, R=8)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def k(ctx: Context, x: HbmTensor[f32, Chip, m("Y, R")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("Y, R")])
    s = ctx.main.begin(x.view()).fetch(m("Y"), m("R")).collect(m("Y"), m("R")).commit_trim(m("R"))
    s.commit(m("Y % 2, Y / 2 % 2, Y / 4 % 2, Y / 8 % 2, Y / 16 % 2, Y / 32 % 2, Y / 64 % 2, Y / 128, R"))   # <--
'''),
    # COMMIT-5: U (re-read 512 times) and V coalesce into one 131072-step time entry
    "COMMIT-5": ("COMMIT-5", '''
from npu_opt import *

axes(U=512, V=256, Z=32)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def k(ctx: Context, x: HbmTensor[i8, Chip, m("V, Z")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("V, Z")])
    s = ctx.main.begin(x.view()).fetch(m("U, V"), m("Z")).collect(m("U, V"), m("Z")).commit_trim(m("Z"))
    s.commit(m("U, V, Z"))   # <--
'''),
    # MEM-1 of the committed tensor: 4 MiB per slice (the write plan itself fits)
    "MEM-1": ("MEM-1", '''
from npu_opt import *

axes(U=512, V=256, Z=32)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def k(ctx: Context, x: HbmTensor[i8, Chip, m("V, Z")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("V, Z")])
    s = ctx.main.begin(x.view()).fetch(m("U, V"), m("Z")).collect(m("U, V"), m("Z")).commit_trim(m("Z"))
    s.commit(m("V, U, Z"))   # <--
'''),
    # COMMIT-6: rows of 8 bytes written 12 bytes apart
    "COMMIT-6/time": ("COMMIT-6", REFUSED_HEADER + '''
@device(chip=1)
def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, P")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, P")])
    s = ctx.main.begin(x.view()).fetch(m("A"), m("P")).collect(m("A"), m("P")).commit_trim(m("P % 8"))
    s.commit(m("A, P % 8 # 12"))   # <--
'''),
    # COMMIT-6: the packet splits into 4-byte pieces
    "COMMIT-6/piece": ("COMMIT-6", REFUSED_HEADER + '''
@device(chip=1)
def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, P")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, P")])
    s = ctx.main.begin(x.view()).fetch(m("A"), m("P")).collect(m("A"), m("P")).commit_trim(m("P % 8"))
    s.commit(m("P / 4 % 2, A, P % 4 # 8"))   # <--
'''),
    # COMMIT-6: 8-byte pieces of a packet start 12 bytes apart
    "COMMIT-6/start": ("COMMIT-6", '''
from npu_opt import *

axes(A=8, Y=2, Z=4)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def k(ctx: Context, x: HbmTensor[bf16, Chip, m("A, Y, Z")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("A, Y, Z")])
    s = (ctx.main.begin(x.view()).fetch(m("A"), m("Y, Z")).collect(m("A"), m("(Y, Z) # 16"))
         .commit_trim(m("Y, Z")))
    s.commit(m("A, Y, Z # 6"))   # <--
'''),
}

# The same f32 stream committed legally, and a legal cast (they must trace cleanly).
VALID_KERNELS: dict[str, str] = {
    "f32-commit": _f32('''
        s.commit_trim(m("R")).commit()
        '''),
    "f32-cast": _f32('''
        s.cast(bf16, m("R # 16")).commit_trim(m("R")).commit()
        '''),
    "f32-commit-cast": _f32('''
        s.commit_trim(m("R % 4")).commit_cast_relu(bf16).commit(m("A, R % 4"))
        '''),
    "f32-split-packet": _f32('''
        s.commit_trim(m("R")).commit(m("R / 4, A, R % 4"))
        '''),
    "dm-to-dm": _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("F, K")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F % 3, F / 3, K")])
            z = y.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F, K")])
            w = z.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("F # 256"), m("K")])
            v = w.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("K, F")])
        '''),
}

# --- loading -------------------------------------------------------------------------------

_LOADED: dict[str, dict[str, Any]] = {}


def load(source: str, name: str) -> dict[str, Any]:
    """Execute a kernel module source under the pseudo file `<kernels_commit:name>`."""
    if name in _LOADED:
        return _LOADED[name]
    filename = f"<kernels_commit:{name}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    module = types.ModuleType(f"kernels_commit_{name.replace('/', '_').replace('-', '_')}")
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - our own test sources
    _LOADED[name] = module.__dict__
    return module.__dict__


def marked_line(source: str) -> int:
    """1-based line of the `# <--` marker."""
    for number, line in enumerate(source.splitlines(), start=1):
        if "# <--" in line:
            return number
    raise ValueError("no `# <--` marker in the source")


def kernel(source: str, name: str, function: str = "k") -> Any:
    """The DeviceKernel `function` of a kernel source."""
    return load(source, name)[function]
