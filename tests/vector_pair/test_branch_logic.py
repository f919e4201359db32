"""`vector_logic` with a branched operand: each element takes the logic op with the value of
the first slot whose guard admits its tag id, the others keep their bits. Our kernels
(i32 masks by sign and size, the f32 sign bit cleared on negatives) against numpy on cpu
and on the VISA interpreter; the record prints its LOGIC slots and reads back; a
register-file slot, which the logic units cannot read, is refused (VRF-2)."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *  # noqa: F403
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

axes(R=16, K=32)  # noqa: F405
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405
I, O, Z = BitReq.IGNORE, BitReq.ONE, BitReq.ZERO  # noqa: F405
RNG = np.random.default_rng(83)


def _tagged(ctx, x, dtype, cmps):
    xd = x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("R, K")])  # noqa: F405
    return (ctx.main.begin(xd.view()).fetch(m("R, K / 8"), m("K % 8")).collect(m("R, K / 8"), m("K % 8"))  # noqa: F405
            .vector_init().vector_intra_slice_tag(TagMode.COMPARISON(cmps)))  # noqa: F405


@device(chip=1)  # noqa: F405
def masks_by_range(ctx: Context, x: HbmTensor[i32, Chip, m("R, K")]) -> HbmTensor[i32, Chip, m("R, K")]:  # noqa: F405
    """Negatives keep their low byte, values over 100 their low nibble, the rest all bits."""
    y = (_tagged(ctx, x, i32, [Cmp.LESS(0), Cmp.GREATER(100), Cmp.FALSE, Cmp.FALSE])  # noqa: F405
         .vector_logic(LogicBinaryOpI32.BIT_AND, Branched.imm(TagGuard.matches([O, I, I, I]), 0xFF)  # noqa: F405
                       .imm(TagGuard.matches([Z, O, I, I]), 0xF))  # noqa: F405
         .vector_final().commit_trim(m("K % 8")).commit(m("R, K")))  # noqa: F405
    return y.to_hbm(ctx.tdma)


@device(chip=1)  # noqa: F405
def abs_of_negatives(ctx: Context, x: HbmTensor[f32, Chip, m("R, K")]) -> HbmTensor[f32, Chip, m("R, K")]:  # noqa: F405
    """The sign bit cleared where x < 0 (a bitwise AND on the f32 pattern)."""
    keep = float(np.uint32(0x7FFFFFFF).view(np.float32))  # NaN bits: the slot value is a pattern
    y = (_tagged(ctx, x, f32, [Cmp.LESS(0.0), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE])  # noqa: F405
         .vector_logic(LogicBinaryOpF32.BIT_AND, Branched.imm(TagGuard.matches([O, I, I, I]), keep))  # noqa: F405
         .vector_final().commit_trim(m("K % 8")).commit(m("R, K")))  # noqa: F405
    return y.to_hbm(ctx.tdma)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_integer_masks_follow_the_first_admitting_slot(backend):
    x = RNG.integers(-(2**20), 2**20, (16, 32)).astype(np.int32)
    x[0, :4] = [101, 100, -1, 0]
    want = np.where(x < 0, x & 0xFF, np.where(x > 100, x & 0xF, x)).astype(np.int32)
    np.testing.assert_array_equal(npu_opt.run(masks_by_range, x, backend=backend), want)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_float_bits_are_cleared_only_on_tagged_elements(backend):
    x = RNG.standard_normal((16, 32)).astype(np.float32)
    want = np.where(x < 0, np.abs(x), x).astype(np.float32)
    got = npu_opt.run(abs_of_negatives, x, backend=backend)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_the_record_names_logic_slots_and_reads_back():
    text = npu_opt.compile(masks_by_range).text
    verify_text(text)
    assert print_artifact(parse_visa(text)) == text
    (line,) = [x for x in text.splitlines() if "= vector_branch " in x]
    assert "unit=LOGIC_I32, op=BIT_AND" in line and "value=255" in line and "value=15" in line


def test_a_register_file_slot_on_a_logic_op_is_refused():
    @device(chip=1)  # noqa: F405
    def logic_rf(ctx: Context, x: HbmTensor[i32, Chip, m("R, K")],  # noqa: F405
                 b: HbmTensor[i32, Chip, m("K")]) -> HbmTensor[i32, Chip, m("R, K")]:  # noqa: F405
        bd = b.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("K")])  # noqa: F405
        bv = ctx.sub.begin(bd.view()).fetch(m("K / 8"), m("K % 8")).collect(m("K / 8"), m("K % 8")).to_vrf(m("K"))  # noqa: F405
        y = (_tagged(ctx, x, i32, [Cmp.LESS(0), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE])  # noqa: F405
             .vector_logic(LogicBinaryOpI32.BIT_OR, Branched.rf(TagGuard.all(), bv))  # noqa: F405
             .vector_final().commit_trim(m("K % 8")).commit(m("R, K")))  # noqa: F405
        return y.to_hbm(ctx.tdma)

    assert [d.code for d in npu_opt.check(logic_rf).diagnostics] == ["VRF-7"]  # no register-file Logic read


def test_the_ir_text_of_a_branched_logic_op_reads_back():
    from ir.kernel import print_kernel
    from tests.kernel_text import parse_kernel

    text = print_kernel(masks_by_range.trace().kernel)
    assert "branched_vector_logic" in text
    assert print_kernel(parse_kernel(text)) == text
