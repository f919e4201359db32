"""Lowered tensor-unit ops, their verifiers and the target description (docs/reference/diagnostics.md, tu_ops/targets/rngd.toml)."""

from tu_ops.base import Alloc, OpVerifyError, Ref, TuOp, VerifyContext
from tu_ops.commit import CastOp, CommitOp, WritePlan
from tu_ops.contract import ContractOuter, LaneFold, PacketReduce, TimeLoop, TimeReduce, TrfRead, inner_time
from tu_ops.dma import DmaCommand, DmaEntry, DmaOp, aggregate_of
from tu_ops.enums import (
    CELL_FORMATS, Aggregate, CellFormat, CollectFlits, CommitConversion, Conversion, ConversionKind,
    DestKind, DmaKind, FeedElementType, LaneMode, LoopKind, Region, TuContext, Width,
)
from tu_ops.feed import DEST_MNEMONICS, FEED_DEST_ELEMENT_TYPES, FeedBuffer, FeedDest, FeedSource, ReadShape
from tu_ops.printing import mapping_text, type_text, value_text
from tu_ops.program import DmAllocation, KernelParam, LoweredKernel, TrfAllocation, TuProgram
from tu_ops.target import (
    BUILTIN_TARGETS, RNGD_SHA256, Constants, EmulationPath, MacEntry, PairEntry, Target,
    TargetSchemaError, ZeroPointEntry, canonical_json, get_target, load_target, rngd, target_sha256,
)
from tu_ops.target_file import dump_target_json, dump_target_toml, parse_target_data
from tu_ops.trf import TrfLoad

# Every lowered op class, in pipeline order (docs/reference/diagnostics.md).
OP_CLASSES: tuple[type[TuOp], ...] = (
    FeedBuffer, TrfLoad, ContractOuter, PacketReduce, TimeReduce, LaneFold, CastOp, CommitOp, DmaOp,
)

__all__ = [
    "Aggregate", "Alloc", "BUILTIN_TARGETS", "CELL_FORMATS", "CastOp", "CellFormat", "CollectFlits",
    "CommitConversion", "CommitOp", "Constants", "ContractOuter", "Conversion", "ConversionKind",
    "DEST_MNEMONICS", "DestKind", "DmAllocation", "DmaCommand", "DmaEntry", "DmaKind", "DmaOp",
    "EmulationPath", "FEED_DEST_ELEMENT_TYPES", "FeedBuffer", "FeedDest", "FeedElementType",
    "FeedSource", "KernelParam", "LaneFold", "LaneMode", "LoopKind", "LoweredKernel", "MacEntry",
    "OP_CLASSES", "OpVerifyError", "PacketReduce", "PairEntry", "RNGD_SHA256", "ReadShape", "Ref",
    "Region", "Target", "TargetSchemaError", "TimeLoop", "TimeReduce", "TrfAllocation", "TrfLoad",
    "TrfRead", "TuContext", "TuOp", "TuProgram", "VerifyContext", "Width", "WritePlan",
    "ZeroPointEntry", "aggregate_of", "canonical_json", "dump_target_json", "dump_target_toml",
    "get_target", "inner_time", "load_target", "mapping_text", "parse_target_data", "rngd",
    "target_sha256", "type_text", "value_text",
]
