"""`vector_fp_ternary(FMA_F, Branched.imm(guard, (rhs, c)))`: each slot holds a pair, and an
element the slot's guard admits first becomes x * rhs + c (one rounding), the others keep
their value. Our kernel against numpy on cpu and on the VISA interpreter; the record prints
each slot's second constant (`value1`) and reads back; a single value in a ternary slot, or a
pair in a binary one, is VE-CONST-3."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *  # noqa: F403
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

axes(R=8, K=16)  # noqa: F405
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405
I, O = BitReq.IGNORE, BitReq.ONE  # noqa: F405
RNG = np.random.default_rng(89)


def _tagged(ctx, x):
    xd = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("R, K")])  # noqa: F405
    return (ctx.main.begin(xd.view()).fetch(m("R, K / 8"), m("K % 8")).collect(m("R, K / 8"), m("K % 8"))  # noqa: F405
            .vector_init().vector_intra_slice_tag(TagMode.COMPARISON(  # noqa: F405
                [Cmp.LESS(-1.0), Cmp.GREATER(1.0), Cmp.FALSE, Cmp.FALSE]))  # noqa: F405
            .vector_narrow_split(m("R, K / 4"), m("K % 4")))  # noqa: F405


@device(chip=1)  # noqa: F405
def squash_tails(ctx: Context, x: HbmTensor[f32, Chip, m("R, K")]) -> HbmTensor[f32, Chip, m("R, K")]:  # noqa: F405
    """x < -1: 0.25 x - 0.75; x > 1: 0.25 x + 0.75; else x."""
    y = (_tagged(ctx, x)
         .vector_fp_ternary(FpTernaryOp.FMA_F, Branched.imm(TagGuard.matches([O, I, I, I]), (0.25, -0.75))  # noqa: F405
                            .imm(TagGuard.matches([I, O, I, I]), (0.25, 0.75)))  # noqa: F405
         .vector_widen_concat(m("R, K / 8"), m("K % 8")).vector_final()  # noqa: F405
         .commit_trim(m("K % 8")).commit(m("R, K")))  # noqa: F405
    return y.to_hbm(ctx.tdma)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_each_tail_takes_its_own_pair(backend):
    x = (RNG.integers(-24, 25, (8, 16)) / 8).astype(np.float32)  # eighths: every product and sum is exact
    want = np.where(x < -1, x * np.float32(0.25) - np.float32(0.75),
                    np.where(x > 1, x * np.float32(0.25) + np.float32(0.75), x)).astype(np.float32)
    got = npu_opt.run(squash_tails, x, backend=backend)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_the_record_prints_both_constants_and_reads_back():
    text = npu_opt.compile(squash_tails).text
    verify_text(text)
    assert print_artifact(parse_visa(text)) == text
    (line,) = [x for x in text.splitlines() if "= vector_branch " in x]
    quarter, three_q = int(np.float32(0.25).view(np.uint32)), int(np.float32(0.75).view(np.uint32))
    assert "unit=FP_TERNARY, op=FMA_F" in line
    assert f"value={quarter}, value1={three_q}" in line


def test_the_ir_text_reads_back():
    from ir.kernel import print_kernel
    from tests.kernel_text import parse_kernel

    text = print_kernel(squash_tails.trace().kernel)
    assert "branched_vector_fp_ternary" in text
    assert print_kernel(parse_kernel(text)) == text


def _one_slot_kernel(value, ternary):
    @device(chip=1)  # noqa: F405
    def wrong(ctx: Context, x: HbmTensor[f32, Chip, m("R, K")]) -> HbmTensor[f32, Chip, m("R, K")]:  # noqa: F405
        slot = Branched.imm(TagGuard.matches([O, I, I, I]), value)  # noqa: F405
        s = _tagged(ctx, x)
        s = s.vector_fp_ternary(FpTernaryOp.FMA_F, slot) if ternary else s.vector_fp_binary(FpBinaryOp.ADD_F, slot)  # noqa: F405
        y = (s.vector_widen_concat(m("R, K / 8"), m("K % 8")).vector_final()  # noqa: F405
             .commit_trim(m("K % 8")).commit(m("R, K")))  # noqa: F405
        return y.to_hbm(ctx.tdma)

    return wrong


@pytest.mark.parametrize(("value", "ternary"), [(0.5, True), ((1.0, 2.0), False)])
def test_a_slot_of_the_wrong_arity_is_refused(value, ternary):
    assert [d.code for d in npu_opt.check(_one_slot_kernel(value, ternary)).diagnostics] == ["VE-CONST-3"]


def test_a_second_constant_on_a_binary_slot_is_refused_by_the_verifier():
    from tests.vector_pair.test_branch_logic import masks_by_range
    from visa.artifact import VisaTextError

    text = npu_opt.compile(masks_by_range).text
    assert "value=255}" in text
    with pytest.raises(VisaTextError, match="VBR-3|arg1"):
        verify_text(text.replace("value=255}", "value=255, value1=5}"))
