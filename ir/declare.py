"""Tables filled by declaration: how a layer finds the code for an op without a registry to edit.

A layer keeps one `Table` per job (the cpu handler of a traced op, the interpreter step of a
VISA record, ...). The module that holds the code declares it next to the function with the
table's decorator; the layer calls `load_package` once before looking anything up, which
imports every module of its package, so a new engine in a new module is found with no list,
import line or string to edit.

A table may also name an index: a module of the package whose `DECLARED` says, for each
table and key, which module declares it (`index_text` writes it: `python -m ir.declare
MODULE` for the tables of MODULE). A lookup of one key then imports that module alone (a
compile of one kernel needs a few lowerings, not all of them); going over the whole table
still loads the package. A test compares each index with the declarations
(tests/test_declared_index.py), so a new declaration is still found with nothing to edit
by hand but a regenerated index; until then, a lookup that must find its key (`require`)
loads the whole package.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Hashable, Iterator
from typing import Any

__all__ = ["Table", "load_package", "key_name", "index_text"]

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

    def __init__(self, what: str, package: str | None = None, prefix: str = "", index: str | None = None) -> None:
        self.what = what
        self.package = package  # whose modules hold the declarations, loaded on first lookup
        self.prefix = prefix  # only the modules of `package` whose names start with it (then not recursive)
        self.index = index  # the module whose DECLARED names each key's declaring module (None: load them all)
        self._fns: dict[Hashable, Callable[..., Any]] = {}
        self._facts: dict[Hashable, dict[str, Any]] = {}
        self._where: dict[Hashable, str] = {}  # key -> the module that declared it

    def declare(self, *keys: Hashable, **facts: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: `fn` is the table's entry for every key of `keys`, with `facts`."""

        def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
            for key in keys:
                old = self._fns.get(key)
                if old is not None and old.__qualname__ != fn.__qualname__:
                    raise ValueError(f"{_name(key)} already has {_article(self.what)} {self.what}: {old.__qualname__}")
                self._fns[key] = fn
                self._facts[key] = facts
                self._where[key] = fn.__module__
            return fn

        return declare

    def _ready(self) -> dict[Hashable, Callable[..., Any]]:
        if self.package is not None:
            load_package(self.package, recursive=not self.prefix, prefix=self.prefix)
        return self._fns

    def _ready_for(self, key: Hashable) -> dict[Hashable, Callable[..., Any]]:
        """The entries, `key`'s among them if it has one: with an index, only the module
        that declares `key` is loaded (none when the index lists no such key)."""
        if self.index is None or self.package is None or _loaded(self.package, self.prefix):
            return self._ready()
        module = importlib.import_module(self.index).DECLARED.get(self.what, {}).get(key_name(key))
        if module is not None:
            importlib.import_module(module)
        return self._fns

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The entry of `key`, or `default`."""
        return self._ready_for(key).get(key, default)

    def require(self, key: Hashable) -> Any:
        """The entry of `key`, which ought to have one (None if it has not): a key the index
        does not list yet (declared since `python -m ir.declare` last wrote it) loads the rest
        of the package, slower but found (tests/test_declared_index.py asks for the rewrite)."""
        fn = self.get(key)
        return fn if fn is not None else self._ready().get(key)

    def facts(self, key: Hashable) -> dict[str, Any]:
        """The keyword facts declared with `key`'s entry ({} if none)."""
        self._ready_for(key)
        return self._facts.get(key, {})

    def __getitem__(self, key: Hashable) -> Callable[..., Any]:
        return self._ready_for(key)[key]

    def __setitem__(self, key: Hashable, fn: Callable[..., Any]) -> None:
        """Replace an entry outright (tests inject faults this way)."""
        self._ready_for(key)[key] = fn

    def __delitem__(self, key: Hashable) -> None:
        del self._ready_for(key)[key]

    def __contains__(self, key: object) -> bool:
        return key in self._ready_for(key)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(dict(self._ready()))

    def __len__(self) -> int:
        return len(self._ready())

    def items(self) -> list[tuple[Hashable, Callable[..., Any]]]:
        """(key, entry) pairs, in declaration order."""
        return list(self._ready().items())


def _loaded(package: str, prefix: str) -> bool:
    return (package, not prefix, prefix) in _LOADED


def key_name(key: Hashable) -> str:
    """How an index names `key`: `module.qualname` for a class or function, else its repr."""
    module, qualname = getattr(key, "__module__", None), getattr(key, "__qualname__", None)
    return f"{module}.{qualname}" if isinstance(module, str) and isinstance(qualname, str) else repr(key)


def index_text(tables: list[Table], module: str) -> str:
    """The source of the index module of `tables` (defined by `module`, sharing a package and
    an index): every declared key of each, by name, with its declaring module."""
    package = tables[0].package
    doc = (f"Which module of `{package}` declares each key of its tables (ir/declare.py): a lookup imports that\n"
           f"module alone. Written by `python -m ir.declare {module}`, never by hand;\n"
           "tests/test_declared_index.py fails when it differs from the declarations.")
    lines = [f'"""{doc}"""', "", "DECLARED: dict[str, dict[str, str]] = {"]
    for table in sorted(tables, key=lambda t: t.what):
        table._ready()
        lines.append(f"    {table.what!r}: {{")
        entries = sorted((key_name(k), m) for k, m in table._where.items()
                         if m == table.package or m.startswith(f"{table.package}."))  # not a test's own
        lines += [f"        {name!r}: {module!r}," for name, module in entries]
        lines.append("    },")
    return "\n".join([*lines, "}", ""])


def _name(key: Hashable) -> str:
    return f"`{getattr(key, '__name__', key)}`"


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def indexed_tables(module: str) -> dict[str, list[Table]]:
    """The tables with an index that `module` defines, by index module."""
    out: dict[str, list[Table]] = {}
    for value in vars(importlib.import_module(module)).values():
        if isinstance(value, Table) and value.index is not None:
            out.setdefault(value.index, []).append(value)
    return out


def write_indexes(module: str) -> list[str]:
    """(Re)write the index module of every indexed table of `module`; the paths written."""
    written = []
    for index, tables in indexed_tables(module).items():
        package, name = index.rsplit(".", 1)
        path = f"{importlib.import_module(package).__path__[0]}/{name}.py"
        with open(path, "w", encoding="utf-8") as f:
            f.write(index_text(tables, module))
        written.append(path)
    return written


if __name__ == "__main__":  # `python -m ir.declare MODULE`; this module's own Table class, not __main__'s
    print("\n".join(f"wrote {p}" for p in importlib.import_module("ir.declare").write_indexes(sys.argv[1])))
