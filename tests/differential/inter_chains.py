"""Generated inter-slice reduce kernels for the differential tests.

A kernel lays x[K, R, (S,) (V,) P] out over slices `K, R` (K * R = 256), time `[S,] [V]`
and an 8-lane packet P, and runs one Vector Engine pass with `vector_inter_slice_reduce`:
R is reduced and its slot in out_slice is filled by a dummy `1 # r`, a fresh axis X of R's
size (a broadcast) or the time axis V when it has R's size (a promotion). The pass is
InterFirst (maybe followed by the intra-slice chain) or IntraFirst (a clip first). Every
op of both scalars is drawn; `features` says what a kernel exercised.
"""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["inter_kernels"]

_OPS = {"i32": ["ADD", "ADD_SAT", "MAX", "MIN"], "f32": ["ADD", "MAX", "MIN", "MUL"]}


def _q(items: list[str]) -> str:
    return f'm("{", ".join(items) or "1"}")'


@st.composite
def inter_kernels(draw):
    """(source, features) of one generated kernel."""
    dtype = draw(st.sampled_from(["i32", "f32"]))
    op = draw(st.sampled_from(_OPS[dtype]))
    r = draw(st.sampled_from([2, 4, 8, 16]))
    time = [a for a, on in (("S", draw(st.booleans())), ("V", draw(st.booleans()))) if on]
    v = r if "V" in time and draw(st.booleans()) else 2
    slot = draw(st.sampled_from(["dummy", "fresh"] + (["promote"] if "V" in time and v == r else [])))
    out_time = [a for a in time if not (slot == "promote" and a == "V")]
    out_slice = ["K", {"dummy": f"1 # {r}", "fresh": "X", "promote": "V"}[slot]]
    order = draw(st.sampled_from(["inter", "inter_chain", "intra"]))
    unit = "I32" if dtype == "i32" else "F32"
    reduce = f".vector_inter_slice_reduce({_q(out_slice)}, {_q(out_time)}, InterSliceReduceOp{unit}.{op})"
    chain = {"i32": ".vector_clip(ClipBinaryOpI32.MAX, -5)", "f32": ".vector_clip(ClipBinaryOpF32.MIN, 3.5)"}[dtype]
    lines = [".vector_init()"]
    if order == "intra":
        lines += [".vector_intra_slice_tag(TagMode.ZERO)", chain, reduce]
    else:
        lines += [reduce] + ([".vector_intra_slice_tag(TagMode.ZERO)", chain] if order == "inter_chain" else [])
    lines.append(".vector_final()")
    hbm_out = ["K"] + (["X"] if slot == "fresh" else []) + time + ["P"]
    dm_out = out_time + ["P"]
    axes = f"K={256 // r}, R={r}, S=2, V={v}, X={r}, P=8"
    body = "\n             ".join(lines)
    source = f'''from npu_opt import *

axes({axes})

Chip = m("1")
Cluster = m("1 # 2")

@device(chip=1)
def inter_kernel(ctx: Context, x: HbmTensor[{dtype}, Chip, {_q(["K", "R"] + time + ["P"])}]
                 ) -> HbmTensor[{dtype}, Chip, {_q(hbm_out)}]:
    x = x.to_dm(ctx.tdma, DmTensor[{dtype}, Chip, Cluster, m("K, R"), {_q(time + ["P"])}])
    y = (ctx.main.begin(x.view())
         .fetch({_q(time)}, m("P"))
         .collect({_q(time)}, m("P"))
         {body}
         .commit_trim(m("P"))
         .commit({_q(dm_out)}))
    return y.to_hbm(ctx.tdma, HbmTensor[{dtype}, Chip, {_q(hbm_out)}])
'''
    feats = {f"inter:{dtype}:{op}", f"inter_slot:{slot}", f"inter_order:{order}"}
    return source, feats
