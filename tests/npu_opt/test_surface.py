"""The public API is a deliberate list: growing it must show up as a diff here."""

from __future__ import annotations

import npu_opt


def test_npu_opt_all_is_pinned():
    assert sorted(npu_opt.__all__) == sorted(["BinaryArgMode", "BitReq", "Cmp", "GroupId", "Branched", "TagGuard", "Stash"] + [
        "LogicBinaryOpI32", "LogicBinaryOpF32", "FpTernaryOp", "FpDivBinaryOp", "TernaryArgMode"] + [
        "InterSliceReduceOpF32", "InterSliceReduceOpI32"] + [
        "Artifact", "Axis", "ClipBinaryOpF32", "ClipBinaryOpI32", "CompileError", "Context", "DType", "DeviceKernel", "Diagnostic", "DmTensor",
        "DmTensorView", "FpBinaryOp", "FpMulAlu", "FpUnaryOp", "FxpBinaryOp", "HbmTensor", "HbmTensorView", "HbmTensorViewMut", "Index", "IntraSliceReduceOpF32", "IntraSliceReduceOpI32", "LaneMode", "Mapping", "MappingError", "Mut", "NpuOptError",
        "OutOfBounds", "OvershootError", "Padding", "PaddingKind", "Report", "SpmTensor", "SwitchConfig", "TagMode", "TrfTensor",
        "VisaFormatError", "VrfTensor", "axes", "bf16", "device", "f32", "f4e2m1", "f8e4m3", "f8e5m2", "i16",
        "i32", "i4", "i5", "i8", "i9", "idx", "m", "u8",
    ] + ["HbmScalar", "RuntimeScalar", "u32", "i64", "u64", "usize"]  # docs/runtime.md
        + ["Device", "DmBuffer"]  # resident DM parameters, docs/parameters.md
        + ["TrfAddress"])  # the address of `to_trf_at`, docs/machine/index.md#explicit-addresses


def test_star_import_never_shadows_builtins():
    namespace: dict = {}
    exec("from npu_opt import *", namespace)
    assert not {"compile", "check", "run"} & set(namespace)
    assert all(hasattr(npu_opt, name) for name in npu_opt.__all__)


def test_grammar_ships_as_package_data():
    from importlib.resources import files

    assert "mapping_expr" in files("ir.mapping").joinpath("mapping.lark").read_text()
