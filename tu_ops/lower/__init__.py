"""Lowering of a traced kernel to tensor-unit ops (docs/reference/diagnostics.md, visa/visa.lark).

`lower(kernel, Options(...))` runs the passes `emulate-dtypes`, `lower-ops` and
`allocate-memory` under a verifying `PassManager` and returns the verified kernel.
"""

from tu_ops.lower.api import Lowered, lower
from tu_ops.lower.errors import L_CODES, LoweringRefusal
from tu_ops.lower.options import Options
from tu_ops.lower.passes import AllocateMemory, EmulateDtypes, LowerOps, PassManager, default_passes

__all__ = ["AllocateMemory", "EmulateDtypes", "L_CODES", "LowerOps", "Lowered", "LoweringRefusal",
           "Options", "PassManager", "default_passes", "lower"]
