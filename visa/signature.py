"""The in-out part of a VISA signature (format version 2) and the version refusal.

Version 2 added in-out parameters: a parameter the kernel writes in place prints
`param %1 "out" inout : hbm[...]`, and for each one, in parameter order, a line
`final %1 = %14` names the value holding its final contents (the parameter itself when
nothing wrote it). A version-1 text is refused with a message saying to recompile,
since its signature cannot say which parameters are written.
"""

from __future__ import annotations

from typing import Any

import attrs

from tu_ops.base import Ref
from tu_ops.program import KernelParam
from visa.artifact import FORMAT_VERSION

__all__ = ["FinalLine", "version_message", "check_finals", "check_final_types", "signature_param"]


@attrs.frozen
class FinalLine:
    """A parsed `final %p = %v` line, with its position."""

    param: int
    value: int
    line: int
    column: int


def version_message(found: int) -> str:
    """Why a text of format `found` is refused."""
    if 0 < found < FORMAT_VERSION:
        return (f"VISA format version {found} is older than this reader (version {FORMAT_VERSION}, which "
                "records in-out parameters in the signature); recompile the kernel with this npu-opt")
    return f"VISA format version {found} is not supported; this reader reads version {FORMAT_VERSION}"


def check_finals(dec: Any, params: list[Any], finals: list[FinalLine], defs: dict[int, Any], meta: Any) -> list[Ref]:
    """One `final` per in-out parameter, in parameter order, naming defined values."""
    inout = [p for p in params if p.inout]
    for i, f in enumerate(finals):
        if i >= len(inout) or inout[i].ref.id != f.param:
            raise dec.error(f"`final %{f.param}` must name the in-out parameters in order "
                            f"({', '.join(str(p.ref) for p in inout) or 'there are none'})", f.line, f.column)
        if f.value not in defs:
            raise dec.error(f"%{f.value} is not defined", f.line, f.column)
    if len(finals) != len(inout):
        raise dec.error(f"in-out parameter {inout[len(finals)].ref} has no `final` line", meta.line, meta.column)
    return [Ref(f.value) for f in finals]


def check_final_types(dec: Any, kernel: Any, finals: list[FinalLine]) -> None:
    """The final value of an in-out parameter has the parameter's type."""
    types = {p.ref.id: p.type for p in kernel.params} | {op.result.id: op.output_type for op in kernel.ops()}
    for p, f in zip([p for p in kernel.params if p.inout], finals):
        if types.get(f.value) != p.type:
            raise dec.error(f"the final value %{f.value} of {p.ref} has another type than the parameter",
                            f.line, f.column)


def signature_param(dec: Any, ref: Ref, name: str, t: Any, inout: bool, at: int | None, raw: Any) -> KernelParam:
    """A `param` line: an HBM tensor, an `HbmScalar` (never in-out, docs/runtime.md), or a
    resident DM tensor, which alone names its DM address (`dm[...] at N`, ir/resident.py)."""
    if t.kind == "dm" and at is None:
        raise dec.error("a resident DM parameter names its DM address: `... : dm[...] at N`", raw.line, raw.col)
    if at is not None and t.kind != "dm":
        raise dec.error(f"only a resident DM parameter has an address (`at`), not a `{t.kind}` one", raw.line, raw.col)
    if t.kind not in ("hbm", "dm") and not (t.kind == "scalar" and not inout):
        raise dec.error(f"a parameter is an HBM tensor, a resident DM tensor or a scalar, not a `{t.kind}` type",
                        raw.line, raw.col)
    return KernelParam(ref, name, t, inout, at)
