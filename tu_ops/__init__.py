"""Lowered tensor-unit ops, their verifiers and the target description (docs/reference/diagnostics.md, tu_ops/targets/rngd.toml)."""

import importlib
from typing import Any

# Every public name and the module defining it, imported on first use (PEP 562): resolving
# a target (tu_ops.target) must not import every lowered op and its verifiers.
_LAZY: dict[str, str] = {
    **dict.fromkeys(["Alloc", "OpVerifyError", "Ref", "TuOp", "VerifyContext"], "tu_ops.base"),
    **dict.fromkeys(["CastOp", "CommitOp", "WritePlan"], "tu_ops.commit"),
    **dict.fromkeys(["ContractOuter", "LaneFold", "PacketReduce", "TimeLoop", "TimeReduce", "TrfRead",
                     "inner_time"], "tu_ops.contract"),
    **dict.fromkeys(["DmaCommand", "DmaEntry", "DmaOp", "aggregate_of"], "tu_ops.dma"),
    **dict.fromkeys(["CELL_FORMATS", "Aggregate", "CellFormat", "CollectFlits", "CommitConversion", "Conversion",
                     "ConversionKind", "DestKind", "DmaKind", "FeedElementType", "LaneMode",
                     "LoopKind", "Region", "TuContext", "Width"], "tu_ops.enums"),
    **dict.fromkeys(["DEST_MNEMONICS", "FEED_DEST_ELEMENT_TYPES", "FeedBuffer", "FeedDest", "FeedSource",
                     "ReadShape"], "tu_ops.feed"),
    **dict.fromkeys(["mapping_text", "type_text", "value_text"], "tu_ops.printing"),
    **dict.fromkeys(["DmAllocation", "KernelParam", "LoweredKernel", "TrfAllocation", "TuProgram"], "tu_ops.program"),
    **dict.fromkeys(["BUILTIN_TARGETS", "RNGD_SHA256", "Constants", "EmulationPath", "MacEntry", "PairEntry",
                     "Target", "TargetSchemaError", "ZeroPointEntry", "canonical_json",
                     "get_target", "load_target", "rngd", "target_sha256"], "tu_ops.target"),
    **dict.fromkeys(["dump_target_json", "dump_target_toml", "parse_target_data"], "tu_ops.target_file"),
    **dict.fromkeys(["TransposeOp"], "tu_ops.transpose"),
    **dict.fromkeys(["TrfLoad"], "tu_ops.trf"),
    **dict.fromkeys(["VectorEngineOp", "VeOpName", "VeStep", "VeUnit"], "tu_ops.vector"),
}


def __getattr__(name: str) -> Any:
    if name == "OP_CLASSES":
        value: Any = _op_classes()
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'tu_ops' has no attribute {name!r}")
    globals()[name] = value
    return value


def _op_classes() -> tuple[type, ...]:
    """Every lowered op class, in pipeline order (docs/reference/diagnostics.md)."""
    from tu_ops.commit import CastOp, CommitOp
    from tu_ops.contract import ContractOuter, LaneFold, PacketReduce, TimeReduce
    from tu_ops.dma import DmaOp
    from tu_ops.feed import FeedBuffer
    from tu_ops.transpose import TransposeOp
    from tu_ops.trf import TrfLoad
    from tu_ops.vector import VectorEngineOp

    from tu_ops.vrf import VectorRfOp, VrfLoad

    return (FeedBuffer, TrfLoad, ContractOuter, PacketReduce, TimeReduce, LaneFold, VectorEngineOp, CastOp,
            TransposeOp, CommitOp, DmaOp, VrfLoad, VectorRfOp)


__all__ = [
    "Aggregate", "Alloc", "BUILTIN_TARGETS", "CELL_FORMATS", "CastOp", "CellFormat", "CollectFlits",
    "CommitConversion", "CommitOp", "Constants", "ContractOuter", "Conversion", "ConversionKind",
    "DEST_MNEMONICS", "DestKind", "DmAllocation", "DmaCommand", "DmaEntry", "DmaKind", "DmaOp",
    "EmulationPath", "FEED_DEST_ELEMENT_TYPES", "FeedBuffer", "FeedDest", "FeedElementType",
    "FeedSource", "KernelParam", "LaneFold", "LaneMode", "LoopKind", "LoweredKernel", "MacEntry",
    "OP_CLASSES", "OpVerifyError", "PacketReduce", "PairEntry", "RNGD_SHA256", "ReadShape", "Ref",
    "Region", "Target", "TargetSchemaError", "TimeLoop", "TimeReduce", "TrfAllocation", "TrfLoad",
    "TransposeOp", "TrfRead", "TuContext", "TuOp", "TuProgram", "VeOpName", "VeStep", "VeUnit", "VectorEngineOp",
    "VerifyContext", "Width", "WritePlan",
    "ZeroPointEntry", "aggregate_of", "canonical_json", "dump_target_json", "dump_target_toml",
    "get_target", "inner_time", "load_target", "mapping_text", "parse_target_data", "rngd",
    "target_sha256", "type_text", "value_text",
]
