"""What every stream stage method checks first: its arguments' kinds (TYPE-6) and the
dtype-dependent typestate (TYPE-2, TYPE-4, TYPE-5). Below the stage classes (npu_opt.stages,
npu_opt.collect_stages, npu_opt.output_stages).
"""

from __future__ import annotations

from typing import Any

from ir import ops
from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.mapping.nodes import Mapping
from npu_opt.stagebase import Poisoned, StreamStage, kind_error
from npu_opt.tensor_data import TrfTensorData
from ir.words import a_an

__all__ = ["_kind_fault", "_typestate"]

_STAGING = frozenset({DType.I5, DType.I9})


_MAC_TYPES = frozenset({DType.I4, DType.I5, DType.I8, DType.I9, DType.F8E4M3, DType.F8E5M2, DType.BF16})


def _kind_fault(**args: Any) -> Violation | None:
    """The first argument of the wrong kind; an argument that is itself the result of a
    refused call gives a silent fault (code ""), so refusals do not cascade."""
    for name, value in args.items():
        if isinstance(value, Poisoned):
            return Violation("", "argument comes from a refused call")
        want = _KINDS[name.rstrip("_")]
        if want is Mapping and not isinstance(value, Mapping):
            hint = f'write m("{value}")' if isinstance(value, str) else "build mappings with m(\"...\")"
            return kind_error(f"`{name}` must be a mapping built by m(), not {type(value).__name__}", hint)
        if want is DType and not isinstance(value, DType):
            return kind_error(f"`{name}` must be an npu-opt dtype such as bf16 or i8, not {value!r:.40}")
        if want is ops.LaneMode and not isinstance(value, ops.LaneMode):
            return kind_error(f"`mode` must be LaneMode.INTERLEAVED or LaneMode.SEQUENTIAL, not {value!r:.40}")
        if want is int and (isinstance(value, bool) or not isinstance(value, int)):
            return kind_error(f"`{name}` must be an int, not {type(value).__name__}")
        if want is TrfTensorData and not isinstance(value, TrfTensorData):
            return kind_error(f"`trf` must be a TRF tensor made by `.to_trf()`, not {type(value).__name__}")
    return None


_KINDS: dict[str, Any] = {"time": Mapping, "packet": Mapping, "out_time": Mapping, "out_packet": Mapping,
                          "out_slice": Mapping, "lane": Mapping, "element": Mapping,  # out_slice: the switch's
                          "dtype": DType, "mode": ops.LaneMode, "zero_point": int, "trf": TrfTensorData}


def _typestate(stage: StreamStage, name: str) -> Violation | None:
    """TYPE-2, then TYPE-4 / TYPE-5: methods offered only for some dtypes."""
    d = stage.type.dtype
    if d in _STAGING and name != "contract_outer":
        return Violation("TYPE-2", f"`{name}` cannot be called on {a_an(d)} stream",
                         label=f"{d} streams exist only to feed contract_outer",
                         help="i5/i9 come from fetch_zero_point_sub and may only be collected and "
                              "contracted; drop the zero-point subtraction to store or cast the data")
    if name == "contract_outer" and d not in _MAC_TYPES:
        return Violation("TYPE-4", f"`contract_outer` is not offered on {a_an(d)} stream",
                         help="contraction operands are i4, i5, i8, i9, f8e4m3, f8e5m2 or bf16")
    if name == "cast" and d not in (DType.I32, DType.F32):
        return Violation("TYPE-5", f"`cast` is not offered on {a_an(d)} stream",
                         help="the Cast Engine narrows i32 or f32 streams")
    return None
