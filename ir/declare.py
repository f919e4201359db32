"""Tables filled by declaration: how a layer finds the code for an op without a registry to edit.

A layer keeps one `Table` per job (the cpu handler of a traced op, the interpreter step of a
VISA record, ...). The module that holds the code declares it next to the function with the
table's decorator; the layer calls `load_package` once before looking anything up, which
imports every module of its package, so a new engine in a new module is found with no list,
import line or string to edit.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Hashable, Iterator
from typing import Any

__all__ = ["Table", "load_package"]

_LOADED: set[tuple[str, bool, str]] = set()


def load_package(package: str, *, recursive: bool = True, prefix: str = "") -> None:
    """Import every module of `package` (its sub-packages too when `recursive`) whose own
    name starts with `prefix`, once."""
    if (package, recursive, prefix) in _LOADED:
        return
    root = importlib.import_module(package)
    walk = pkgutil.walk_packages if recursive else pkgutil.iter_modules
    for info in walk(root.__path__, package + "."):
        if (recursive or not info.ispkg) and info.name[len(package) + 1:].startswith(prefix):
            importlib.import_module(info.name)
    _LOADED.add((package, recursive, prefix))


class Table:
    """Key -> declared function (and the keyword facts given with it); a key is declared once."""

    def __init__(self, what: str, package: str | None = None, prefix: str = "") -> None:
        self.what = what
        self.package = package  # whose modules hold the declarations, loaded on first lookup
        self.prefix = prefix  # only the modules of `package` whose names start with it (then not recursive)
        self._fns: dict[Hashable, Callable[..., Any]] = {}
        self._facts: dict[Hashable, dict[str, Any]] = {}

    def declare(self, *keys: Hashable, **facts: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: `fn` is the table's entry for every key of `keys`, with `facts`."""

        def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
            for key in keys:
                old = self._fns.get(key)
                if old is not None and old.__qualname__ != fn.__qualname__:
                    raise ValueError(f"{_name(key)} already has {_article(self.what)} {self.what}: {old.__qualname__}")
                self._fns[key] = fn
                self._facts[key] = facts
            return fn

        return declare

    def _ready(self) -> dict[Hashable, Callable[..., Any]]:
        if self.package is not None:
            load_package(self.package, recursive=not self.prefix, prefix=self.prefix)
        return self._fns

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The entry of `key`, or `default`."""
        return self._ready().get(key, default)

    def facts(self, key: Hashable) -> dict[str, Any]:
        """The keyword facts declared with `key`'s entry ({} if none)."""
        self._ready()
        return self._facts.get(key, {})

    def __getitem__(self, key: Hashable) -> Callable[..., Any]:
        return self._ready()[key]

    def __setitem__(self, key: Hashable, fn: Callable[..., Any]) -> None:
        """Replace an entry outright (tests inject faults this way)."""
        self._ready()[key] = fn

    def __delitem__(self, key: Hashable) -> None:
        del self._ready()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._ready()

    def __iter__(self) -> Iterator[Hashable]:
        return iter(dict(self._ready()))

    def __len__(self) -> int:
        return len(self._ready())

    def items(self) -> list[tuple[Hashable, Callable[..., Any]]]:
        """(key, entry) pairs, in declaration order."""
        return list(self._ready().items())


def _name(key: Hashable) -> str:
    return f"`{getattr(key, '__name__', key)}`"


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"
