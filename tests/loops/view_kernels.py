"""Kernels whose views take a runtime start from a rolled loop's index, written rolled
(`ctx.loop`) and unrolled (a Python `for`), for tests/loops/test_loop_views.py."""

from typing import Any

from npu_opt import *

axes(VA=64, VE=4, VW=8, VM=4, VN=2, VR=16, VC=8)
Chip, Cluster = m("1"), m("1 # 2")
Groups = DmTensor[i32, Chip, Cluster, m("VA"), m("VE, VW")]


def _commit_group(ctx: Context, d: Any, out: Any, src: Any, dst: Any) -> None:
    """Group `src` of d committed into group `dst` of out by a MAIN stream."""
    (ctx.main.begin(d.view().tile(m("VE"), 1, m("1 # 4, VW"), src))
     .fetch(m("1"), m("VW")).collect(m("1"), m("VW"))
     .commit_trim(m("VW")).commit_view(out.view_mut().tile(m("VE"), 1, m("1 #{!} 4, VW"), dst)))


def commit_reversed(rolled: bool) -> Any:
    """out's group g is x's group 3 - g: `commit_view` into a tile at the loop index."""

    @device(chip=1)
    def reverse(ctx: Context, x: HbmTensor[i32, Chip, m("VA, VE, VW")]) -> HbmTensor[i32, Chip, m("VA, VE, VW")]:
        d = x.to_dm(ctx.tdma, Groups)
        out = Groups.new()
        for g in (ctx.loop(4) if rolled else range(4)):
            _commit_group(ctx, d, out, 3 - g, g)
        return out.to_hbm(ctx.tdma)
    return reverse


@device(chip=1)
def commit_past_the_end(ctx: Context, x: HbmTensor[i32, Chip, m("VA, VE, VW")]) -> HbmTensor[i32, Chip, m("VA, VE, VW")]:
    """The tile start g + 1 is 4 at g = 3, past the last start 3: LOOP-1."""
    d = x.to_dm(ctx.tdma, Groups)
    out = Groups.new()
    for g in ctx.loop(4):
        _commit_group(ctx, d, out, g, g + 1)
    return out.to_hbm(ctx.tdma)
