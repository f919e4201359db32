"""The Vector Engine's stage family, whole: `vector_init` and every stage class it leads to.

The stage methods (npu_opt.vector_stages and the modules of its families) and the tables their
steps look up (npu_opt.vector_pass) sit below the written-out stage classes, which fill the
tables when imported (npu_opt.gen_stage_classes); this module imports those classes, so a
stream that enters the engine finds every class. npu_opt.stages loads it on the first
`vector_init` (npu_opt.stagebase.LazyStageMethod).
"""

from __future__ import annotations

from typing import Any

from ir.location import Location
from ir.vector import ops as vops
from npu_opt import vector_inter_first_classes, vector_pair_classes, vector_stage_classes
from npu_opt.stagebase import StreamStage, next_stage, stage_method
from npu_opt.vector_stages import VectorInitStream

__all__ = ["vector_init", "CLASS_MODULES"]

# the written-out stage classes, each module filling its tables (npu_opt.vector_pass)
CLASS_MODULES = (vector_stage_classes, vector_inter_first_classes, vector_pair_classes)


@stage_method("vector_init")
def vector_init(self: StreamStage, loc: Location) -> Any:
    """Enter the Vector Engine (i32 or f32 streams, VE-INIT-1)."""
    return next_stage(self, loc, vops.VectorInit, VectorInitStream)
