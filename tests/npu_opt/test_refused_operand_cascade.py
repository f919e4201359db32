"""A tensor a refused stage returned, passed on as an operand (a TRF tensor to
`contract_outer`, a VRF tensor to `vector_fxp`), is no second error: the kernel reports
the refusal once, at its own line (it was also RUNTIME-2 "is a runtime scalar")."""

from __future__ import annotations

from npu_opt import *

axes(A=2048)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def bad_trf(ctx: Context, lhs: HbmTensor[bf16, Chip, m("A")], rhs: HbmTensor[bf16, Chip, m("A")]) -> HbmTensor[bf16, Chip, m("1")]:
    lhs = lhs.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("1 # 256"), m("A")])
    rhs = rhs.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("1 # 256"), m("A")])
    trf = ctx.sub.begin(rhs.view()).fetch(m("1"), m("A")).collect(m("A / 16"), m("A % 16")).to_trf(42, m("A"))
    out = (ctx.main.begin(lhs.view()).fetch(m("1"), m("A")).collect(m("A / 16"), m("A % 16"))
           .contract_outer(trf, m("A / 32"), m("A % 32"))
           .contract_packet(m("1")).contract_time(m("1")).contract_lane(m("1"), m("1 # 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("1 # 16")).commit_trim(m("1 # 8")).commit(m("1 # 8")))
    return out.to_hbm(ctx.tdma)


@device(chip=1)
def bad_vrf(ctx: Context, lhs: HbmTensor[i32, Chip, m("A")], rhs: HbmTensor[i32, Chip, m("A")]) -> HbmTensor[i32, Chip, m("A")]:
    lhs = lhs.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("A / 8 # 256"), m("A % 8")])
    rhs = rhs.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("A / 8 # 256"), m("A % 8")])
    vrf = ctx.sub.begin(rhs.view()).fetch(m("1"), m("A % 8")).collect(m("1"), m("A % 8")).to_vrf("A % 8")
    out = (ctx.main.begin(lhs.view()).fetch(m("1"), m("A % 8")).collect(m("1"), m("A % 8"))
           .vector_init().vector_intra_slice_tag(TagMode.ZERO).vector_fxp(FxpBinaryOp.MUL_INT, vrf)
           .vector_final().commit_trim(m("A % 8")).commit(m("A % 8")))
    return out.to_hbm(ctx.tdma)


def test_a_refused_trf_tensor_is_reported_once():
    assert [d.code for d in bad_trf.trace().diagnostics] == ["TYPE-6"]


def test_a_refused_vrf_tensor_is_reported_once():
    assert [d.code for d in bad_vrf.trace().diagnostics] == ["TYPE-6"]
