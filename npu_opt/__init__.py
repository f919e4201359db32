"""npu-opt: write RNGD tensor-unit kernels in Python (docs/getting-started.md).

`from npu_opt import *` brings the kernel-writing surface: `axes`, `m`, `idx`, `device`,
`Context`, the tensor types, `LaneMode` and the scalar dtypes. The entry points
`npu_opt.check`, `npu_opt.compile` and `npu_opt.run` are called qualified, so a star import
never shadows the builtin `compile`.
"""

from ir.diagnostic import Diagnostic
from ir.dtypes import (
    DType, bf16, f4e2m1, f8e4m3, f8e5m2, f32, i4, i5, i8, i9, i16, i32, u8,
)
from ir.errors import CompileError, MappingError, NpuOptError, OvershootError, VisaFormatError
from ir.mapping import (
    Axis, Index, Mapping, OutOfBounds, Padding, PaddingKind, axes, idx, m,
)
from ir.ops import LaneMode
from npu_opt.compile_api import Artifact, compile  # noqa: A004 - qualified use only, not in __all__
from npu_opt.context import Context
from npu_opt.device import DeviceKernel, device
from npu_opt.report import Report, check
from npu_opt.run import run
from npu_opt.tensors import DmTensor, DmTensorView, HbmTensor, TrfTensor

__version__ = "0.1.0"

__all__ = [
    "Artifact", "Axis", "CompileError", "Context", "DType", "DeviceKernel", "Diagnostic", "DmTensor",
    "DmTensorView", "HbmTensor", "Index", "LaneMode", "Mapping", "MappingError", "NpuOptError",
    "OutOfBounds", "OvershootError", "Padding", "PaddingKind", "Report", "TrfTensor",
    "VisaFormatError", "axes", "bf16", "device", "f32", "f4e2m1", "f8e4m3", "f8e5m2", "i16",
    "i32", "i4", "i5", "i8", "i9", "idx", "m", "u8",
]
