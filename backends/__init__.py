"""Backends behind one interface (docs/testing.md): `typecheck`, `cpu`, `npu` and `visa`.

`BACKENDS` maps the `--backend` / `backend=` name to its implementation: `typecheck`
traces and checks, `cpu` runs the traced graph exactly, `npu` lowers to `tu_ops` and
verifies, `visa` runs the emitted VISA artifact in the reference interpreter.
"""

from __future__ import annotations

from backends.base import Backend
from backends.cpu import CpuBackend
from backends.npu import NpuBackend
from backends.visa_backend import VisaBackend
from backends.typecheck import TypecheckBackend

__all__ = ["BACKENDS", "Backend", "CpuBackend", "NpuBackend", "TypecheckBackend", "VisaBackend", "get_backend"]

BACKENDS: dict[str, Backend] = {
    "typecheck": TypecheckBackend(),
    "cpu": CpuBackend(),
    "npu": NpuBackend(),
    "visa": VisaBackend(),
}


def get_backend(name: str) -> Backend:
    """The backend called `name`; an `NpuOptError` (code USAGE) listing the known ones."""
    from ir.errors import NpuOptError

    backend = BACKENDS.get(name) if isinstance(name, str) else None
    if backend is None:
        known = ", ".join(sorted(BACKENDS))
        raise NpuOptError(f"unknown backend {name!r}; expected one of: {known}", code="USAGE")
    return backend
