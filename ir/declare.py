"""Tables filled by declaration: how a layer finds the code for an op without a registry to edit.

A layer keeps one `Table` per job (the cpu handler of a traced op, the interpreter step of a
VISA record, ...). The module that holds the code declares it next to the function with the
table's decorator. The table's `load` is a function of literal imports, one per declaring
module of its package; the layer's first lookup runs it. A test imports every module of each
package and fails when a declaration comes from a module `load` does not import
(tests/test_declarations.py), so a new engine in a new module is one name added to `load`.

A table may also have an index: a generated module whose `DECLARED` gives, for the module
defining a key (a traced op class's module), functions importing the modules that declare
entries for its keys (`index_text` writes it: `python -m tu_ops.lower.dispatch` for the
lowering's tables, which share one). A lookup of one key then imports those alone (a compile
of one kernel needs a few lowerings, not all of them); going over the whole table still runs
`load`. A new key in a module the index lists, declared in a module it lists, needs no
rewrite; otherwise a test asks for one (tests/test_declared_index.py) and meanwhile a lookup
that must find its key (`require`) loads the whole table.

A table may also derive an entry for a key nobody declared (`derive`: a declared stage's
cpu handler, lowering, interpreter step, ir/stage_spec.py), and a `Registry` holds
declarations of its own (a test's toy stage) that lookups see while it is open.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterator
from contextvars import ContextVar
from typing import Any

__all__ = ["Table", "Registry", "index_text", "write_index"]

Index = Callable[[], "dict[str, tuple[Callable[[], None], ...]]"]
Derive = Callable[[Hashable], "tuple[Callable[..., Any], dict[str, Any]] | None"]


class _Layer:
    """The entries one scope declared into one table: key -> entry, its facts, its module."""

    def __init__(self) -> None:
        self.fns: dict[Hashable, Callable[..., Any]] = {}
        self.facts: dict[Hashable, dict[str, Any]] = {}
        self.where: dict[Hashable, str] = {}


class Registry:
    """Declarations of their own (a test's toy stage): what is declared inside
    `registry.declaring()` goes into the registry instead of the global tables, and while it is
    open (`with registry:`, which `declaring` also does) every lookup sees it before them.
    A module first imported meanwhile declares into the global tables as always; once closed,
    the global tables are exactly what they were."""

    def __init__(self) -> None:
        self._layers: dict[int, _Layer] = {}
        self._tokens: list[Any] = []

    def layer(self, table: Table) -> _Layer:
        """Its entries in `table`."""
        return self._layers.setdefault(id(table), _Layer())

    def __enter__(self) -> Registry:
        self._tokens.append(_OPEN.set((self, *_OPEN.get())))
        return self

    def __exit__(self, *exc: object) -> None:
        _OPEN.reset(self._tokens.pop())

    @contextlib.contextmanager
    def declaring(self) -> Iterator[Registry]:
        """Open, with every declaration going into this registry."""
        token = _DECLARING.set(self)
        try:
            with self:
                yield self
        finally:
            _DECLARING.reset(token)


_OPEN: ContextVar[tuple[Registry, ...]] = ContextVar("open_registries", default=())
_DECLARING: ContextVar[Registry | None] = ContextVar("declaring_registry", default=None)


class Table:
    """Key -> declared function (and the keyword facts given with it); a key is declared once.
    `derive(key)` gives an entry (function, facts) for a key nobody declared, made from
    another declaration (a `StageSpec`'s), or None."""

    def __init__(self, what: str, load: Callable[[], None] | None = None, index: Index | None = None,
                 package: str = "", derive: Derive | None = None) -> None:
        self.what = what
        self.load = load  # imports every module that declares an entry; run on first lookup
        self.index = index  # DECLARED of the generated index: key -> its module's import (None: run `load`)
        self.package = package  # the package whose modules declare (an index lists only theirs)
        self.derive = derive
        self._loaded = False
        self._base = _Layer()

    def _layers(self) -> list[_Layer]:
        """The open registries' entries (newest first), then the global ones."""
        return [*(r.layer(self) for r in _OPEN.get()), self._base]

    def _top(self) -> _Layer:
        """Where a declaration goes: the declaring registry's entries, else the global ones."""
        declaring = _DECLARING.get()
        return self._base if declaring is None else declaring.layer(self)

    def owner(self, key: Hashable) -> Registry | None:
        """The open registry that holds `key`'s entry (None: a global one, or none)."""
        return next((r for r in _OPEN.get() if key in r.layer(self).fns), None)

    def declare(self, *keys: Hashable, **facts: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: `fn` is the table's entry for every key of `keys`, with `facts`."""

        def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
            layer = self._top()
            for key in keys:
                old = layer.fns.get(key)
                if old is not None and old.__qualname__ != fn.__qualname__:
                    raise ValueError(f"{_name(key)} already has {_article(self.what)} {self.what}: {old.__qualname__}")
                layer.fns[key] = fn
                layer.facts[key] = facts
                layer.where[key] = fn.__module__
            return fn

        return declare

    def _ready(self) -> None:
        if not self._loaded and self.load is not None:
            self.load()
            self._loaded = True

    def _ready_for(self, key: Hashable) -> None:
        """Load the declarations, `key`'s among them if it has one: with an index, only the
        modules it names for the module defining `key` (none when it names none)."""
        if self.index is None or self._loaded:
            return self._ready()
        for load in self.index().get(getattr(key, "__module__", ""), ()):
            load()

    def _entry(self, key: Hashable) -> tuple[Callable[..., Any], dict[str, Any]] | None:
        self._ready_for(key)
        for layer in self._layers():
            if key in layer.fns:
                return layer.fns[key], layer.facts.get(key, {})
        return self.derive(key) if self.derive is not None else None

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The entry of `key`, or `default`."""
        entry = self._entry(key)
        return default if entry is None else entry[0]

    def require(self, key: Hashable) -> Any:
        """The entry of `key`, which ought to have one (None if it has not): a key the index
        does not list yet (declared since `python -m ir.declare` last wrote it) loads the rest
        of the package, slower but found (tests/test_declared_index.py asks for the rewrite)."""
        fn = self.get(key)
        if fn is None:
            self._ready()
            fn = self.get(key)
        return fn

    def facts(self, key: Hashable) -> dict[str, Any]:
        """The keyword facts declared with `key`'s entry ({} if none)."""
        entry = self._entry(key)
        return {} if entry is None else entry[1]

    def __getitem__(self, key: Hashable) -> Callable[..., Any]:
        entry = self._entry(key)
        if entry is None:
            raise KeyError(key)
        return entry[0]

    def __setitem__(self, key: Hashable, fn: Callable[..., Any]) -> None:
        """Replace an entry outright (tests inject faults this way; a class table keeps the
        newest class of a name, as attrs remakes each class)."""
        self._ready_for(key)
        layer = self._top()
        layer.fns[key] = fn
        layer.where[key] = getattr(fn, "__module__", "")

    def __delitem__(self, key: Hashable) -> None:
        self._ready_for(key)
        layer = next(layer for layer in self._layers() if key in layer.fns)
        del layer.fns[key]
        layer.facts.pop(key, None)
        layer.where.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return self._entry(key) is not None  # type: ignore[arg-type]

    def _merged(self) -> dict[Hashable, Callable[..., Any]]:
        self._ready()
        out: dict[Hashable, Callable[..., Any]] = {}
        for layer in reversed(self._layers()):
            out.update(layer.fns)
        return out

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._merged())

    def __len__(self) -> int:
        return len(self._merged())

    def items(self) -> list[tuple[Hashable, Callable[..., Any]]]:
        """(key, entry) pairs, in declaration order (declared keys only: no derived ones)."""
        return list(self._merged().items())

    def values(self) -> list[Callable[..., Any]]:
        """The declared entries, in declaration order."""
        return list(self._merged().values())

    def global_values(self) -> list[Callable[..., Any]]:
        """The global entries alone (what no registry adds), in declaration order."""
        self._ready()
        return list(self._base.fns.values())

    def where(self) -> dict[Hashable, str]:
        """key -> the module that declared it (the global entries)."""
        self._ready()
        return dict(self._base.where)


def index_text(tables: list[Table], command: str) -> str:
    """The source of the index module of `tables` (sharing a package and an index, written by
    `command`): for the module defining each declared key, a function importing each module
    that declares an entry for one of its keys."""
    package = tables[0].package
    by_module: dict[str, set[str]] = {}
    for table in tables:
        for key, module in table.where().items():
            if module.startswith(f"{package}."):  # not a test's own
                by_module.setdefault(key.__module__, set()).add(module)  # type: ignore[attr-defined]
    modules = sorted(set().union(*by_module.values()))
    lines = [f'"""Generated by `{command}`: never edit by hand.', "",
             f"Which modules of `{package}` declare entries for the keys each module defines (ir/declare.py):",
             "a lookup imports those alone. tests/test_declared_index.py fails when it differs from the",
             'declarations."""', "", "from collections.abc import Callable", ""]
    for module in modules:
        parent, name = module.rsplit(".", 1)
        lines += ["", f"def _{name}() -> None:", f"    from {parent} import {name}  # noqa: F401", ""]
    body = [f"    {key_module!r}: ({', '.join('_' + m.rsplit('.', 1)[1] for m in sorted(declaring))},),"
            for key_module, declaring in sorted(by_module.items())]
    return "\n".join([*lines, "", "DECLARED: dict[str, tuple[Callable[[], None], ...]] = {", *body, "}", ""])


def _name(key: Hashable) -> str:
    return f"`{getattr(key, '__name__', key)}`"


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def write_index(tables: list[Table], path: str, command: str) -> str:
    """(Re)write the index module of `tables` at `path`; the path written."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(index_text(tables, command))
    return path
