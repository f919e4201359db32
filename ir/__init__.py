"""The traced kernel graph and the types every layer shares: dtypes, mappings, errors."""

from ir.errors import (
    CompileError, InternalError, LoweringError, MappingError, NpuOptError, OvershootError,
    TypeCheckError, VerifyError, VisaFormatError,
)

__all__ = [
    "CompileError", "InternalError", "LoweringError", "MappingError", "NpuOptError",
    "OvershootError", "TypeCheckError", "VerifyError", "VisaFormatError",
]
