"""Lowered tensor-unit ops, their verifiers and the target description (docs/reference/diagnostics.md, tu_ops/targets/rngd.toml)."""

from typing import TYPE_CHECKING, Any

from ir.lazy_exports import LazyExports

# Every public name, imported on first use (PEP 562, ir/lazy_exports.py): resolving a
# target (tu_ops.target) must not import every lowered op and its verifiers.
if TYPE_CHECKING:
    from tu_ops.base import Alloc, OpVerifyError, Ref, TuOp, VerifyContext
    from tu_ops.commit import CastOp, CommitOp, WritePlan
    from tu_ops.contract import ContractOuter, LaneFold, PacketReduce, TimeLoop, TimeReduce, TrfRead, inner_time
    from tu_ops.dma import DmaCommand, DmaEntry, DmaOp, aggregate_of
    from tu_ops.enums import (
        CELL_FORMATS, Aggregate, CellFormat, CollectFlits, CommitConversion, Conversion, ConversionKind,
        DmaKind, FeedElementType, LaneMode, LoopKind, Region, TuContext, Width,
    )
    from tu_ops.feed import DestKind, FeedBuffer, FeedDest, FeedSource, ReadShape
    from tu_ops.printing import mapping_text, type_text, value_text
    from tu_ops.program import DmAllocation, KernelParam, LoweredKernel, TrfAllocation, TuProgram
    from tu_ops.target import (
        BUILTIN_TARGETS, RNGD_SHA256, Constants, EmulationPath, MacEntry, PairEntry, Target, TargetSchemaError,
        ZeroPointEntry, canonical_json, get_target, load_target, parse_target_data, rngd, target_sha256,
    )
    from tu_ops.transpose import TransposeOp
    from tu_ops.trf import TrfLoad
    from tu_ops.vector import VectorEngineOp, VeOpName, VeStep, VeUnit


_EXPORTS = LazyExports()  # the same names, loaded at run time on first use


@_EXPORTS.loader
def _tu_ops_base() -> dict[str, Any]:
    from tu_ops.base import Alloc, OpVerifyError, Ref, TuOp, VerifyContext
    return locals()


@_EXPORTS.loader
def _tu_ops_commit() -> dict[str, Any]:
    from tu_ops.commit import CastOp, CommitOp, WritePlan
    return locals()


@_EXPORTS.loader
def _tu_ops_contract() -> dict[str, Any]:
    from tu_ops.contract import ContractOuter, LaneFold, PacketReduce, TimeLoop, TimeReduce, TrfRead, inner_time
    return locals()


@_EXPORTS.loader
def _tu_ops_dma() -> dict[str, Any]:
    from tu_ops.dma import DmaCommand, DmaEntry, DmaOp, aggregate_of
    return locals()


@_EXPORTS.loader
def _tu_ops_enums() -> dict[str, Any]:
    from tu_ops.enums import (
        CELL_FORMATS, Aggregate, CellFormat, CollectFlits, CommitConversion, Conversion, ConversionKind,
        DmaKind, FeedElementType, LaneMode, LoopKind, Region, TuContext, Width,
    )
    return locals()


@_EXPORTS.loader
def _tu_ops_feed() -> dict[str, Any]:
    from tu_ops.feed import DestKind, FeedBuffer, FeedDest, FeedSource, ReadShape
    return locals()


@_EXPORTS.loader
def _tu_ops_printing() -> dict[str, Any]:
    from tu_ops.printing import mapping_text, type_text, value_text
    return locals()


@_EXPORTS.loader
def _tu_ops_program() -> dict[str, Any]:
    from tu_ops.program import DmAllocation, KernelParam, LoweredKernel, TrfAllocation, TuProgram
    return locals()


@_EXPORTS.loader
def _tu_ops_target() -> dict[str, Any]:
    from tu_ops.target import (
        BUILTIN_TARGETS, RNGD_SHA256, Constants, EmulationPath, MacEntry, PairEntry, Target, TargetSchemaError,
        ZeroPointEntry, canonical_json, get_target, load_target, parse_target_data, rngd, target_sha256,
    )
    return locals()


@_EXPORTS.loader
def _tu_ops_transpose() -> dict[str, Any]:
    from tu_ops.transpose import TransposeOp
    return locals()


@_EXPORTS.loader
def _tu_ops_trf() -> dict[str, Any]:
    from tu_ops.trf import TrfLoad
    return locals()


@_EXPORTS.loader
def _tu_ops_vector() -> dict[str, Any]:
    from tu_ops.vector import VectorEngineOp, VeOpName, VeStep, VeUnit
    return locals()



def __getattr__(name: str) -> Any:
    if name == "OP_CLASSES":  # computed, not imported: cached on the package like the others
        # every lowered op class, in pipeline order: the classes the record modules declare
        # (docs/reference/diagnostics.md), ordered by (PIPELINE_RANK, MNEMONIC)
        from tu_ops import (commit, contract, dma, dma_view, feed, gather, redistribute, rf_reshape,  # noqa: F401
                            runtime, spm, transpose, trf, vector, vector_branch, vector_inter, vector_pair, vrf)
        from tu_ops.base import TU_OPS

        globals()[name] = tuple(sorted(TU_OPS.global_values(), key=lambda cls: (cls.PIPELINE_RANK, cls.MNEMONIC)))
        return globals()[name]
    return _EXPORTS.get(__name__, name)


__all__ = [
    "Aggregate", "Alloc", "BUILTIN_TARGETS", "CELL_FORMATS", "CastOp", "CellFormat", "CollectFlits",
    "CommitConversion", "CommitOp", "Constants", "ContractOuter", "Conversion", "ConversionKind",
    "DestKind", "DmAllocation", "DmaCommand", "DmaEntry", "DmaKind", "DmaOp",
    "EmulationPath", "FeedBuffer", "FeedDest", "FeedElementType",
    "FeedSource", "KernelParam", "LaneFold", "LaneMode", "LoopKind", "LoweredKernel", "MacEntry",
    "OP_CLASSES", "OpVerifyError", "PacketReduce", "PairEntry", "RNGD_SHA256", "ReadShape", "Ref",
    "Region", "Target", "TargetSchemaError", "TimeLoop", "TimeReduce", "TrfAllocation", "TrfLoad",
    "TransposeOp", "TrfRead", "TuContext", "TuOp", "TuProgram", "VeOpName", "VeStep", "VeUnit", "VectorEngineOp",
    "VerifyContext", "Width", "WritePlan",
    "ZeroPointEntry", "aggregate_of", "canonical_json",
    "get_target", "inner_time", "load_target", "mapping_text", "parse_target_data", "rngd",
    "target_sha256", "type_text", "value_text",
]
