"""Tables filled by declaration: how a layer finds the code for an op without a registry to edit.

A layer keeps one `Table` per job (the cpu handler of a traced op, the interpreter step of a
VISA record, ...). The module that holds the code declares it next to the function with the
table's decorator. The table's `load` is a function of literal imports, one per declaring
module of its package; the layer's first lookup runs it. A test imports every module of each
package and fails when a declaration comes from a module `load` does not import
(tests/test_declarations.py), so a new engine in a new module is one name added to `load`.

A table may also have an index: a generated module whose `DECLARED` gives, for each table and
key, a function importing the one module that declares it (`index_text` writes it: `python
-m tu_ops.lower.dispatch` for the lowering's tables). A lookup of one key then imports that
module alone (a compile of one kernel needs a few lowerings, not all of them); going over the
whole table still runs `load`. A test compares each index with the declarations
(tests/test_declared_index.py). Until the index is regenerated, a lookup that must find
its key (`require`) loads the whole table.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Any

__all__ = ["Table", "key_name", "index_text", "write_index"]

Index = Callable[[], "dict[str, dict[str, Callable[[], None]]]"]


class Table:
    """Key -> declared function (and the keyword facts given with it); a key is declared once."""

    def __init__(self, what: str, load: Callable[[], None] | None = None, index: Index | None = None,
                 package: str = "") -> None:
        self.what = what
        self.load = load  # imports every module that declares an entry; run on first lookup
        self.index = index  # DECLARED of the generated index: key -> its module's import (None: run `load`)
        self.package = package  # the package whose modules declare (an index lists only theirs)
        self._loaded = False
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
        if not self._loaded and self.load is not None:
            self.load()
            self._loaded = True
        return self._fns

    def _ready_for(self, key: Hashable) -> dict[Hashable, Callable[..., Any]]:
        """The entries, `key`'s among them if it has one: with an index, only the module
        that declares `key` is loaded (none when the index lists no such key)."""
        if self.index is None or self._loaded:
            return self._ready()
        load = self.index().get(self.what, {}).get(key_name(key))
        if load is not None:
            load()
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


def key_name(key: Hashable) -> str:
    """How an index names `key`: `module.qualname` for a class or function, else its repr."""
    module, qualname = getattr(key, "__module__", None), getattr(key, "__qualname__", None)
    return f"{module}.{qualname}" if isinstance(module, str) and isinstance(qualname, str) else repr(key)


def index_text(tables: list[Table], command: str) -> str:
    """The source of the index module of `tables` (sharing a package and an index, written by
    `command`): every declared key of each, by name, with a function importing its declaring
    module."""
    package = tables[0].package
    modules: set[str] = set()
    body = ["DECLARED: dict[str, dict[str, Callable[[], None]]] = {"]
    for table in sorted(tables, key=lambda t: t.what):
        table._ready()
        body.append(f"    {table.what!r}: {{")
        entries = sorted((key_name(k), m) for k, m in table._where.items()
                         if m.startswith(f"{package}."))  # not a test's own
        body += [f"        {name!r}: _{module.rsplit('.', 1)[1]}," for name, module in entries]
        modules.update(m for _, m in entries)
        body.append("    },")
    lines = [f'"""Generated by `{command}`: never edit by hand.', "",
             f"Which module of `{package}` declares each key of its tables (ir/declare.py): a lookup",
             "imports that module alone. tests/test_declared_index.py fails when it differs from the",
             'declarations."""', "",
             "from collections.abc import Callable", ""]
    for module in sorted(modules):
        parent, name = module.rsplit(".", 1)
        lines += ["", f"def _{name}() -> None:", f"    from {parent} import {name}  # noqa: F401", ""]
    return "\n".join([*lines, "", *body, "}", ""])


def _name(key: Hashable) -> str:
    return f"`{getattr(key, '__name__', key)}`"


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def write_index(tables: list[Table], path: str, command: str) -> str:
    """(Re)write the index module of `tables` at `path`; the path written."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(index_text(tables, command))
    return path
