"""The reference's largest example kernel, `matmul/matmul_16384.rs` (furiosa-opt-examples at
06dda28), ported with rolled loops: an i8 product out[A, C] = lhs[A, B] . rhs[B, C], with
B = 16384 and output tiles of 1024 rows (A) by 64 columns (C).

Each output tile is four contractions over 4096 values of B (each cluster takes 2048 of
them, its 256 slices 64 each: an inter-transposed lhs, a custom-broadcast and transposed
rhs in the TRF, then an inter-slice reduction), three pairwise adds of those partials, and
one reduction across the two clusters. Every narrowing is an i32 -> i8 cast, which keeps
the low bits, so the tile is the exact product modulo 256.

The reference runs 256 column tiles by 16 row tiles. The sizes here come from the module's
globals `TA` (row tiles) and `TC` (column tiles), which `sized(ta, tc)` sets in a fresh copy
of this module; both tile loops are `ctx.loop` in `matmul_rolled` (the output tile sits at two
runtime starts, one per loop) and Python `for`s (unrolled) in `matmul_unrolled`.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from npu_opt import *
from tests.loops.sized import sized_module

TA: int = globals().get("TA", 1)   # row tiles of 1024 (the reference: 16, `sized(16, 256)`)
TC: int = globals().get("TC", 2)   # column tiles of 64 (the reference: 256); small by default,
                                   # so a compile of every kernel file stays quick
axes(A=1024 * TA, B=16384, C=64 * TC, I=2)

Chip = m("1")
Cluster = m("B / 2048 % 2")                       # a cluster holds one half of a 4096-wide B tile
Acc = DmTensor[i8, Chip, Cluster, m("A / 128 % 8, 1 # 32"), m("C % 8, A % 128, C / 8 % 8")]
Lanes = m("A / 128 % 8, B / 64 % 2, B / 128 % 16")  # the 256 slices of the contraction


def contract_quarter(ctx: Context, lhs: Any, rhs: Any, out: Any) -> None:
    """out (per cluster) = the i8 sum over this cluster's 2048 values of B of lhs . rhs."""
    lhs_dm = lhs.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A / 64 % 16, B / 128 % 16"), m("A % 64, B % 128")])
    lhs_t = (ctx.main.begin(lhs_dm.view())
             .fetch(m("A % 64, B / 32 % 4"), m("B % 32"))
             .switch(Lanes, m("A % 64, B / 32 % 2, A / 64 % 2"),
                     SwitchConfig.INTER_TRANSPOSE(slice1=2, slice0=16, time0=2))
             .collect(m("A % 64, B / 32 % 2, A / 64 % 2"), m("B % 32"))
             .commit_trim(m("B % 32"))
             .commit(m("A % 128, B % 64")))
    # the rhs chunk reaches every slice that multiplies it, then is transposed for the TRF
    rhs_dm = rhs.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("B / 8 % 256"), m("B % 8, C % 64")])
    spread = (ctx.main.begin(rhs_dm.view())
              .fetch(m("B % 8, C / 32 % 2"), m("C % 32"))
              .fetch_cast(i8)
              .switch(Lanes, m("B % 8, C / 32 % 2, B / 8 % 8"), SwitchConfig.CUSTOM_BROADCAST(ring_size=256))
              .collect(m("B % 8, C / 32 % 2, B / 8 % 8"), m("C % 32"))
              .commit_trim(m("C % 32"))
              .commit(m("B % 64, C % 64")))
    flipped = (ctx.main.begin(spread.view())
               .fetch(m("C / 8 % 8, B % 64"), m("C % 8"))
               .collect(m("C / 8 % 8, B % 64"), m("C % 8 # 32"))
               .transpose(m("C / 8 % 8, B / 8 % 8, C % 8"), m("B % 8 # 32"))
               .commit_trim(m("B % 8"))
               .commit(m("C % 64, B % 64")))
    weights = (ctx.sub.begin(flipped.view())
               .fetch(m("C % 64"), m("B % 64"))
               .collect(m("C % 64, B % 64 / 32"), m("B % 32"))
               .to_trf(m("C / 8 % 8"), m("C % 8, B % 64")))
    (ctx.main.begin(lhs_t.view())
     .fetch(m("C % 8, A % 128, B / 32 % 2"), m("B % 32"))
     .collect(m("C % 8, A % 128, B / 32 % 2"), m("B % 32"))
     .contract_outer(weights, m("C % 8, A % 128"), m("B % 64"))
     .contract_packet(m("1"))
     .contract_time(m("C % 8, A % 128"))
     .contract_lane(m("C % 8, A % 128"), m("C / 8 % 8"), LaneMode.INTERLEAVED)
     .vector_init()
     .vector_inter_slice_reduce(m("A / 128 % 8, 1 # 32"), m("C % 8, A % 128"), InterSliceReduceOpI32.ADD)
     .vector_final()
     .cast(i8, m("C / 8 % 8 # 32"))
     .commit_trim(m("C / 8 % 8"))
     .commit_view(out))


def quarter(ctx: Context, lhs_rows: Any, rhs_cols: Any, q: int, out: Any) -> None:
    """Contract the q-th 4096-wide piece of B of a row tile and a column tile into out."""
    lhs = lhs_rows.tile(m("B / 4096"), 1, m(f"1 # {TA}, A % 1024, 1 # 4, B % 4096"), q)
    rhs = rhs_cols.tile(m("B / 4096"), 1, m(f"1 # 4, B % 4096, 1 # {TC}, C % 64"), q)
    contract_quarter(ctx, lhs, rhs, out)


