"""The Vector Register File in the traced IR: `to_vrf(element)` and the VRF operand rules.

`to_vrf` stores a collected (or Vector-Engine-final) i32 / f32 stream in the VRF of
every slice as `element`, a layout of the stream's `[time, packet]` (rule VRF-5). One
slice's file holds the target's `VRF_BYTES` (8192 on rngd; VRF-1). A binary Vector Engine op
(`vector_fxp`, `vector_clip`, `vector_fp_binary`) may read a VRF tensor instead of a
constant: the tensor's element is broadcast over the stream by axis name, so it must hold
the stream's scalar, live in the same slices and name no axis the stream lacks (VRF-2).
The ops of one pass may read different VRF tensors.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.machine import constants
from ir.dtypes import DType
from ir.mapping import ops as mops
from ir.mapping.nodes import Mapping, pair_all
from ir.op_frame import attr, rule
from ir.ops import InputOp
from ir.types import Type, VrfType
from ir.words import a_an

__all__ = ["ToVrf", "rf_mismatch", "frag_covered", "vrf_type_problem"]

_SCALARS = (DType.I32, DType.F32)


def frag_covered(inner: Mapping, outer: Mapping) -> bool:
    """Whether every axis digit `inner` names is also named by `outer`."""
    have = mops.frag(outer)
    for fr in mops.frag(inner):
        if not any(h.axis == fr.axis and h.lo <= fr.lo and fr.hi <= h.hi for h in have):
            return False
    return True


@attrs.frozen(kw_only=True)
class ToVrf(InputOp):
    """Store the stream in the VRF of each slice, laid out as `element`."""

    STAGE = "to_vrf"
    element: Mapping = attr()

    def infer_type(self) -> Type:
        t = self.input.type
        return VrfType(t.dtype, t.chip, t.cluster, t.slice, self.element)

    @rule("VRF-4")
    def _scalar(self) -> Violation | None:
        d = self.input.type.dtype
        if d in _SCALARS:
            return None
        return Violation("VRF-4", f"the VRF holds i32 and f32 values, not {d}",
                         label=f"this stream holds {d}",
                         help="widen the stream first (`.fetch_cast(i32)` / `.fetch_cast(f32)`)")

    @rule("VRF-5")
    def _layout(self) -> Violation | None:
        t = self.input.type
        stream = pair_all([t.time, t.packet])
        if frag_covered(self.element, stream) and frag_covered(stream, self.element):
            return None
        return Violation("VRF-5", f"the VRF element {self.element} is not a layout of the stream's "
                         f"[{t.time}, {t.packet}]",
                         label="`to_vrf` stores the stream's elements, it neither adds nor drops an axis",
                         help="name exactly the axes of the stream's time and packet, padding left out")

    @rule("VRF-1")
    def _capacity(self) -> Violation | None:
        return _too_big(self.element, "split the operand over more slices, or store a smaller tile per pass")


def _too_big(element: Mapping, hint: str) -> Violation | None:
    """VRF-1: a VRF tensor whose element does not fit one slice's register file."""
    n, vrf_bytes = element.size * 4, constants().VRF_BYTES
    if n <= vrf_bytes:
        return None
    return Violation("VRF-1", f"the VRF tensor needs {n} bytes per slice ({element.size} x 4), more "
                     f"than the {vrf_bytes} bytes of one slice's register file",
                     label=f"element {element} has {element.size} cells", help=hint)


@rule("VRF-2")
def rf_mismatch(op: Any) -> Violation | None:
    """VRF-2 for a Vector Engine op reading a VRF tensor: same scalar, same slices, and no
    axis of the tensor missing from the stream (the rule of every op with an `rf` operand,
    assigned in its class body: `_rf_match = rf_mismatch`)."""
    if not op.rf:
        return None
    s, v = op.input.type, op.rf[0].type
    why = None
    if getattr(v, "kind", None) != "vrf":
        why = f"the operand is {a_an(getattr(v, 'kind', type(v).__name__))} value, not a VRF tensor"
    elif v.dtype != s.dtype:
        why = f"the VRF tensor holds {v.dtype}, the stream {s.dtype}"
    elif v.spatial() != s.spatial():
        why = (f"the VRF tensor lives in slices ({v.chip}, {v.cluster}, {v.slice}), the stream in "
               f"({s.chip}, {s.cluster}, {s.slice})")
    elif not frag_covered(v.element, pair_all([s.time, s.packet])):
        why = f"the VRF element {v.element} names axes the stream's [{s.time}, {s.packet}] lacks"
    if why is None:
        return None
    return Violation("VRF-2", f"`{op.STAGE}`: the VRF operand does not match the stream: {why}",
                     label="a VRF operand is read once per stream element, by axis name",
                     help="store the operand with the stream's dtype and slice mapping, over axes of the stream")


def vrf_type_problem(t: Any) -> Violation | None:
    """VRF-4 and VRF-1 for a VRF tensor made by `VrfTensor[...].new()` (None for other kinds):
    it holds i32 or f32, and its element fits one slice's register file."""
    if getattr(t, "kind", None) != "vrf":
        return None
    if t.dtype not in _SCALARS:
        return Violation("VRF-4", f"the VRF holds i32 and f32 values, not {t.dtype}",
                         label=f"this VRF tensor is declared with {t.dtype}", help="declare it `VrfTensor[i32, ...]` "
                         "or `VrfTensor[f32, ...]`")
    return _too_big(t.element, "declare a smaller element, or spread the tensor over more slices")
