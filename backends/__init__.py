"""Backends behind one interface (docs/testing.md): `typecheck` and `cpu`.

`BACKENDS` maps the `--backend` / `backend=` name to its implementation. The `npu`
backend (lowering to `tu_ops` and VISA emission) and `visa` (npu + the VISA interpreter)
are added here by their own work, as `"npu": NpuBackend()` and `"visa": VisaBackend()`.
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
