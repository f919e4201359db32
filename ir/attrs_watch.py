"""Route attrs through ir/attrs_code_cache.py from the moment attrs is imported.

`watch` (called by `ir/__init__.py`) installs the cache at once when attrs is already
loaded, else puts a meta path finder in front that notices `attr._make` being imported and
installs the cache right after it ran, before attrs' own validators define their classes.
This module is all `import ir` compiles for it: the cache itself (with the bundle it reads)
loads with attrs, so a command line that chooses where Python keeps bytecode
(driver/bytecode_home.py) does so before those modules are compiled.
"""

from __future__ import annotations

import importlib.machinery
import sys
import types
from collections.abc import Sequence
from typing import Any

__all__ = ["watch"]


def watch() -> None:
    """Install the cache now if attrs is loaded, else right after `attr._make` is."""
    if "attr._make" in sys.modules:
        _install()
    elif not any(isinstance(f, _AttrWatch) for f in sys.meta_path):
        sys.meta_path.insert(0, _AttrWatch())


def _install() -> None:
    from ir.attrs_code_cache import install  # with attrs, not with `import ir` (module docstring)

    install()


class _AttrWatch:
    """A meta path finder that only notices `attr._make` being imported, to install the
    cache right after it ran."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: types.ModuleType | None = None) -> Any:
        if name != "attr._make":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _InstallAfter(spec.loader)
        return spec


class _InstallAfter:
    """`attr._make`'s own loader, then the cache's `install`."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        _install()

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ...: the real loader's
        return getattr(self._loader, name)
