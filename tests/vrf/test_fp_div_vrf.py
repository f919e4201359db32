"""`vector_fp_div` with a VRF divisor (one per row, RMSNorm's shape): cpu against numpy,
the artifact verifying and reading back, the interpreter agreeing with cpu bit for bit.
The divisor is stored by `.to_vrf()` with its element inferred."""

from __future__ import annotations

import numpy as np

import npu_opt
from npu_opt import *  # noqa: F403
from tu_ops import rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

axes(A=8, E=64)  # noqa: F405
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405
RNG = np.random.default_rng(41)


@device(chip=1)  # noqa: F405
def row_divide(ctx: Context, x: HbmTensor[f32, Chip, m("A, E")],  # noqa: F405
               s: HbmTensor[f32, Chip, m("A")]) -> HbmTensor[f32, Chip, m("A, E")]:  # noqa: F405
    s = s.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("A")])  # noqa: F405
    s_vrf = ctx.sub.begin(s.view()).fetch(m("1"), m("A")).collect(m("1"), m("A")).to_vrf()  # element inferred
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
    y = (ctx.main.begin(x.view()).fetch(m("A, E / 4"), m("E % 4"))  # noqa: F405
         .collect(m("A, E / 4"), m("E % 4 # 8")).vector_init()  # noqa: F405
         .vector_intra_slice_tag(TagMode.ZERO).vector_narrow_trim(m("E % 4"))  # noqa: F405
         .vector_fp_div(s_vrf)
         .vector_widen_pad(m("E % 4 # 8")).vector_final().commit_trim(m("E % 4")).commit())  # noqa: F405
    return y.to_hbm(ctx.tdma)


def test_a_vrf_divisor_divides_each_row():
    x = (RNG.standard_normal((8, 64)) * 10).astype(np.float32)
    s = (RNG.uniform(0.5, 4.0, 8) * np.sign(RNG.standard_normal(8))).astype(np.float32)
    want = (x.astype(np.float64) / s[:, None].astype(np.float64)).astype(np.float32)
    cpu = npu_opt.run(row_divide, x, s)
    np.testing.assert_array_equal(cpu, want)  # f32 division is exactly rounded
    artifact = npu_opt.compile(row_divide)
    assert "unit=FP_DIV_RF" in artifact.text
    assert print_artifact(parse_visa(artifact.text)) == artifact.text
    verify_text(artifact.text, rngd())
    visa = execute(parse_visa(artifact.text), [x, s])
    np.testing.assert_array_equal(cpu.view(np.uint32), visa.view(np.uint32))


def test_to_vrf_infers_the_streams_element():
    (load,) = [op for op in row_divide.trace().kernel.ops if type(op).__name__ == "ToVrf"]
    assert load.element.equivalent(m("A")) and load.result.type.element.equivalent(m("A"))  # noqa: F405
