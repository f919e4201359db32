"""The traced kernel graph and the types every layer shares: dtypes, mappings, errors."""

from ir.attrs_watch import watch
from ir.errors import (
    CompileError, InternalError, LoweringError, MappingError, NpuOptError, OvershootError,
    TypeCheckError, VerifyError, VisaFormatError,
)

watch()  # attrs compiles our classes' methods once per machine, not once per process

__all__ = [
    "CompileError", "InternalError", "LoweringError", "MappingError", "NpuOptError",
    "OvershootError", "TypeCheckError", "VerifyError", "VisaFormatError",
]
