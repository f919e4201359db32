"""The spaces of a tune file, loaded by path (`FactoryRef`) once per process, as `npu-opt
check` loads a kernel file: a worker that is not this process loads the file itself (a
factory defined in a file the CLI imported cannot be pickled by reference)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import attrs

from driver.discover import load_file  # one file, imported on its own as `check` does
from driver.tune_guard import guarded
from ir.errors import NpuOptError
from npu_opt.tune import Space

__all__ = ["FactoryRef", "load_space", "resolve_space", "space_names"]


@attrs.frozen
class FactoryRef:
    """The `Space` bound to `attr` in the tune file `path`."""

    path: str
    attr: str


_MODULES: dict[str, Any] = {}
_LOCK = threading.Lock()


def load_space(ref: FactoryRef) -> Space:
    """The space `ref` names, its file imported on its own, once per process (USAGE when it
    cannot be), its user code guarded."""
    module = _module(ref.path)
    space = getattr(module, ref.attr, None)
    if not isinstance(space, Space):
        raise NpuOptError(f"{ref.path}: no `npu_opt.tune.Space` named {ref.attr!r}", code="USAGE")
    return guarded(space, ref.path)  # its code may not exit npu-opt (driver/tune_guard.py)


def resolve_space(ref: Any) -> Space:
    """A job's space: the object itself, or the file's."""
    return ref if isinstance(ref, Space) else load_space(ref)


def _module(path: str) -> Any:
    """The tune file's module, imported once per process: `npu-opt tune` reads its space names,
    then its space, then (inline) each candidate's factory from the one import."""
    key = str(Path(path).resolve())
    with _LOCK:
        if key not in _MODULES:
            module, error = load_file(Path(path))
            if error is not None:
                where = f"{path}:{error.line}" if error.line else path  # the user's line, as `check` gives it
                raise NpuOptError(f"{where}: cannot load the tune file: {error.message}", code=error.code)
            _MODULES[key] = module
        return _MODULES[key]


def space_names(path: str) -> list[str]:
    """The names of the `Space` objects a tune file binds at module level, in file order."""
    return [k for k, v in vars(_module(path)).items() if isinstance(v, Space)]
