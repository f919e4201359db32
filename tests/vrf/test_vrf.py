"""VRF operands through every layer: cpu against a numpy oracle, the VISA artifact parsing
back to itself and verifying, and the interpreter agreeing with cpu bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import ClipBinaryOpF32, ClipBinaryOpI32, FpBinaryOp, FpMulAlu, FxpBinaryOp, f32, i32
from tu_ops import rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

from tests.vrf.kernels import rf_kernel, row_scale_kernel

RNG = np.random.default_rng(12)
XI = RNG.integers(-(2**31), 2**31, (8, 64), dtype=np.int64).astype(np.int32)
BI = RNG.integers(-(2**31), 2**31, 64, dtype=np.int64).astype(np.int32)
XF = (RNG.standard_normal((8, 64)) * 100).astype(np.float32)
BF = (RNG.standard_normal(64) * 100).astype(np.float32)


def _wrap(v):
    return ((v.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


# name -> (dtype, method, op, oracle(x, b), float path)
CASES = {
    "fxp_add": (i32, "vector_fxp", FxpBinaryOp.ADD_FXP, lambda x, b: _wrap(x.astype(np.int64) + b), False),
    "fxp_add_sat": (i32, "vector_fxp", FxpBinaryOp.ADD_FXP_SAT,
                    lambda x, b: np.clip(x.astype(np.int64) + b, -(2**31), 2**31 - 1).astype(np.int32), False),
    "clip_i32_min": (i32, "vector_clip", ClipBinaryOpI32.MIN, lambda x, b: np.minimum(x, b), False),
    "clip_f32_max": (f32, "vector_clip", ClipBinaryOpF32.MAX, lambda x, b: np.maximum(x, b), False),
    "clip_f32_add": (f32, "vector_clip", ClipBinaryOpF32.ADD, lambda x, b: (x + b).astype(np.float32), False),
    "fp_mul": (f32, "vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.MUL0), lambda x, b: (x * b).astype(np.float32), True),
    "fp_sub": (f32, "vector_fp_binary", FpBinaryOp.SUB_F, lambda x, b: (x - b).astype(np.float32), True),
}


def _kernel(name):
    dtype, method, op, _, float_path = CASES[name]
    return rf_kernel(dtype, method, op, name=f"vrf_{name}", float_path=float_path)


def _inputs(name):
    return (XI, BI) if CASES[name][0] is i32 else (XF, BF)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cpu_matches_the_oracle(name):
    x, b = _inputs(name)
    want = CASES[name][3](x, b[None, :])
    np.testing.assert_array_equal(npu_opt.run(_kernel(name), x, b), want)


@pytest.mark.parametrize("name", ["fxp_add_sat", "clip_f32_max", "fp_mul"])
def test_visa_agrees_with_cpu(name):
    k = _kernel(name)
    artifact = npu_opt.compile(k)
    assert print_artifact(parse_visa(artifact.text)) == artifact.text
    verify_text(artifact.text, rngd())
    x, b = _inputs(name)
    cpu, visa = npu_opt.run(k, x, b), execute(parse_visa(artifact.text), [x, b])
    np.testing.assert_array_equal(cpu.view(np.uint32), visa.view(np.uint32))


def test_the_records_name_the_vrf_tensor():
    text = npu_opt.compile(_kernel("fxp_add")).text
    (load,) = [t for t in text.splitlines() if " = vrf_load " in t]
    assert "words=64 base=0 write={time=[8:8], packet=[8:1]}" in load and '-> vrf[i32, "E"]' in load
    (rec,) = [t for t in text.splitlines() if " = vector_rf " in t]
    assert "{unit=FXP_RF, op=ADD_FXP, arg=0}" in rec and "rf_read=[{time=[8:0, 8:8], packet=[8:1]}]" in rec
    assert "dest=(VRF_LOAD, " in text


def test_a_per_row_operand_broadcasts_along_the_packet():
    """The VRF tensor over A alone is read 64 times per row; it was stored after a pass."""
    x, s = XF, (RNG.standard_normal(8)).astype(np.float32)
    want = (x * (s + np.float32(0.5))[:, None]).astype(np.float32)
    k = row_scale_kernel
    cpu = npu_opt.run(k, x, s)
    np.testing.assert_array_equal(cpu, want)
    artifact = npu_opt.compile(k)
    verify_text(artifact.text, rngd())
    np.testing.assert_array_equal(cpu.view(np.uint32), execute(parse_visa(artifact.text), [x, s]).view(np.uint32))


def test_the_traced_text_reads_back():
    from tests.kernel_text import parse_kernel

    text = row_scale_kernel.trace().kernel.text()
    assert "to_vrf" in text and "vrf<f32;" in text
    assert parse_kernel(text).text() == text


def test_a_moved_vrf_tensor_is_refused_by_the_verifier():
    from visa.artifact import VisaTextError

    text = npu_opt.compile(_kernel("fxp_add")).text
    assert " base=0 write=" in text
    with pytest.raises(VisaTextError, match="VRF allocation places this tensor at word 0"):
        verify_text(text.replace(" base=0 write=", " base=64 write="), rngd())


def test_one_pass_reads_two_vrf_tensors():
    from tests.vrf.kernels import two_vrf_kernel

    x = RNG.integers(-1000, 1000, (8, 64)).astype(np.int32)
    b, c = RNG.integers(-1000, 1000, 64).astype(np.int32), RNG.integers(-50, 50, 64).astype(np.int32)
    want = np.minimum((x.astype(np.int64) + b) * c, b).astype(np.int32)
    cpu = npu_opt.run(two_vrf_kernel, x, b, c)
    np.testing.assert_array_equal(cpu, want)
    artifact = npu_opt.compile(two_vrf_kernel)
    (rec,) = [t for t in artifact.text.splitlines() if " = vector_rf " in t]
    assert "{unit=FXP_RF, op=MUL_INT, arg=1}, {unit=CLIP_I32_RF, op=MIN, arg=0}" in rec
    assert print_artifact(parse_visa(artifact.text)) == artifact.text
    verify_text(artifact.text, rngd())
    np.testing.assert_array_equal(execute(parse_visa(artifact.text), [x, b, c]), cpu)
