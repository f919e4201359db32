"""Explicit on-chip addresses: the `_at` forms of the on-chip transfers, checked, not honoured.

furiosa-opt lets a kernel choose where the tensor a transfer makes lives: `to_dm_at`,
`commit_at`, `dma_gather_scaled_at` and `to_dm_pcopy_at` take a DM byte address,
`to_vrf_at` a VRF byte address, `to_trf_at` a `TrfAddress` (a half of the TRF, or all of
it). npu-opt places every on-chip tensor itself (docs/machine/index.md, "Explicit
addresses"), so an `_at` form checks its address and then traces exactly as its
address-free twin: the same op, the same VISA. The checks: the address's kind (TYPE-6);
for DM and VRF, that it is aligned and leaves the tensor inside its memory (ADDR-1); for
the TRF, that the tensor fits the half it names (TRF-2). Two tensors given overlapping
addresses do not alias (docs/changes.md#kd-explicit-addresses).

The address comes last, after the twin's arguments, as the reference's runtime argument
does after its type parameters; when it is not passed by name and the twin's arguments are
left out (`.commit_at(0)`, `.to_trf_at(TrfAddress.FIRST_HALF)`), the last argument given is
the address.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable
from typing import Any

from ir.diagnostic import Violation
from ir.location import Location
from ir.machine import constants
from ir.words import a_an
from ir.errors import TypeCheckError
from npu_opt.stagebase import Poisoned, kind_error, location_of, refuse_dead, stage_method
from npu_opt.trace import current

__all__ = ["TrfAddress", "at_stage", "at_call", "DM", "VRF", "TRF"]

DM, VRF, TRF = "DM", "VRF", "TRF"
_ALIGN = {DM: 8, VRF: 4}  # a DM tensor starts on an 8-byte word (MEM-3), a VRF tensor on a 4-byte one


class TrfAddress(enum.Enum):
    """Where `to_trf_at` asks for its TRF tensor: the first or the second half of each slice's
    TRF (half of its bytes each) or the whole of it."""

    FIRST_HALF = "first half"
    SECOND_HALF = "second half"
    FULL = "full"

    @property
    def capacity(self) -> int:
        """The bytes of each slice's TRF this address spans."""
        c = constants()
        return c.TRF_BYTES if self is TrfAddress.FULL else c.TRF_HALF_BYTES

    def __str__(self) -> str:
        return f"TrfAddress.{self.name}"

    def __call__(self, *args: object, **kwargs: object) -> None:
        """`TrfAddress.FULL()`: a variant without data is a value (porting rule 4)."""
        raise TypeCheckError(f"`{self}` is a value, so it cannot be called: write `{self}` without parentheses",
                             code="TYPE-6")


def _take_address(values: dict[str, Any], names: list[str]) -> Any:
    """Pop the address from `values` (the twin's arguments by name, then "address"): passed
    by name or last, or else the last of the twin's arguments that was given."""
    address = values.pop("address", None)
    if address is None:
        given = [n for n in names if values.get(n) is not None]
        if given:
            address = values.pop(given[-1])
    return address


def _kind_fault(name: str, memory: str, address: Any) -> Violation | None:
    """TYPE-6 unless `address` is a TrfAddress (TRF) or a non-negative int (DM, VRF)."""
    if memory == TRF:
        if isinstance(address, TrfAddress):
            return None
        return kind_error(f"the address of `{name}` is a TrfAddress, not {address!r}",
                          f"pass TrfAddress.FIRST_HALF, TrfAddress.SECOND_HALF or TrfAddress.FULL last, "
                          f"e.g. `.{name}(TrfAddress.FULL)`")
    if isinstance(address, int) and not isinstance(address, bool) and address >= 0:
        return None
    return kind_error(f"the address of `{name}` is {a_an(memory)} byte address, a non-negative int, not {address!r}",
                      f"pass the address last, e.g. `.{name}(..., 0)`")


def _fit_fault(name: str, memory: str, address: Any, result: Any) -> Violation | None:
    """ADDR-1 or TRF-2 when the tensor `result` made at `address` does not fit there."""
    t = result.value.type
    bytes_ = -(-t.element.size * t.dtype.bits // 8)
    if memory == TRF:
        total = t.lane.size * bytes_
        if total <= address.capacity:
            return None
        return Violation("TRF-2", f"the TRF tensor does not fit {address}: {total} bytes = {t.lane.size} lanes x "
                         f"{bytes_} bytes > {address.capacity}",
                         label=f"{address} holds {address.capacity} bytes per slice",
                         notes=("docs/machine/index.md predicate TRF-CAP",),
                         help="store it at TrfAddress.FULL, or load a smaller tile per slice")
    capacity = constants().DM_SLICE_BYTES if memory == DM else constants().VRF_BYTES
    align = _ALIGN[memory]
    if address % align:
        return Violation("ADDR-1", f"the {memory} address {address} of `{name}` is not a multiple of {align}",
                         label=f"{a_an(memory)} tensor starts at a multiple of {align} bytes",
                         help=f"round it to a multiple of {align} (npu-opt places the tensor itself: "
                              f"the address is checked, not used)")
    if address + bytes_ > capacity:
        return Violation("ADDR-1", f"the tensor `{name}` makes at {memory} address {address} ends at byte "
                         f"{address + bytes_}, past the {capacity} bytes of a slice's {memory}",
                         label=f"{bytes_} bytes per slice from byte {address}",
                         help=f"pass an address at most {capacity - bytes_}")
    return None


def _placed(name: str, memory: str, address: Any, result: Any, loc: Location) -> Any:
    """`result` of the twin, or Poisoned when the tensor does not fit at `address`."""
    value = getattr(result, "value", None)
    if isinstance(result, Poisoned) or value is None or isinstance(value, Poisoned) or current().is_poisoned(value):
        return result
    fault = _fit_fault(name, memory, address, result)
    if fault is None:
        return result
    current().refuse(fault, loc, name)
    return Poisoned(name)


def at_stage(twin: Callable[..., Any], name: str, memory: str) -> Callable[..., Any]:
    """The stream stage method `name`: the stage method `twin` with an address after its arguments."""
    impl = twin.__wrapped__  # type: ignore[attr-defined]
    params = list(inspect.signature(impl).parameters.values())
    names = [p.name for p in params[2:]]
    full = inspect.Signature([*params, inspect.Parameter("address", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                         default=None, annotation="Any")])

    def at(self: Any, loc: Location, *args: Any, **kwargs: Any) -> Any:
        values = dict(full.bind(self, loc, *args, **kwargs).arguments)
        del values[params[0].name], values[params[1].name]
        address = _take_address(values, names)
        fault = _kind_fault(name, memory, address)
        if fault is not None:
            return refuse_dead(self, loc, name, fault)
        return _placed(name, memory, address, impl(self, loc, **values), loc)

    at.__signature__ = full  # type: ignore[attr-defined]
    at.__name__ = at.__qualname__ = name
    at.__doc__ = f"`{twin.__name__.lstrip('_')}` with the {memory} address last (checked, not honoured: npu_opt.addresses)."
    return stage_method(name)(at)


def at_call(name: str, memory: str, values: dict[str, Any], run: Callable[..., Any]) -> Any:
    """A tensor method's `_at` form: `run(**values)` (the twin) once `values["address"]` checks."""
    values = dict(values)
    address = _take_address(values, [n for n in values if n != "address"])
    fault = _kind_fault(name, memory, address)
    loc = location_of(name)
    if fault is not None:
        current().refuse(fault, loc, name)
        return Poisoned(name)
    return _placed(name, memory, address, run(**values), loc)
