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


def _wrap(v):
    return ((v.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def test_a_new_vrf_tensor_reads_as_zeros_on_cpu_and_in_the_interpreter():
    x = RNG.integers(-2**31, 2**31, (8, 64), dtype=np.int64).astype(np.int32)
    cpu = npu_opt.run(relu_new, x, backend="cpu")
    assert np.array_equal(cpu, np.maximum(x, 0))
    assert np.array_equal(npu_opt.run(relu_new, x, backend="visa"), cpu)


def test_a_new_vrf_tensor_lives_beside_a_loaded_one():
    from tu_ops.lower.vrf import vrf_placement
    from visa.parser import parse_visa

    x = RNG.integers(-2**31, 2**31, (8, 64), dtype=np.int64).astype(np.int32)
    b = RNG.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    cpu = npu_opt.run(bias_new, x, b, backend="cpu")
    assert np.array_equal(cpu, np.minimum(_wrap(x.astype(np.int64) + b[None, :]), 0))
    assert np.array_equal(npu_opt.run(bias_new, x, b, backend="visa"), cpu)
    kernel = parse_visa(npu_opt.compile(bias_new).text).kernel
    assert sorted(vrf_placement(kernel).values()) == [0, 512]   # 512 words of zeros, then the 64 of b


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
