"""The schedule model orders the register file's readers and writers (issue #26 left alone
last round): the VRF is one per slice for both contexts, so a pass waits for the `vrf_load`
it reads (RAW), and a load into words the allocation reused waits for the earlier tensor's
last reader (WAR), even when the two run in different contexts."""

from __future__ import annotations

from npu_opt import (ClipBinaryOpI32, Context, DmTensor, FxpBinaryOp, HbmTensor, TagMode, axes, device, i32, m)

from backends.npu import compile_kernel
from tests.npu_opt.test_views_lowered import aligned_write, loaded_and_new
from visa.schedule import schedule_artifact

axes(A=8, E=64)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")


def _load(ctx, v):
    v = v.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("E")])
    return ctx.sub.begin(v.view()).fetch(m("E / 8"), m("E % 8")).collect(m("E / 8"), m("E % 8")).to_vrf(m("E"))


def _pass(ctx, x, operand, method, op):
    tagged = (ctx.main.begin(x.view()).fetch(m("A, E / 8"), m("E % 8")).collect(m("A, E / 8"), m("E % 8"))
              .vector_init().vector_intra_slice_tag(TagMode.ZERO))
    return getattr(tagged, method)(op, operand).vector_final().commit_trim(m("E % 8")).commit()


@device(chip=1)
def two_rounds(ctx: Context, x: HbmTensor[i32, Chip, m("A, E")], b: HbmTensor[i32, Chip, m("E")],
               c: HbmTensor[i32, Chip, m("E")]) -> HbmTensor[i32, Chip, m("A, E")]:
    """y = min(x + b, c): b is dead once the first pass read it, so c may take its words."""
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("A, E")])
    first = _pass(ctx, x, _load(ctx, b), "vector_fxp", FxpBinaryOp.ADD_FXP)
    second = _pass(ctx, first, _load(ctx, c), "vector_clip", ClipBinaryOpI32.MIN)
    return second.to_hbm(ctx.tdma)


def _schedule():
    outcome = compile_kernel(two_rounds)
    assert outcome.status == "ok", outcome.diagnostics
    return schedule_artifact(outcome.artifact)


def _steps(schedule, mnemonic):
    return [s for s in schedule.slots if any(r.mnemonic == mnemonic for r in s.step.records)]


def test_each_pass_starts_after_the_load_it_reads():
    s = _schedule()
    loads, passes = _steps(s, "vrf_load"), _steps(s, "vector_rf")
    assert len(loads) == 2 and len(passes) == 2
    for load, reader in zip(loads, passes):
        assert reader.start >= load.start + load.step.duration
        assert any(h.kind == "RAW" and h.before == load.step.index and h.after == reader.step.index
                   and h.location.startswith("vrf[") for h in s.hazards)


def test_a_load_into_reused_words_waits_for_the_last_reader_of_the_old_tensor():
    s = _schedule()
    (first_load, second_load), (first_pass, _) = _steps(s, "vrf_load"), _steps(s, "vector_rf")
    words = [a for a in first_load.step.accesses if a.space == "vrf"][0]
    reused = [a for a in second_load.step.accesses if a.space == "vrf"][0]
    assert (words.lo, words.hi) == (reused.lo, reused.hi)  # the allocation reused b's words for c
    assert second_load.start >= first_pass.start + first_pass.step.duration
    assert any(h.kind == "WAR" and h.before == first_pass.step.index and h.after == second_load.step.index
               for h in s.hazards)


def test_a_new_tensor_writes_where_its_allocation_placed_it():
    """`tensor_new` of a DM or TRF tensor writes its own allocation (it wrote a stand-in byte
    at DM address 0, ordering it after whatever else lived there)."""
    for kernel in (aligned_write, loaded_and_new):
        outcome = compile_kernel(kernel)
        assert outcome.status == "ok", outcome.diagnostics
        s = schedule_artifact(outcome.artifact)
        lowered = outcome.artifact.kernel
        dm = {a.tensor.id: a for a in lowered.dm_allocations}
        trf = {a.tensor.id: a for a in lowered.trf_allocations}
        news = _steps(s, "tensor_new")
        assert news
        for slot in news:
            (access,) = slot.step.accesses
            ref = int(slot.step.label.lstrip("%"))
            if access.space == "dm":
                assert (access.lo, access.hi) == (dm[ref].base, dm[ref].base + dm[ref].size)
            else:
                assert access.space == "trf" and (access.lo, access.hi) == (trf[ref].base_row,
                                                                             trf[ref].base_row + trf[ref].rows)
