"""`vector_narrow_trim` / `vector_widen_pad` on a pair: the way changes without a time change.

A pair whose packet holds at most four live cells padded to a flit (`E # 8`, E = 4) goes
4-way by dropping the padded back half of each flit (no regrouping, unlike
`vector_narrow_split`), on both groups at once, and back with `vector_widen_pad`; the same
rules as on one stream (VE-TRIM-2, VE-TRIM-4, VE-PAD-3). cpu == visa bit for bit == numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import (ClipBinaryOpF32, Context, DmTensor, FpBinaryOp, FpMulAlu, FpUnaryOp, HbmTensor, axes,
                     device, f32, m)
from tu_ops import rngd
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

axes(TI=2, TA=16, TE=4, TF=8)
CHIP = m("1")
RNG = np.random.default_rng(5)
X = RNG.integers(-64, 64, (2, 16, 4)).astype(np.float32) / 8  # eighths: products and sums are exact


def _pair(ctx, x, packet="TE", collected="TE # 8"):
    d = x.to_dm(ctx.tdma, DmTensor[f32, CHIP, m("1 # 2"), m("1 # 256"), m("TI, TA, TE")])
    return (ctx.main.begin(d.view()).fetch(m("TA, TI"), m(packet)).collect(m("TA, TI"), m(collected))
            .vector_init().vector_intra_slice_unzip(m("TI"), m("TA")))


def _out(ctx, s):
    return s.vector_final().commit_trim(m("TE")).commit(m("TA, TE")).to_hbm(ctx.tdma)


@device(chip=1)
def exp_then_mul(ctx: Context, x: HbmTensor[f32, CHIP, m("TI, TA, TE")]) -> HbmTensor[f32, CHIP, m("TA, TE")]:
    """exp(x[0]) * x[1]: trimmed as a pair, zipped 4-way, padded back on the merged stream."""
    s = (_pair(ctx, x).vector_narrow_trim(m("TE")).vector_fp_unary(FpUnaryOp.EXP, True, False)
         .vector_fp_zip(FpBinaryOp.MUL_F(FpMulAlu.MUL0)).vector_widen_pad(m("TE # 8")))
    return _out(ctx, s)


@device(chip=1)
def pad_before_zip(ctx: Context, x: HbmTensor[f32, CHIP, m("TI, TA, TE")]) -> HbmTensor[f32, CHIP, m("TA, TE")]:
    """max(2 x[0], x[1] + 1): trimmed and padded back as a pair, zipped 8-way on the Clip cluster."""
    s = (_pair(ctx, x).vector_narrow_trim(m("TE"))
         .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), 2.0, None)
         .vector_fp_binary(FpBinaryOp.ADD_F, None, 1.0)
         .vector_widen_pad(m("TE # 8")).vector_clip_zip(ClipBinaryOpF32.MAX))
    return _out(ctx, s)


CASES = {
    "exp_then_mul": (exp_then_mul, lambda x: (np.exp(x[0]) * x[1]).astype(np.float32)),
    "pad_before_zip": (pad_before_zip, lambda x: np.maximum(2 * x[0], x[1] + 1).astype(np.float32)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_trimmed_pair_runs_alike_on_cpu_and_visa(name):
    kernel, oracle = CASES[name]
    cpu, visa = npu_opt.run(kernel, X), npu_opt.run(kernel, X, backend="visa")
    np.testing.assert_array_equal(cpu.view(np.uint32), visa.view(np.uint32))
    want = oracle(X.astype(np.float64)).astype(np.float32)
    if name == "exp_then_mul":  # the engine's exp is not numpy's to the last bit
        np.testing.assert_allclose(cpu, want, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(cpu, want)


def test_the_pair_record_holds_a_trim_step_on_both_groups():
    text = npu_opt.compile(pad_before_zip).text
    verify_text(text, rngd())
    assert print_artifact(parse_visa(text)) == text
    (line,) = [x for x in text.splitlines() if "= vector_pair " in x]
    trim, pad = line.index("unit=NARROW_TRIM"), line.index("unit=WIDEN_PAD")
    assert trim < pad and "side=BOTH" in line[trim:pad]


@device(chip=1)
def trims_data(ctx: Context, x: HbmTensor[f32, CHIP, m("TI, TA, TF")]) -> HbmTensor[f32, CHIP, m("TA, TF")]:
    d = x.to_dm(ctx.tdma, DmTensor[f32, CHIP, m("1 # 2"), m("1 # 256"), m("TI, TA, TF")])
    s = (ctx.main.begin(d.view()).fetch(m("TA, TI"), m("TF")).collect(m("TA, TI"), m("TF"))
         .vector_init().vector_intra_slice_unzip(m("TI"), m("TA")).vector_narrow_trim(m("TF % 4")))
    return s.vector_fp_zip(FpBinaryOp.ADD_F).vector_widen_pad(m("TF % 4 # 8")).vector_final() \
        .commit_trim(m("TF")).commit(m("TA, TF")).to_hbm(ctx.tdma)


def test_trimming_live_cells_of_a_pair_is_ve_trim_2():
    (d,) = [d for d in npu_opt.check(trims_data).diagnostics if d.code.startswith("VE-TRIM")][:1]
    assert d.code == "VE-TRIM-2" and "drop data" in d.message
    assert d.file.endswith("test_pair_trim.py") and d.line == 87  # the trim's call