def add_into(ctx: Context, x: Any, y: Any, out: Any) -> None:
    """out = x + y on the Vector Engine (i32 wrapping, narrowed to i8)."""
    (ctx.main.begin_interleaved(y.view(), x.view(), m("I"))
     .fetch(m("C % 8, A % 128, I"), m("C / 8 % 8"))
     .fetch_cast(i32)
     .collect(m("C % 8, A % 128, I"), m("C / 8 % 8"))
     .vector_init()
     .vector_intra_slice_unzip(m("I"), m("C % 8, A % 128"))
     .vector_clip_zip(ClipBinaryOpI32.ADD_FXP)
     .vector_final()
     .cast(i8, m("C / 8 % 8 # 32"))
     .commit_trim(m("C / 8 % 8"))
     .commit_view(out))


def across_clusters(ctx: Context, acc: Any) -> Any:
    """Reduce-scatter over the two clusters: cluster g ends with columns C / 4 % 2 == g of the
    sum of both clusters' partials."""
    Half = DmTensor[i8, Chip, Cluster, m("A / 128 % 8, 1 # 32"), m("C % 4, A % 128, C / 8 % 8")]
    mine = acc.asymmetric_cluster_slice(ctx.sub, m("C / 4 % 2"), m("C % 4, A % 128, C / 8 % 8"), [0, 1])
    theirs = acc.asymmetric_cluster_slice(ctx.sub, m("C / 4 % 2"), m("C % 4, A % 128, C / 8 % 8"), [1, 0])
    swapped = theirs.view().cluster_swap().to_dm(ctx.tdma, Half)
    total = Half.new()
    (ctx.main.begin_interleaved(mine.view(), swapped.view(), m("I"))
     .fetch(m("C % 4, A % 128, I"), m("C / 8 % 8"))
     .fetch_cast(i32)
     .collect(m("C % 4, A % 128, I"), m("C / 8 % 8"))
     .vector_init()
     .vector_intra_slice_unzip(m("I"), m("C % 4, A % 128"))
     .vector_clip_zip(ClipBinaryOpI32.ADD_FXP)
     .vector_final()
     .cast(i8, m("C / 8 % 8 # 32"))
     .commit_trim(m("C / 8 % 8"))
     .commit_view(total.view_mut()))
    return total.reshape(DmTensor[i8, Chip, m("C / 4 % 2"), m("A / 128 % 8, 1 # 32"), m("C % 4, A % 128, C / 8 % 8")])


def output_tile(ctx: Context, lhs: Any, rhs: Any, out: Any, a: Any, c: Any) -> None:
    """Row tile a by column tile c of the product, stored into out."""
    rhs_cols = rhs.view().tile(m("C / 64"), 1, m(f"B, 1 # {TC}, C % 64"), c)
    lhs_rows = lhs.view().tile(m("A / 1024"), 1, m(f"1 # {TA}, A % 1024, B"), a)
    first, second, part = Acc.new(), Acc.new(), Acc.new()
    quarter(ctx, lhs_rows, rhs_cols, 0, first.view_mut())
    quarter(ctx, lhs_rows, rhs_cols, 1, part.view_mut())
    add_into(ctx, first, part, second.view_mut())
    quarter(ctx, lhs_rows, rhs_cols, 2, part.view_mut())
    add_into(ctx, second, part, first.view_mut())
    quarter(ctx, lhs_rows, rhs_cols, 3, part.view_mut())
    add_into(ctx, first, part, second.view_mut())
    dst = (out.view_mut().tile(m("A / 1024"), 1, m(f"1 #{{!}} {TA}, A % 1024, C"), a)
           .tile(m("C / 64"), 1, m(f"1 #{{!}} {TA}, A % 1024, 1 #{{!}} {TC}, C % 64"), c))
    across_clusters(ctx, second).view().to_hbm_view(ctx.tdma, dst)


@device(chip=1)
def matmul_unrolled(ctx: Context, lhs: HbmTensor[i8, Chip, m("A, B")],
                    rhs: HbmTensor[i8, Chip, m("B, C")]) -> HbmTensor[i8, Chip, m("A, C")]:
    """Both tile loops unrolled (the reference under `#[unroll]`)."""
    out = HbmTensor[i8, Chip, m("A, C")].new()
    for c in range(TC):
        for a in range(TA):
            output_tile(ctx, lhs, rhs, out, a, c)
    return out


@device(chip=1)
def matmul_rolled(ctx: Context, lhs: HbmTensor[i8, Chip, m("A, B")],
                  rhs: HbmTensor[i8, Chip, m("B, C")]) -> HbmTensor[i8, Chip, m("A, C")]:
    """Both tile loops rolled (the reference's plain `for`s)."""
    out = HbmTensor[i8, Chip, m("A, C")].new()
    for c in ctx.loop(TC):
        for a in ctx.loop(TA):
            output_tile(ctx, lhs, rhs, out, a, c)
    return out


def sized(ta: int, tc: int) -> ModuleType:
    """This module with `ta` row tiles and `tc` column tiles (A = 1024 ta, C = 64 tc)."""
    return sized_module(__file__, "matmul_16384", TA=ta, TC=tc)
