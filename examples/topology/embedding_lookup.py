"""Embedding lookup (examples/topology/embedding_lookup.py): rows of a table by token.

A vocabulary of 1000 tokens maps each to 128 bf16 values (256 bytes). The host passes
the 512 tokens of a batch as byte offsets into the table (token * 256), which
`dma_gather_scaled` reads straight from HBM; two embeddings land in each of the 256
slices. A token outside the vocabulary is a run-time error (GATHER-6) naming its
position, never a wrong row.
"""

from npu_opt import *

axes(VOCAB=1000, EMB=128, TOK=512)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def embedding_lookup(ctx: Context, table: HbmTensor[bf16, Chip, m("VOCAB, EMB")],
                     offsets: HbmTensor[i32, Chip, m("TOK")]) -> HbmTensor[bf16, Chip, m("TOK, EMB")]:
    rows = table.dma_gather_scaled(offsets, DmTensor[bf16, Chip, Cluster, m("TOK / 2"), m("TOK % 2, EMB")])
    return rows.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("TOK, EMB")])
