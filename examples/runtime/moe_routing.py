"""Mixture-of-experts routing with runtime token counts (examples/runtime/moe_routing.py, docs/runtime.md).

A router has sorted the tokens by expert on the host: expert e's tokens sit in
`tokens[e]`, `B` blocks of `S` = 64 tokens (one token per slice), zero-padded past the
`counts[e]` tokens it was given. Each expert applies its own bf16 weight, `out[e, b, s]
= tokens[e, b, s] @ weights[e].T` in f32. The counts change from launch to launch and are
known only then: they are `HbmScalar[u32]` parameters, one per expert.

The kernel is traced once with every expert and block unrolled (Python's loops). Each
expert's work sits in a `ctx.when(routed > 0)` block, so an empty expert skips loading
its weight into the TRF and all its contractions; inside it each block of 64 tokens is
guarded by `routed > 64 * b`, so a lightly loaded expert skips its empty blocks. Skipped
blocks of the output keep the zeros of the `memset`. The schedule model counts every
block (the worst case: it does not know the counts).
"""

from npu_opt import *

axes(E=4, B=2, S=64, K=16, N=8)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("S")                 # one token of a block per slice
Count = HbmScalar[u32]


@device(chip=1)
def moe_experts(ctx: Context,
                tokens: HbmTensor[bf16, Chip, m("E, B, S, K")],
                weights: HbmTensor[bf16, Chip, m("E, N, K")],
                counts: tuple[Count, Count, Count, Count]) -> HbmTensor[f32, Chip, m("E, B, S, N")]:
    x = tokens.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("E, B, K")])
    w = weights.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("E, N, K")])   # every slice: all weights
    out = DmTensor[f32, Chip, Cluster, Slice, m("E, B, N")].new()
    out.view_mut().memset(ctx.sub, 0.0)
    for e in range(4):
        routed = counts[e].to_spm(ctx.tdma)
        with ctx.when(routed > 0):                                  # an empty expert does nothing
            w_trf = (ctx.sub.begin(w.view().tile(m("E"), 1, m("1 # 4, N, K"), e))
                     .fetch(m("N"), m("K"))
                     .collect(m("N"), m("K"))
                     .to_trf(m("N"), m("K")))
            for b in range(2):
                with ctx.when(routed > 64 * b):                     # a block with at least one token
                    src = x.view().tile(m("E"), 1, m("1 # 4, B, K"), e).tile(m("B"), 1, m("1 # 4, 1 # 2, K"), b)
                    dst = (out.view_mut().tile(m("E"), 1, m("1 #{!} 4, B, N"), e)
                           .tile(m("B"), 1, m("1 #{!} 4, 1 #{!} 2, N"), b))
                    (ctx.main.begin(src)
                     .fetch(m("1"), m("K"))
                     .collect(m("1"), m("K"))
                     .contract_outer(w_trf, m("1"), m("K"))
                     .contract_packet(m("1"))
                     .contract_time(m("1"))
                     .contract_lane(m("1"), m("N"), LaneMode.INTERLEAVED)
                     .commit_trim(m("N"))
                     .commit_view(dst))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("E, B, S, N")])
