"""npu-opt: write RNGD tensor-unit kernels in Python (docs/getting-started.md).

`from npu_opt import *` brings the kernel-writing surface: `axes`, `m`, `idx`, `device`,
`Context`, the tensor types, `LaneMode` and the scalar dtypes. The entry points
`npu_opt.check`, `npu_opt.compile` and `npu_opt.run` are called qualified, so a star import
never shadows the builtin `compile`.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from ir.lazy_exports import LazyExports
from ir.version import VERSION

# Every public name, imported on first use (PEP 562, ir/lazy_exports.py): `npu-opt --version`
# or `explain` should not pay for the whole DSL. `from npu_opt import *` imports them all.
if TYPE_CHECKING:
    from ir.diagnostic import Diagnostic
    from ir.dtypes import DType, bf16, f4e2m1, f8e4m3, f8e5m2, f32, i4, i5, i8, i9, i16, i32, u8
    from ir.errors import CompileError, MappingError, NpuOptError, OvershootError, VisaFormatError
    from ir.mapping import Axis, Index, Mapping, OutOfBounds, Padding, PaddingKind, axes, idx, m
    from ir.switch.config import SwitchConfig
    from ir.types import LaneMode
    from ir.vector.enums import (
        BinaryArgMode, BitReq, ClipBinaryOpF32, ClipBinaryOpI32, Cmp, FpBinaryOp, FpDivBinaryOp, FpMulAlu,
        FpTernaryOp, FpUnaryOp, FxpBinaryOp, GroupId, InterSliceReduceOpF32, InterSliceReduceOpI32,
        IntraSliceReduceOpF32, IntraSliceReduceOpI32, LogicBinaryOpF32, LogicBinaryOpI32, TagMode, TernaryArgMode,
    )
    from npu_opt.addresses import TrfAddress
    from npu_opt.compile_api import Artifact, compile  # `compile`: qualified use only, not in __all__
    from npu_opt.context import Context
    from npu_opt.device import DeviceKernel, device
    from npu_opt.params import HbmTensorView, HbmTensorViewMut, Mut
    from ir.resident import DmBuffer
    from npu_opt.resident import Device
    from npu_opt.report import Report, check
    from npu_opt.run import run
    from npu_opt.runtime_scalars import HbmScalar, RuntimeScalar, i64, u32, u64, usize
    from npu_opt.tensors import DmTensor, DmTensorView, HbmTensor, TrfTensor, VrfTensor
    from npu_opt.spm import SpmTensor
    from npu_opt.branched import Branched, TagGuard
    from ir.vector.operands import Stash


_EXPORTS = LazyExports()  # the same names, loaded at run time on first use


@_EXPORTS.loader
def _ir_diagnostic() -> dict[str, Any]:
    from ir.diagnostic import Diagnostic
    return locals()


@_EXPORTS.loader
def _ir_dtypes() -> dict[str, Any]:
    from ir.dtypes import DType, bf16, f4e2m1, f8e4m3, f8e5m2, f32, i4, i5, i8, i9, i16, i32, u8
    return locals()


@_EXPORTS.loader
def _ir_errors() -> dict[str, Any]:
    from ir.errors import CompileError, MappingError, NpuOptError, OvershootError, VisaFormatError
    return locals()


@_EXPORTS.loader
def _ir_mapping() -> dict[str, Any]:
    from ir.mapping import Axis, Index, Mapping, OutOfBounds, Padding, PaddingKind, axes, idx, m
    return locals()


@_EXPORTS.loader
def _ir_switch_config() -> dict[str, Any]:
    from ir.switch.config import SwitchConfig
    return locals()


@_EXPORTS.loader
def _ir_types() -> dict[str, Any]:
    from ir.types import LaneMode
    return locals()


@_EXPORTS.loader
def _ir_vector_enums() -> dict[str, Any]:
    from ir.vector.enums import (
        BinaryArgMode, BitReq, ClipBinaryOpF32, ClipBinaryOpI32, Cmp, FpBinaryOp, FpDivBinaryOp, FpMulAlu,
        FpTernaryOp, FpUnaryOp, FxpBinaryOp, GroupId, InterSliceReduceOpF32, InterSliceReduceOpI32,
        IntraSliceReduceOpF32, IntraSliceReduceOpI32, LogicBinaryOpF32, LogicBinaryOpI32, TagMode, TernaryArgMode,
    )
    return locals()


@_EXPORTS.loader
def _npu_opt_addresses() -> dict[str, Any]:
    from npu_opt.addresses import TrfAddress
    return locals()


@_EXPORTS.loader
def _npu_opt_compile_api() -> dict[str, Any]:
    from npu_opt.compile_api import Artifact, compile
    return locals()


@_EXPORTS.loader
def _npu_opt_context() -> dict[str, Any]:
    from npu_opt.context import Context
    return locals()


@_EXPORTS.loader
def _npu_opt_device() -> dict[str, Any]:
    from npu_opt.device import DeviceKernel, device
    return locals()


@_EXPORTS.loader
def _npu_opt_params() -> dict[str, Any]:
    from npu_opt.params import HbmTensorView, HbmTensorViewMut, Mut
    return locals()


@_EXPORTS.loader
def _ir_resident() -> dict[str, Any]:
    from ir.resident import DmBuffer
    return locals()


@_EXPORTS.loader
def _npu_opt_resident() -> dict[str, Any]:
    from npu_opt.resident import Device  # checks its target when made (issue 39)
    return locals()


@_EXPORTS.loader
def _npu_opt_report() -> dict[str, Any]:
    from npu_opt.report import Report, check
    return locals()


@_EXPORTS.loader
def _npu_opt_run() -> dict[str, Any]:
    from npu_opt.run import run
    return locals()


@_EXPORTS.loader
def _npu_opt_runtime_scalars() -> dict[str, Any]:
    from npu_opt.runtime_scalars import HbmScalar, RuntimeScalar, i64, u32, u64, usize
    return locals()


@_EXPORTS.loader
def _npu_opt_tensors() -> dict[str, Any]:
    from npu_opt.tensors import DmTensor, DmTensorView, HbmTensor, TrfTensor, VrfTensor
    return locals()


@_EXPORTS.loader
def _npu_opt_spm() -> dict[str, Any]:
    from npu_opt.spm import SpmTensor
    return locals()


@_EXPORTS.loader
def _npu_opt_branched() -> dict[str, Any]:
    from npu_opt.branched import Branched, TagGuard
    return locals()


@_EXPORTS.loader
def _ir_vector_operands() -> dict[str, Any]:
    from ir.vector.operands import Stash
    return locals()



def __getattr__(name: str) -> Any:
    if name == "testing":  # `npu_opt.testing` after a bare `import npu_opt`
        import npu_opt.testing as testing  # not `from npu_opt import`: that asks this function again
        return testing
    try:
        return _EXPORTS.get(__name__, name)
    except AttributeError:
        # `from npu_opt import stages` mid-import asks here first: a module's name is lower
        # case, an op enum's a class name, so the import system loads the module without the
        # units and their numerics
        if not name[:1].isupper():
            raise
    # the op enum of a Vector Engine unit declared in ir/vector/units.py (a unit may be added at run time)
    from ir.vector.units import SPECS
    value = next((s.op_enum for s in SPECS.values() if getattr(s.op_enum, "__name__", None) == name), None)
    if value is None:
        raise AttributeError(f"module 'npu_opt' has no attribute {name!r}")
    return value


class _Package(types.ModuleType):
    """Keeps `npu_opt.run` and `npu_opt.device` the functions: importing the submodules of
    the same names must not replace them with the modules (it would without this)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and name in _EXPORTS.loaders:
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
    # resident DM parameters (docs/parameters.md)
    "Device", "DmBuffer",
    # scratchpad memory (docs/machine/spm.md)
    "SpmTensor",
    # the Vector Engine's enums
    "ClipBinaryOpF32", "ClipBinaryOpI32", "FpBinaryOp", "FpMulAlu", "FpUnaryOp", "FxpBinaryOp", "TagMode",
    # the Switch Engine's configuration
    "SwitchConfig",
    "BinaryArgMode", "BitReq", "Cmp", "GroupId",
    "LogicBinaryOpI32", "LogicBinaryOpF32", "FpTernaryOp", "FpDivBinaryOp", "TernaryArgMode",
    "Branched", "TagGuard", "Stash",
    "IntraSliceReduceOpF32", "IntraSliceReduceOpI32",
    "InterSliceReduceOpF32", "InterSliceReduceOpI32",
    # runtime scalars and guards (docs/runtime.md)
    "HbmScalar", "RuntimeScalar", "u32", "i64", "u64", "usize",
    # the TRF address of `to_trf_at` (npu_opt.addresses)
    "TrfAddress",
]
