"""A package's public names, imported on first use (PEP 562) by real import statements.

A package whose `__init__` should stay cheap (`npu_opt`, `tu_ops`, `visa`) lists every
public name twice, each time as a real import: under `if TYPE_CHECKING:` (what IDEs and type
checkers follow) and in a loader, a function of one `from MODULE import NAME, ...` that
returns `locals()`, declared on the package's `LazyExports`:

    if TYPE_CHECKING:
        from tu_ops.base import Alloc, TuOp

    EXPORTS = LazyExports()

    @EXPORTS.loader
    def _base() -> dict[str, Any]:
        from tu_ops.base import Alloc, TuOp
        return locals()

    def __getattr__(name: str) -> Any:
        return EXPORTS.get(__name__, name)

A loader's names are its code object's local names (its bytecode, so a sourceless install
reads them alike); the first use of a name runs its loader, which imports that one module,
and every name the loader brought is cached on the package, so the next access is a plain
attribute. tests/test_lazy_exports.py holds the loaders to the TYPE_CHECKING block.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["LazyExports"]

Loader = Callable[[], dict[str, Any]]


class LazyExports:
    """Name -> the loader that imports it, filled by `loader`."""

    def __init__(self) -> None:
        self.loaders: dict[str, Loader] = {}

    def loader(self, fn: Loader) -> Loader:
        """Decorator: `fn` (no parameters; `from M import a, b`; `return locals()`) loads `a` and `b`."""
        for name in fn.__code__.co_varnames:
            if name in self.loaders:
                raise ValueError(f"{name} is loaded by both {self.loaders[name].__name__} and {fn.__name__}")
            self.loaders[name] = fn
        return fn

    def names(self) -> list[str]:
        """Every name a loader brings."""
        return list(self.loaders)

    def get(self, package: str, name: str) -> Any:
        """The value of `package.name`: its loader run, its names cached on the package."""
        fn = self.loaders.get(name)
        if fn is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = sys.modules[package]
        values = fn()
        for key, value in values.items():
            setattr(module, key, value)
        return values[name]
