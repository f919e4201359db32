"""The types one layer hands another, where the receiving layer cannot import the class.

Data flows DSL -> `ir` -> `tu_ops` -> `visa`, and `backends` consume them, so `ir` never
sees `tu_ops.target.Target` and `backends` never see `npu_opt.device.DeviceKernel`. Each
Protocol here says exactly what the lower layer reads of such an object, so a boundary
function is annotated with a real type instead of `Any` (tests/test_typed_boundaries.py
holds mypy to them). `Target` and `DeviceKernel` satisfy them structurally.
"""

from __future__ import annotations

from collections.abc import Callable
from os import PathLike
from typing import TYPE_CHECKING, Any, Protocol, Union

if TYPE_CHECKING:
    from ir.dtypes import DType
    from ir.machine import Constants
    from ir.kernel import TraceResult

__all__ = ["TargetFacts", "TargetRef", "Traceable", "target_facts"]


class TargetFacts(Protocol):
    """What the trace reads of a target object (`tu_ops.target.Target`)."""

    @property
    def name(self) -> str: ...

    @property
    def chips(self) -> tuple[int, ...]: ...

    @property
    def constants(self) -> Constants: ...  # ir/machine.py: the one class of a target's constants

    def bits_of(self, dtype: DType) -> int | None: ...


TargetRef = Union[str, "PathLike[str]", TargetFacts, None]
"""A target as a caller names it: a shipped name (`"rngd"`), a target file's path, a target
object, or None for the default."""


def target_facts(target: TargetRef) -> TargetFacts | None:
    """The target object, or None where the caller named none or `rngd` (a trace rule then
    uses the dtype's own width and `rngd`'s constants, ir/machine.py)."""
    return None if target is None or isinstance(target, (str, PathLike)) else target


class Traceable(Protocol):
    """A `@device` kernel as the layers below the DSL use it (`npu_opt.device.DeviceKernel`)."""

    @property
    def name(self) -> str: ...

    @property
    def chips(self) -> int: ...

    @property
    def fn(self) -> Callable[..., Any]: ...

    def trace(self, target: TargetRef = None) -> TraceResult: ...

    def param_trees(self) -> list[Any]: ...
