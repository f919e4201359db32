"""How the Contraction Engine rules word their messages, and which rule a mapping error fails.

`guarded` runs a checker with a `CurrentRule` it updates as it goes, so a MappingError
raised deep inside a mapping operation becomes a failure of the rule that needed it. The
text helpers render mappings, factors and digit ranges as a kernel author writes them.
"""

from __future__ import annotations

from collections.abc import Callable

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.errors import MappingError
from ir.mapping import ops as mops
from ir.mapping.factors import AxisFactor, BroadcastFactor, Factor, PaddingFactor
from ir.mapping.nodes import Mapping, written
from ir.mapping.ops import DigitRange

__all__ = ["CurrentRule", "guarded", "raw", "bytes_text", "frag_text", "factor_text", "list_text", "holding"]


class CurrentRule:
    """The rule being evaluated, so a MappingError deep inside becomes that rule's failure."""

    def __init__(self, code: str) -> None:
        self.code = code


def guarded(fn: Callable[[CurrentRule], Violation | None], first: str) -> Violation | None:
    rule = CurrentRule(first)
    try:
        return fn(rule)
    except MappingError as e:
        return Violation(rule.code, f"{rule.code} cannot be evaluated: {e.detail.splitlines()[0]}",
                         notes=(f"mapping error {e.code}",))


# --- text helpers --------------------------------------------------------------------------


def raw(mapping: Mapping) -> str:
    """The mapping as the user wrote it, without outer parentheses."""
    return written(mapping)


def bytes_text(n: int, dtype: DType) -> str:
    bits = n * dtype.bits
    b = f"{bits // 8}" if bits % 8 == 0 else f"{bits / 8:g}"
    return f"{n} x {dtype} = {b} bytes"


def frag_text(fr: DigitRange, sizes: dict[str, int]) -> str:
    """A live digit range as mapping text: `J / 8 % 4`, `K % 32`, `I`."""
    size = sizes.get(fr.axis, fr.hi)
    text = fr.axis if fr.lo == 1 else f"{fr.axis} / {fr.lo}"
    return text if fr.hi >= size and size % fr.lo == 0 and size // fr.lo == fr.extent else f"{text} % {fr.extent}"


def factor_text(f: Factor, sizes: dict[str, int]) -> str:
    if isinstance(f, AxisFactor):
        return frag_text(DigitRange(f.axis, f.step, f.step * f.extent), sizes)
    if isinstance(f, BroadcastFactor):
        return str(f.extent)
    if isinstance(f, PaddingFactor):
        return f"1 {f.kind.marker} {f.extent}"
    run = mops.ragged_run(f)
    if run is not None:
        return f"{frag_text(run, sizes)} # {f.extent}"
    return f"a ragged piece of {f.extent} cells"


def list_text(factors: list[Factor] | tuple[Factor, ...], sizes: dict[str, int]) -> str:
    return ", ".join(factor_text(f, sizes) for f in factors) or "1"


def holding(fr: DigitRange, named) -> list[str]:
    """The names of the `(name, mapping)` levels that have `fr` as a live fragment of a factor."""
    return [name for name, mp in named if any(fr in mops.factor_frags(f) for f in mp.factors())]

