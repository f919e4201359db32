"""`VrfTensor[...].new()`: a VRF tensor of zeros made inside a kernel, read as the VRF
operand of a Vector Engine op; cpu against numpy, visa == cpu bit for bit, and the VRF
rules (VRF-4 dtype, VRF-1 one tensor's size, VRF-6 the live tensors together)."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *  # noqa: F403
from ir.errors import CompileError
from tests.vrf.kernels import _store

axes(A=8, E=64, H=2048, W=4096)  # noqa: F405

Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405
RNG = np.random.default_rng(12)


def _pass(ctx, x, axis="A, E"):
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m(axis)])  # noqa: F405
    time = "A, E / 8" if axis == "A, E" else "H / 8"
    packet = "E % 8" if axis == "A, E" else "H % 8"
    return (ctx.main.begin(x.view()).fetch(m(time), m(packet)).collect(m(time), m(packet))  # noqa: F405
            .vector_init().vector_intra_slice_tag(TagMode.ZERO)), packet  # noqa: F405


@device(chip=1)  # noqa: F405
def relu_new(ctx: Context, x: HbmTensor[i32, Chip, m("A, E")]) -> HbmTensor[i32, Chip, m("A, E")]:  # noqa: F405
    """y = max(x, 0): the zeros come from a VRF tensor made by new()."""
    zero = VrfTensor[i32, Chip, Cluster, Slice, m("E")].new()  # noqa: F405
    s, packet = _pass(ctx, x)
    y = s.vector_clip(ClipBinaryOpI32.MAX, zero).vector_final().commit_trim(m(packet)).commit()  # noqa: F405
    return y.to_hbm(ctx.tdma)


@device(chip=1)  # noqa: F405
def bias_new(ctx: Context, x: HbmTensor[i32, Chip, m("A, E")],  # noqa: F405
             b: HbmTensor[i32, Chip, m("E")]) -> HbmTensor[i32, Chip, m("A, E")]:  # noqa: F405
    """y = min(x + b, 0): a loaded VRF tensor and a new() one read by one pass."""
    zero = VrfTensor[i32, Chip, Cluster, Slice, m("A, E")].new()  # noqa: F405
    b_vrf = _store(ctx, b, i32, m("E"))  # noqa: F405
    s, packet = _pass(ctx, x)
    y = (s.vector_fxp(FxpBinaryOp.ADD_FXP, b_vrf).vector_clip(ClipBinaryOpI32.MIN, zero)  # noqa: F405
         .vector_final().commit_trim(m(packet)).commit())  # noqa: F405
    return y.to_hbm(ctx.tdma)


@device(chip=1)  # noqa: F405
def scale_new(ctx: Context, x: HbmTensor[f32, Chip, m("A, E")]) -> HbmTensor[f32, Chip, m("A, E")]:  # noqa: F405
    """y = x * 0.0 (f32): a per-row f32 VRF tensor of zeros, broadcast along the columns."""
    zero = VrfTensor[f32, Chip, Cluster, Slice, m("A")].new()  # noqa: F405
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
    y = (ctx.main.begin(x.view()).fetch(m("A, E / 4"), m("E % 4"))  # noqa: F405
         .collect(m("A, E / 4"), m("E % 4 # 8")).vector_init()  # noqa: F405
         .vector_intra_slice_tag(TagMode.ZERO).vector_narrow_trim(m("E % 4"))  # noqa: F405
         .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL1), zero)  # noqa: F405
         .vector_widen_pad(m("E % 4 # 8")).vector_final().commit_trim(m("E % 4")).commit())  # noqa: F405
    return y.to_hbm(ctx.tdma)


NEG = TagGuard.matches([BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE, BitReq.IGNORE])  # noqa: F405


@device(chip=1)  # noqa: F405
def tagged_new(ctx: Context, x: HbmTensor[i32, Chip, m("A, E")]) -> HbmTensor[i32, Chip, m("A, E")]:  # noqa: F405
    """y = min(x < 0 ? 3 x : x, 0): a tagged pass (`vector_branch_rf`) reading a new() tensor."""
    zero = VrfTensor[i32, Chip, Cluster, Slice, m("E")].new()  # noqa: F405
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
    y = (ctx.main.begin(x.view()).fetch(m("A, E / 8"), m("E % 8")).collect(m("A, E / 8"), m("E % 8"))  # noqa: F405
         .vector_init()
         .vector_intra_slice_tag(TagMode.COMPARISON([Cmp.LESS(0), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE]))  # noqa: F405
         .vector_fxp(FxpBinaryOp.MUL_INT, Branched.imm(NEG, 3))  # noqa: F405
         .vector_clip(ClipBinaryOpI32.MIN, zero)  # noqa: F405
         .vector_final().commit_trim(m("E % 8")).commit())  # noqa: F405
    return y.to_hbm(ctx.tdma)


def _artifact(kernel):
    """The compiled text, checked to read back to itself and to verify."""
    from tu_ops import rngd
    from visa.parser import parse_visa
    from visa.printer import print_artifact
    from visa.verify import verify_text

    text = npu_opt.compile(kernel).text
    assert print_artifact(parse_visa(text)) == text
    verify_text(text, rngd())
    return text


def _wrap(v):
    return ((v.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def test_a_new_vrf_tensor_reads_as_zeros_on_cpu_and_in_the_interpreter():
    x = RNG.integers(-2**31, 2**31, (8, 64), dtype=np.int64).astype(np.int32)
    cpu = npu_opt.run(relu_new, x, backend="cpu")
    assert np.array_equal(cpu, np.maximum(x, 0))
    assert np.array_equal(npu_opt.run(relu_new, x, backend="visa"), cpu)
    text = _artifact(relu_new)
    assert 'tensor_new element_type=i32 : vrf[i32, "1", "1 # 2", "1 # 256", "E"]' in text
    (rec,) = [t for t in text.splitlines() if " = vector_rf " in t]
    assert "{unit=CLIP_I32_RF, op=MAX, arg=0}" in rec and "rf=[%1]" in rec


def test_an_f32_new_vrf_tensor_is_read_as_plus_zero():
    x = RNG.uniform(-1e3, 1e3, (8, 64)).astype(np.float32)
    cpu = npu_opt.run(scale_new, x, backend="cpu")
    want = x * np.float32(0.0)   # signed zeros: -x * +0 is -0
    assert np.array_equal(cpu.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(npu_opt.run(scale_new, x, backend="visa").view(np.uint32), cpu.view(np.uint32))


def test_a_tagged_pass_reads_a_new_vrf_tensor():
    x = RNG.integers(-10**6, 10**6, (8, 64)).astype(np.int32)
    x64 = x.astype(np.int64)
    cpu = npu_opt.run(tagged_new, x, backend="cpu")
    assert np.array_equal(cpu, np.minimum(np.where(x64 < 0, 3 * x64, x64), 0).astype(np.int32))
    assert np.array_equal(npu_opt.run(tagged_new, x, backend="visa"), cpu)
    assert " = vector_branch_rf " in _artifact(tagged_new)


def test_a_new_vrf_tensor_lives_beside_a_loaded_one():
    from tu_ops.lower.vrf import vrf_placement
    from visa.parser import parse_visa

    x = RNG.integers(-2**31, 2**31, (8, 64), dtype=np.int64).astype(np.int32)
    b = RNG.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    cpu = npu_opt.run(bias_new, x, b, backend="cpu")
    assert np.array_equal(cpu, np.minimum(_wrap(x.astype(np.int64) + b[None, :]), 0))
    assert np.array_equal(npu_opt.run(bias_new, x, b, backend="visa"), cpu)
    kernel = parse_visa(_artifact(bias_new)).kernel
    assert sorted(vrf_placement(kernel).values()) == [0, 512]   # 512 words of zeros, then the 64 of b


def test_the_uninit_report_covers_vrf_tensors_made_by_new():
    """Nothing writes a VRF tensor made by new() (the chip does not clear it): with
    report_uninit the pass that reads it is refused at its line; a stored one is not."""
    from backends.cpu import CpuBackend, CpuOptions
    from ir.errors import NpuOptError
    from tests.vrf.kernels import two_vrf_kernel

    x = np.ones((8, 64), np.int32)
    checked = CpuBackend(CpuOptions(report_uninit=True))
    with pytest.raises(NpuOptError, match=r"`vector_clip` reads \d+ cell\(s\) of %\d+ that nothing wrote") as info:
        checked.run(relu_new, (x,))
    assert info.value.code == "VIEW-12"
    b, c = np.arange(64, dtype=np.int32), np.full(64, 3, np.int32)
    assert np.array_equal(checked.run(two_vrf_kernel, (x, b, c)), np.minimum((x + b) * c, b))


def _refused(kernel):
    with pytest.raises(CompileError) as info:
        npu_opt.compile(kernel)
    return info.value


def test_a_new_vrf_tensor_of_bf16_is_vrf_4_at_its_line():
    @device(chip=1)  # noqa: F405
    def bad_dtype(ctx: Context, x: HbmTensor[i32, Chip, m("A, E")]) -> HbmTensor[i32, Chip, m("A, E")]:  # noqa: F405
        zero = VrfTensor[bf16, Chip, Cluster, Slice, m("E")].new()  # noqa: F405
        s, packet = _pass(ctx, x)
        y = s.vector_clip(ClipBinaryOpI32.MAX, zero).vector_final().commit_trim(m(packet)).commit()  # noqa: F405
        return y.to_hbm(ctx.tdma)

    err = _refused(bad_dtype)
    assert [d.code for d in err.diagnostics][:1] == ["VRF-4"]
    assert "VrfTensor[bf16" in str(err)


def test_a_new_vrf_tensor_larger_than_one_slice_file_is_vrf_1():
    @device(chip=1)  # noqa: F405
    def too_big(ctx: Context, x: HbmTensor[i32, Chip, m("A, E")]) -> HbmTensor[i32, Chip, m("A, E")]:  # noqa: F405
        zero = VrfTensor[i32, Chip, Cluster, Slice, m("W")].new()  # noqa: F405
        s, packet = _pass(ctx, x)
        y = s.vector_clip(ClipBinaryOpI32.MAX, zero).vector_final().commit_trim(m(packet)).commit()  # noqa: F405
        return y.to_hbm(ctx.tdma)

    err = _refused(too_big)
    assert [d.code for d in err.diagnostics][:1] == ["VRF-1"]
    assert "16384 bytes per slice" in str(err)


def test_two_full_new_vrf_tensors_live_together_are_vrf_6():
    @device(chip=1)  # noqa: F405
    def two_full(ctx: Context, x: HbmTensor[i32, Chip, m("H")]) -> HbmTensor[i32, Chip, m("H")]:  # noqa: F405
        z1 = VrfTensor[i32, Chip, Cluster, Slice, m("H")].new()  # noqa: F405
        z2 = VrfTensor[i32, Chip, Cluster, Slice, m("H")].new()  # noqa: F405
        s, packet = _pass(ctx, x, "H")
        y = s.vector_fxp(FxpBinaryOp.ADD_FXP, z1).vector_clip(ClipBinaryOpI32.MAX, z2)  # noqa: F405
        return y.vector_final().commit_trim(m(packet)).commit().to_hbm(ctx.tdma)  # noqa: F405

    err = _refused(two_full)
    assert [d.code for d in err.diagnostics] == ["VRF-6"]
    assert "z2 = VrfTensor" in str(err)
    assert "8192 bytes requested, 8192 of 8192" in str(err)


@pytest.mark.parametrize("damage, code, says", [
    (lambda ln: ln.replace('"E"]', '"W"]'), "DMAOP-6", "4096 words exceed the slice's 2048-word VRF"),
    (lambda ln: ln.replace("i32", "bf16"), "DMAOP-6", "the VRF holds i32 and f32 words, not bf16"),
    (lambda ln: ln.replace("i32", "f32"), "VEOP-6", "the VRF tensor %1 holds f32, the stream i32"),
])
def test_the_verifier_refuses_a_damaged_vrf_tensor_new(damage, code, says):
    from tu_ops import rngd
    from visa.artifact import VisaTextError
    from visa.verify import verify_text

    text = _artifact(relu_new).replace("axes A=8, E=64", "axes A=8, E=64, W=4096")
    (line,) = [t for t in text.splitlines() if " = tensor_new " in t]
    with pytest.raises(VisaTextError, match=rf"\[{code}\] .*{says}"):
        verify_text(text.replace(line, damage(line)), rngd())
