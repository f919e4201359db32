"""Tracing reads a kernel function's bytecode from one table per code object
(ir/location.py `instructions_after`): the loop index's name (`ctx.loop`) and the assert
test (`_asserting`) used to disassemble the whole function at every call, and a kernel that
calls `ctx.loop` inside an unrolled Python `for` (synth's tiled candidates) paid that once a
tile: a tune sweep traces such kernels by the hundred."""

from __future__ import annotations

import dis

from ir import location
from npu_opt import *

axes(LP=8, LA=64, LB=32)
Chip = m("1")
Cluster = m("1 # 2")
INDICES: list = []  # each loop's index, as the kernel's body sees it while tracing


@device(chip=1)
def three_loops(ctx: Context, x: HbmTensor[i8, Chip, m("LP, LA, LB")]) -> HbmTensor[i8, Chip, m("LP, LA, LB")]:
    out = HbmTensor[i8, Chip, m("LP, LA, LB")].new()
    for half in range(2):
        for page in ctx.loop(4 * half, 4 * half + 4):
            INDICES.append(page)
            d = x.view().tile(m("LP"), 1, m("1 # 8, LA, LB"), page).to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("LA"), m("LB")])
            d.view().to_hbm_view(ctx.tdma, out.view_mut().tile(m("LP"), 1, m("1 #{!} 8, LA, LB"), page))
    for again in ctx.loop(1):
        INDICES.append(again)
    return out


def test_a_kernel_function_is_disassembled_once_per_trace(monkeypatch):
    seen = []
    real = dis.get_instructions

    def counted(x, *args, **kwargs):
        seen.append(x)
        return real(x, *args, **kwargs)

    monkeypatch.setattr(dis, "get_instructions", counted)
    INDICES.clear()
    location._instructions.cache_clear()
    traced = three_loops.trace()
    assert not traced.errors
    # the index names still come from the bytecode after each call (the `for` target's store)
    assert [i.form.terms[0][0].name for i in INDICES] == ["page", "page", "again"]
    own = [c for c in seen if getattr(c, "co_name", None) == "three_loops"]
    assert len(own) == 1, f"three_loops disassembled {len(own)} times for 3 loops"
