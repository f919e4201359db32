"""`VrfTensor.reshape` / `TrfTensor.reshape` in the DSL: a register-file tensor relabelled.

`v.reshape(VrfTensor[dtype, chip, cluster, slice, element])` (the reference's
`unsafe { v.reshape::<...>() }`), or the level mappings alone,
`v.reshape(chip, cluster, slice, element)` (a TRF tensor adds its lane before the element).
The words stay where they are; the rules are the traced op's (`ir.rf_reshape`).
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.mapping.nodes import Mapping
from ir.rf_reshape import RfReshape
from npu_opt.stagebase import Poisoned, location_of, refuse_call
from npu_opt.tensors import TensorSpec
from npu_opt.trace import current

__all__ = ["rf_reshape"]


def _target(tensor: Any, levels: tuple[Any, ...]) -> Any:
    """The target type of `reshape(*levels)`, or a TYPE-6 violation."""
    t = tensor.value.type
    if len(levels) == 1 and isinstance(levels[0], TensorSpec):
        return levels[0].resolve()
    names = ("chip", "cluster", "slice", "lane", "element") if t.kind == "trf" else ("chip", "cluster", "slice",
                                                                                       "element")
    if len(levels) == len(names) and all(isinstance(x, Mapping) for x in levels):
        return type(t)(t.dtype, *levels)
    cls = "TrfTensor" if t.kind == "trf" else "VrfTensor"
    return Violation("TYPE-6", f"`reshape` of a {cls} takes the target type {cls}[...] or its {len(names)} level "
                               f"mappings ({', '.join(names)})", help=f"e.g. `.reshape({cls}[...])`")


def rf_reshape(tensor: Any, levels: tuple[Any, ...]) -> Any:
    """The register-file tensor `tensor` under the target type `levels` give."""
    loc = location_of("reshape")
    tracer = current()
    if isinstance(tensor.value, Poisoned) or tracer.is_poisoned(tensor.value):
        return Poisoned("reshape")
    target = _target(tensor, levels)
    if isinstance(target, Violation):
        return refuse_call(target, "reshape")
    op = RfReshape.build(tracer.value, input=tensor.value, to=target, loc=loc)
    if not tracer.emit(op):  # refused: later uses of it are silent
        return Poisoned("reshape")
    return type(tensor)(op.result)
