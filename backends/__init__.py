"""Backends behind one interface (docs/testing.md): `typecheck`, `cpu`, `npu` and `visa`.

`BACKENDS` maps the `--backend` / `backend=` name to its implementation: `typecheck`
traces and checks, `cpu` runs the traced graph exactly, `npu` lowers to `tu_ops` and
verifies, `visa` runs the emitted VISA artifact in the reference interpreter.

Each backend's module is imported when the backend is first asked for (`npu-opt compile`
reaches `backends.npu` and never loads the cpu backend); a backend is made once, however
many threads ask for it together (the cpu backend keeps its traces).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from backends.base import Backend
from ir.errors import NpuOptError

if TYPE_CHECKING:
    from backends.cpu import CpuBackend

__all__ = ["BACKENDS", "Backend", "CpuBackend", "NpuBackend", "TypecheckBackend", "VisaBackend", "get_backend"]

def _typecheck() -> type:
    from backends.typecheck import TypecheckBackend
    return TypecheckBackend


def _cpu() -> type:
    from backends.cpu import CpuBackend
    return CpuBackend


def _npu() -> type:
    from backends.npu import NpuBackend
    return NpuBackend


def _visa() -> type:
    from backends.visa_backend import VisaBackend
    return VisaBackend


_CLASSES: dict[str, Callable[[], type]] = {"typecheck": _typecheck, "cpu": _cpu, "npu": _npu, "visa": _visa}
"""Backend name -> the function importing its class."""


class _Registry(Mapping[str, Backend]):
    """The backends by name, each made on first use."""

    def __init__(self) -> None:
        self._made: dict[str, Backend] = {}
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> Backend:
        backend = self._made.get(name)
        if backend is not None:
            return backend
        where = _CLASSES[name]  # KeyError for an unknown name, as a dict
        with self._lock:
            if name not in self._made:
                self._made[name] = where()()
            return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_CLASSES)

    def __len__(self) -> int:
        return len(_CLASSES)

    def __contains__(self, name: object) -> bool:
        return name in _CLASSES


BACKENDS: Mapping[str, Backend] = _Registry()


def __getattr__(name: str) -> Any:
    """The backend classes, imported on first use (PEP 562)."""
    for load in _CLASSES.values():
        if load.__code__.co_varnames == (name,):
            value = globals()[name] = load()
            return value
    raise AttributeError(f"module 'backends' has no attribute {name!r}")


@overload
def get_backend(name: Literal["cpu"]) -> CpuBackend: ...


@overload
def get_backend(name: str) -> Backend: ...


def get_backend(name: str) -> Any:
    """The backend called `name`; an `NpuOptError` (code USAGE) listing the known ones.
    `get_backend("cpu")` is typed as the `CpuBackend` it is (its `run` takes `numerics=`)."""
    backend = BACKENDS.get(name) if isinstance(name, str) else None
    if backend is None:
        known = ", ".join(sorted(BACKENDS))
        raise NpuOptError(f"unknown backend {name!r}; expected one of: {known}", code="USAGE")
    return backend
