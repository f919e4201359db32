"""How the DMA and commit rules word a digit range or a factor of a mapping: `A / 8 % 4`,
`1 # 4`, `4` (a broadcast)."""

from __future__ import annotations

from ir.mapping.factors import AxisFactor, BroadcastFactor, Factor, PaddingFactor
from ir.mapping.ops import DigitRange

__all__ = ["frag_text", "factor_text"]


def frag_text(fr: DigitRange, axis_size: int | None = None) -> str:
    """A digit range as mapping text: `A`, `A % 8`, `A / 8`, `A / 8 % 4`."""
    if fr.lo == 1 and (axis_size is None or fr.hi != axis_size):
        return f"{fr.axis} % {fr.hi}"
    if fr.lo == 1:
        return fr.axis
    if axis_size is not None and fr.hi == axis_size:
        return f"{fr.axis} / {fr.lo}"
    return f"{fr.axis} / {fr.lo} % {fr.extent}"


def factor_text(f: Factor) -> str:
    """One factor as mapping-like text: `A / 8 % 4`, `1 # 4`, `4` (a broadcast), or a ragged piece."""
    if isinstance(f, AxisFactor):
        return frag_text(DigitRange(f.axis, f.step, f.step * f.extent), f.axis_size)
    if isinstance(f, PaddingFactor):
        return f"1 {f.kind.marker} {f.extent}"
    if isinstance(f, BroadcastFactor):
        return str(f.extent)
    return f"ragged piece of {f.extent} cells"
