"""npu-opt: write RNGD tensor-unit kernels in Python (docs/getting-started.md).

`from npu_opt import *` brings the kernel-writing surface: `axes`, `m`, `idx`, `device`,
`Context`, the tensor types, `LaneMode` and the scalar dtypes. The entry points
`npu_opt.check`, `npu_opt.compile` and `npu_opt.run` are called qualified, so a star import
never shadows the builtin `compile`.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from ir.version import VERSION

# Every public name and the module defining it. They are imported on first use (PEP 562):
# `npu-opt --version` or `explain` should not pay for the whole DSL. `from npu_opt import *`
# imports them all, as before.
_LAZY: dict[str, str] = {
    "Diagnostic": "ir.diagnostic",
    **dict.fromkeys(["DType", "bf16", "f4e2m1", "f8e4m3", "f8e5m2", "f32", "i4", "i5", "i8", "i9",
                     "i16", "i32", "u8"], "ir.dtypes"),
    **dict.fromkeys(["CompileError", "MappingError", "NpuOptError", "OvershootError",
                     "VisaFormatError"], "ir.errors"),
    **dict.fromkeys(["Axis", "Index", "Mapping", "OutOfBounds", "Padding", "PaddingKind", "axes",
                     "idx", "m"], "ir.mapping"),
    "LaneMode": "ir.types",
    "SwitchConfig": "ir.switch.config",
    "Artifact": "npu_opt.compile_api",
    "compile": "npu_opt.compile_api",  # qualified use only, not in __all__
    "Context": "npu_opt.context",
    "DeviceKernel": "npu_opt.device",
    "device": "npu_opt.device",
    "Report": "npu_opt.report",
    "check": "npu_opt.report",
    "run": "npu_opt.run",
    **dict.fromkeys(["DmTensor", "DmTensorView", "HbmTensor", "TrfTensor", "VrfTensor"], "npu_opt.tensors"),
    **dict.fromkeys(["Mut", "HbmTensorView", "HbmTensorViewMut"], "npu_opt.params"),
    **dict.fromkeys(["ClipBinaryOpF32", "ClipBinaryOpI32", "FpBinaryOp", "FpMulAlu", "FpUnaryOp",
                     "FxpBinaryOp", "TagMode"], "ir.vector.enums"),
    # pair mode, tags and branches (issue 13)
    **dict.fromkeys(["BinaryArgMode", "BitReq", "Cmp", "GroupId"], "ir.vector.enums"),
    # the rest of the element-wise chain (issue 12)
    **dict.fromkeys(["LogicBinaryOpI32", "LogicBinaryOpF32", "FpTernaryOp", "FpDivBinaryOp", "TernaryArgMode"],
                    "ir.vector.enums"),
    **dict.fromkeys(["Branched", "TagGuard"], "npu_opt.vector_branch"),
    "Stash": "npu_opt.vector_stash",
    **dict.fromkeys(["IntraSliceReduceOpF32", "IntraSliceReduceOpI32"], "ir.vector.enums"),
    **dict.fromkeys(["InterSliceReduceOpF32", "InterSliceReduceOpI32"], "ir.vector.enums"),
}


def __getattr__(name: str) -> Any:
    if name == "testing":  # `npu_opt.testing` after a bare `import npu_opt`
        return importlib.import_module("npu_opt.testing")
    module = _LAZY.get(name)
    if module is None:  # the op enum of a Vector Engine unit declared in ir/vector/units.py
        units = () if name.startswith("_") else importlib.import_module("ir.vector.units").SPECS.values()
        value = next((s.op_enum for s in units if getattr(s.op_enum, "__name__", None) == name), None)
        if value is None:
            raise AttributeError(f"module 'npu_opt' has no attribute {name!r}")
        return value
    value = getattr(importlib.import_module(module), name)
    object.__setattr__(sys.modules[__name__], name, value)
    return value


class _Package(types.ModuleType):
    """Keeps `npu_opt.run` and `npu_opt.device` the functions: importing the submodules of
    the same names must not replace them with the modules (it would without this)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__version__ = VERSION

__all__ = [
    "Artifact", "Axis", "CompileError", "Context", "DType", "DeviceKernel", "Diagnostic", "DmTensor",
    "DmTensorView", "HbmTensor", "Index", "LaneMode", "Mapping", "MappingError", "NpuOptError",
    "OutOfBounds", "OvershootError", "Padding", "PaddingKind", "Report", "TrfTensor", "VrfTensor",
    "VisaFormatError", "axes", "bf16", "device", "f32", "f4e2m1", "f8e4m3", "f8e5m2", "i16",
    "i32", "i4", "i5", "i8", "i9", "idx", "m", "u8",
    # kernel parameters (docs page "Kernel parameters and results")
    "Mut", "HbmTensorView", "HbmTensorViewMut",
    # the Vector Engine's enums
    "ClipBinaryOpF32", "ClipBinaryOpI32", "FpBinaryOp", "FpMulAlu", "FpUnaryOp", "FxpBinaryOp", "TagMode",
    # the Switch Engine's configuration
    "SwitchConfig",
    "BinaryArgMode", "BitReq", "Cmp", "GroupId",
    "LogicBinaryOpI32", "LogicBinaryOpF32", "FpTernaryOp", "FpDivBinaryOp", "TernaryArgMode",
    "Branched", "TagGuard", "Stash",
    "IntraSliceReduceOpF32", "IntraSliceReduceOpI32",
    "InterSliceReduceOpF32", "InterSliceReduceOpI32",
]
