"""A paged KV cache touched at launch-time page numbers (examples/runtime/kv_pages.py, docs/runtime.md).

The cache holds `P` = 8 pages of `S` = 64 token rows of `D` = 8 i32 values. Which page
to read and which to write are known only at launch: they are `HbmScalar` parameters,
as a block table's entries are in a serving runtime. The kernel reads page `src` into DM
with a tile of the HBM view at a runtime start (`i.cast(usize)`, the reference's
`i as usize`), adds `bias` to every value on the Vector Engine, and writes the result
over page `dst` of a copy of the cache: a write view tiled at a runtime start. The page
numbers change from launch to launch without recompiling; a page number past the cache
stops the run with RUNTIME-10.
"""

from npu_opt import *

axes(P=8, S=64, D=8)

Chip = m("1")
Cluster = m("1 # 2")
Page = DmTensor[i32, Chip, Cluster, m("S"), m("D")]          # one token row per slice


@device(chip=1)
def kv_page_bump(ctx: Context,
                 cache: HbmTensor[i32, Chip, m("P, S, D")],
                 src: HbmScalar[u32],
                 dst: HbmScalar[i32]) -> HbmTensor[i32, Chip, m("P, S, D")]:
    read_at = src.to_spm(ctx.tdma).cast(usize)
    write_at = dst.to_spm(ctx.tdma).cast(usize)              # a negative i32 wraps past the cache: RUNTIME-10
    page = cache.view().tile(m("P"), 1, m("1 # 8, S, D"), read_at).to_dm(ctx.tdma, Page)
    bumped = (ctx.main.begin(page.view())
              .fetch(m("1"), m("D"))
              .collect(m("1"), m("D"))
              .vector_init()
              .vector_intra_slice_tag(TagMode.ZERO)
              .vector_fxp(FxpBinaryOp.ADD_FXP, 100)
              .vector_final()
              .commit_trim(m("D"))
              .commit(m("D")))
    out = HbmTensor[i32, Chip, m("P, S, D")].new()
    cache.view().to_hbm_view(ctx.tdma, out.view_mut())
    bumped.view().to_hbm_view(ctx.tdma, out.view_mut().tile(m("P"), 1, m("1 #{!} 8, S, D"), write_at))
    return out


if __name__ == "__main__":
    import numpy as np
    import npu_opt

    cache = np.arange(8 * 64 * 8, dtype=np.int32).reshape(8, 64, 8)
    for src, dst in ((0, 0), (3, 6), (7, 1)):
        want = cache.copy()
        want[dst] = cache[src] + 100
        for backend in ("cpu", "visa"):
            assert np.array_equal(npu_opt.run(kv_page_bump, cache, src, dst, backend=backend), want)
    print("kv_page_bump: pages read and written at launch-time numbers")
