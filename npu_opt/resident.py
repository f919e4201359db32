"""Resident DM parameters in the DSL (docs/parameters.md, "Resident DM parameters").

`DmTensor[...]` as a parameter annotation is the reference's `&DmTensor<..>`: SRAM that
a `DmTensor[...].alloc(device)` buffer keeps across launches, read by the kernel in
place (no DMA brings it in). `Mut[DmTensor[...]]` is `&mut DmTensor<..>`: the kernel may
also write it, through `view_mut()` (`to_dm_view`, `commit_view`, `memset`), and the
buffer holds what the last write left when the launch completes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ir.diagnostic import Violation
from ir.errors import NpuOptError
from ir.location import Location
from ir.machine import constants
from ir.ops import Param
from ir.resident import Device as _Device, element_bytes
from ir.rules.space import validate_type
from npu_opt.params import Leaf, refuse_write
from npu_opt.stagebase import Poisoned, refuse_call
from npu_opt.tensor_data import DmTensorData
from npu_opt.trace import Tracer

if TYPE_CHECKING:  # the public classes, assembled above this module (npu_opt.tensor_data)
    from npu_opt.tensors import DmTensor

__all__ = ["Device", "resident_param", "refuse_read_only", "check_total"]


class Device(_Device):
    """`npu_opt.Device(target)` (ir/resident.py), its target checked when it is made: a name
    that is neither a built-in target nor a readable target file is a USAGE error here, not
    at the first launch (issue 39)."""

    def __init__(self, target: str = "rngd") -> None:
        from tu_ops.target import BUILTIN_TARGETS, get_target  # `check` loads no tu_ops (test_startup)

        super().__init__(target)
        try:
            get_target(target)
        except NpuOptError as e:
            known = ", ".join(BUILTIN_TARGETS)
            raise NpuOptError(f"Device({target!r}): no such target ({e}); a built-in target is one of {known}, "
                              "or give the path of a target description file", code="USAGE") from None


def resident_param(tracer: Tracer, leaf: Leaf, loc: Location, chips: int, writable: list[Any]) -> Any:
    """The `param` op and handle of a `DmTensor[...]` / `Mut[DmTensor[...]]` leaf."""
    t = leaf.spec.tensor.resolve()
    fault = t if isinstance(t, Violation) else validate_type(t, chips)
    if fault is not None:
        tracer.refuse(fault, loc, None)
        return Poisoned(leaf.name)
    op = Param(name=leaf.name, index=leaf.index, result=tracer.value(t), loc=loc, mutable=leaf.spec.writable)
    tracer.emit(op)
    handle = DmTensorData.handle(op.result, writable=leaf.spec.writable, label=leaf.name)
    if leaf.spec.writable:
        writable.append((op.result, handle))
    return handle


def check_total(tracer: Tracer) -> None:
    """RESIDENT-4 at the first resident parameter that no longer fits one slice's DM
    (MEM-1's bound, the target's DM_SLICE_BYTES) after the ones before it."""
    slice_bytes = constants().DM_SLICE_BYTES
    total = 0
    for op in tracer.ops:
        if isinstance(op, Param) and op.result.type.kind == "dm":
            total += -(-element_bytes(op.result.type) // 8) * 8
            if total > slice_bytes:
                tracer.refuse(Violation("RESIDENT-4", f"the resident DM parameters up to `{op.name}` take {total} "
                                        f"bytes of every slice; a slice holds {slice_bytes}",
                                        label="placed past the end of DM",
                                        help="keep fewer or smaller tensors resident"), op.loc, None)
                return


def refuse_read_only(t: DmTensor, method: str) -> Poisoned:
    """PARAM-1 at `view_mut()` of a read-only resident parameter."""
    return refuse_call(refuse_write(t.label or "?"), method)
