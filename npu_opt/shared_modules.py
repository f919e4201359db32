"""A kernel file's changes to the modules it shares with npu-opt stay with that file.

Every kernel file runs in npu-opt's process, so without care a file that rebinds a name of
a module npu-opt reads (`npu_opt.i8 = npu_opt.i32`, `numpy.zeros = ...`, at import or in a
kernel body while it is traced) would change the artifacts of every file loaded after it,
and the compile cache would keep them (issue 55, item 1). The shared modules are npu-opt's
own and the top level of the packages it reads (`THIRD_PARTY`); each is given a module
class (its own with `_Watch` mixed in) whose attribute assignment and deletion, while a file's code runs
(`own_changes`, from `per_file_imports.in_scope`: its import, each trace of its kernels),
note the value they replace. When the code is done every name it rebound, added or deleted
there is put back, and kept as the file's own changes, applied again the next time that
file's code runs: each file sees npu-opt as shipped plus its own changes, as in a process of
its own. A shared module first imported by the code itself is watched as soon as its import
has run (`_Recorder`, a finder on `sys.meta_path` while the code runs). A submodule bound on
its package by an import stays.

What is watched is assignment to a module's attributes (`module.name = ...`, `setattr`,
`del`), which costs nothing until it happens; a write into the namespace dict itself
(`vars(module)[name] = ...`) or a change inside a shared object (an item put into one of
npu-opt's dicts) is not undone.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types
from collections.abc import Iterator
from typing import Any

from ir.location import OWN_PACKAGES

__all__ = ["THIRD_PARTY", "own_changes", "forget"]

THIRD_PARTY = frozenset({"numpy", "ml_dtypes", "attr", "attrs", "lark"})
"""Packages npu-opt reads whose top-level namespace is watched too (their submodules are not:
numpy alone has hundreds)."""

_GONE = object()  # the value of a name that a namespace does not hold
Changes = dict[str, dict[str, Any]]  # module name -> {name: its value, or _GONE}
_CHANGES: dict[str, Changes] = {}  # kernel module name -> its changes to the shared modules
_JOURNALS: list[dict[tuple[str, str], tuple[types.ModuleType, Any]]] = []  # per open scope: what its code replaced
_WATCHED: set[str] = set()  # names of the modules given the watching class


class _Watch:
    """Mixed into a shared module's class: while a file's code runs, an assignment or
    deletion of one of its attributes notes the value it replaces (the first time, in the
    innermost scope)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        if _JOURNALS:
            _note(self, name)  # type: ignore[arg-type]
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if _JOURNALS:
            _note(self, name)  # type: ignore[arg-type]
        super().__delattr__(name)


@functools.lru_cache(maxsize=None)
def _watched_class(cls: type) -> type:
    """`cls` (types.ModuleType or a subclass, such as npu_opt's own) with `_Watch` mixed in."""
    return type(f"Watched{cls.__name__}", (_Watch, cls), {"__module__": __name__, "__slots__": ()})


def _note(module: types.ModuleType, name: str) -> None:
    journal = _JOURNALS[-1]
    key = (module.__name__, name)
    if key not in journal:
        journal[key] = (module, vars(module).get(name, _GONE))


@functools.lru_cache(maxsize=None)
def _shared(name: str) -> bool:
    top, dot, _ = name.partition(".")
    return top in OWN_PACKAGES or (not dot and top in THIRD_PARTY)


def _watch(name: str, module: Any) -> None:
    if isinstance(module, types.ModuleType) and not isinstance(module, _Watch):
        with contextlib.suppress(TypeError):  # a module class of another layout: not watched
            module.__class__ = _watched_class(type(module))
    _WATCHED.add(name)


def _watch_loaded() -> None:
    """Every loaded shared module is watched."""
    for name, module in list(sys.modules.items()):
        if name not in _WATCHED and _shared(name):
            _watch(name, module)


@contextlib.contextmanager
def own_changes(owner: str) -> Iterator[None]:
    """Run code of the kernel module `owner` with its earlier changes to the shared modules
    applied; afterwards they are all as before, and the code's changes are kept for `owner`."""
    _watch_loaded()
    journal: dict[tuple[str, str], tuple[types.ModuleType, Any]] = {}
    _JOURNALS.append(journal)
    recorder = _Recorder()
    sys.meta_path.insert(0, recorder)
    try:
        _apply(_CHANGES.get(owner, {}))
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(recorder)
        _JOURNALS.pop()
        _CHANGES[owner] = _put_back(journal)


def forget(owner: str) -> None:
    """Drop the changes kept for `owner` (its file is loaded again)."""
    _CHANGES.pop(owner, None)


def _apply(changes: Changes) -> None:
    for name, names in changes.items():
        module = sys.modules.get(name)
        if module is None:
            continue
        for key, value in names.items():
            if value is _GONE:
                if key in vars(module):
                    delattr(module, key)
            else:
                setattr(module, key, value)


def _put_back(journal: dict[tuple[str, str], tuple[types.ModuleType, Any]]) -> Changes:
    """Every noted name as it was; what differed, by module."""
    changes: Changes = {}
    for (name, key), (module, old) in journal.items():
        namespace = vars(module)
        now = namespace.get(key, _GONE)
        if now is old or (old is _GONE and _submodule(name, key, now)):
            continue
        changes.setdefault(name, {})[key] = now
        if old is _GONE:
            del namespace[key]
        else:
            namespace[key] = old
    return changes


def _submodule(package: str, key: str, value: Any) -> bool:
    """Whether `key` binds the package's submodule of that name, as an import does."""
    return isinstance(value, types.ModuleType) and value.__name__ == f"{package}.{key}"


class _Recorder:
    """A finder that finds nothing itself: it asks the finders after it, and a shared module's
    loader has the module watched as soon as it has run."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if not _shared(name):
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if isinstance(finder, _Recorder) or find is None:  # (a nested scope's recorder too)
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        real = getattr(loader, "exec_module", None)
        if real is None:
            return spec

        def exec_module(module: types.ModuleType) -> None:
            try:
                real(module)
            finally:
                with contextlib.suppress(AttributeError):
                    del loader.exec_module  # the loader's own method again
            _watch(name, module)

        loader.exec_module = exec_module
        return spec
