"""The traced kernel graph and the types every layer shares: dtypes, mappings, errors."""

from ir.attrs_code_cache import install as _install_attrs_code_cache

_install_attrs_code_cache()  # before any class of the compiler is made (ir/attrs_code_cache.py)

from ir.errors import (
    CompileError, InternalError, LoweringError, MappingError, NpuOptError, OvershootError,
    TypeCheckError, VerifyError, VisaFormatError,
)

__all__ = [
    "CompileError", "InternalError", "LoweringError", "MappingError", "NpuOptError",
    "OvershootError", "TypeCheckError", "VerifyError", "VisaFormatError",
]
