"""npu-opt: write RNGD tensor-unit kernels in Python (api.md section 2).

`from npu_opt import *` brings the kernel-writing surface: `axes`, `m`, `idx`, the mapping
value types and the scalar dtypes.
"""

from ir.dtypes import (
    DType, bf16, f4e2m1, f8e4m3, f8e5m2, f32, i4, i5, i8, i9, i16, i32, u8,
)
from ir.errors import MappingError, NpuOptError, OvershootError
from ir.mapping import (
    Axis, Index, Mapping, OutOfBounds, Padding, PaddingKind, axes, idx, m,
)

__version__ = "0.1.0"

__all__ = [
    "Axis", "DType", "Index", "Mapping", "MappingError", "NpuOptError", "OutOfBounds",
    "OvershootError", "Padding", "PaddingKind", "axes", "bf16", "f32", "f4e2m1", "f8e4m3",
    "f8e5m2", "i16", "i32", "i4", "i5", "i8", "i9", "idx", "m", "u8",
]
