"""A kernel file's changes to the modules it shares with npu-opt stay with that file.

Every kernel file runs in npu-opt's process, so without care a file that rebinds a name of
a module npu-opt reads (`npu_opt.i8 = npu_opt.i32`, `numpy.zeros = ...`, at import or in a
kernel body while it is traced) would change the artifacts of every file loaded after it,
and the compile cache would keep them (issue 55, item 1). While a file's code runs
(`per_file_imports.in_scope`: its import, each trace of its kernels) `own_changes` records
the namespaces of the shared modules when the code starts: npu-opt's own modules, and the
top level of the packages it reads (`THIRD_PARTY`). A shared module first imported by the
code itself is recorded as its import left it, before the code could touch it (`_Recorder`,
a finder on `sys.meta_path` while the code runs). When the code is done every name it
rebound, added or deleted there is put back, and kept as the file's own changes, applied
again the next time that file's code runs: each file sees npu-opt as shipped plus its own
changes, as in a process of its own. A submodule bound on its package by an import stays.

The record is of names, not of the objects they hold: a change inside a shared object (an
item put into one of npu-opt's dicts) is not undone.
"""

from __future__ import annotations

import contextlib
import operator
import sys
import types
from collections.abc import Iterator
from typing import Any

from ir.location import OWN_PACKAGES

__all__ = ["THIRD_PARTY", "own_changes", "forget"]

THIRD_PARTY = frozenset({"numpy", "ml_dtypes", "attr", "attrs", "lark"})
"""Packages npu-opt reads whose top-level namespace is recorded too (their submodules are not:
numpy alone has hundreds)."""

_GONE = object()  # the value of a name that a namespace does not hold
Changes = dict[str, dict[str, Any]]  # module name -> {name: its value, or _GONE}
_CHANGES: dict[str, Changes] = {}  # kernel module name -> its changes to the shared modules
_FIRST_SEEN: list[dict[str, dict[str, Any]]] = []  # per open scope: shared modules imported in it, as imported


def _shared(name: str) -> bool:
    top, dot, _ = name.partition(".")
    return top in OWN_PACKAGES or (not dot and top in THIRD_PARTY)


def _namespaces() -> dict[str, tuple[types.ModuleType, dict[str, Any]]]:
    """Each loaded shared module with a copy of its namespace."""
    return {name: (module, dict(vars(module))) for name, module in list(sys.modules.items())
            if isinstance(module, types.ModuleType) and _shared(name)}


@contextlib.contextmanager
def own_changes(owner: str) -> Iterator[None]:
    """Run code of the kernel module `owner` with its earlier changes to the shared modules
    applied; afterwards they are all as before, and the code's changes are kept for `owner`."""
    before = _namespaces()
    _apply(_CHANGES.get(owner, {}))
    recorder = _Recorder()
    _FIRST_SEEN.append({})
    sys.meta_path.insert(0, recorder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(recorder)
        for name, namespace in _FIRST_SEEN.pop().items():
            module = sys.modules.get(name)
            if module is not None and name not in before:
                before[name] = (module, namespace)
        _CHANGES[owner] = _put_back(before)


def forget(owner: str) -> None:
    """Drop the changes kept for `owner` (its file is loaded again)."""
    _CHANGES.pop(owner, None)


def _apply(changes: Changes) -> None:
    for name, names in changes.items():
        module = sys.modules.get(name)
        if module is not None:
            _set(vars(module), names)


def _set(namespace: dict[str, Any], names: dict[str, Any]) -> None:
    for key, value in names.items():
        if value is _GONE:
            namespace.pop(key, None)
        else:
            namespace[key] = value


def _put_back(before: dict[str, tuple[types.ModuleType, dict[str, Any]]]) -> Changes:
    """Every recorded namespace as it was; what differed, by module."""
    changes: Changes = {}
    for name, (module, old) in before.items():
        now = vars(module)
        if now.keys() == old.keys() and all(map(operator.is_, now.values(), old.values())):
            continue  # the common case, found at C speed
        changed = {key: value for key, value in now.items()
                   if old.get(key, _GONE) is not value and not _submodule(name, key, value)}
        changed.update((key, _GONE) for key in old.keys() - now.keys())
        if changed:
            _set(now, {key: old.get(key, _GONE) for key in changed})
            changes[name] = changed
    return changes


def _submodule(package: str, key: str, value: Any) -> bool:
    """Whether `key` binds the package's submodule of that name, as an import does."""
    return isinstance(value, types.ModuleType) and value.__name__ == f"{package}.{key}"


class _Recorder:
    """A finder that finds nothing itself: it asks the finders after it, and a shared module's
    loader records the module's namespace as soon as the module has run."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if not _shared(name):
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
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
        seen = _FIRST_SEEN[-1]

        def exec_module(module: types.ModuleType) -> None:
            try:
                real(module)
            finally:
                with contextlib.suppress(AttributeError):
                    del loader.exec_module  # the loader's own method again
            seen[module.__name__] = dict(vars(module))

        loader.exec_module = exec_module
        return spec
