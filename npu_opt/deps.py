"""What importing and tracing a kernel read, so a cached artifact is reused only while all of
it is unchanged (the cache rule of `npu-opt compile`).

Inside `recording()` every file opened for reading (Python modules, data files, `.npy`
inputs...) and every environment variable looked up through `os.environ` / `os.getenv`
is recorded; `user_modules()` adds every module loaded from outside the Python
installation and npu-opt itself. `snapshot` turns a record into content hashes and
values; `unchanged` tells whether a snapshot still holds. Iterating the whole environment
records `*`: such a kernel is keyed on every variable.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Iterator
from typing import Any

import attrs

from npu_opt.import_scope import scope_files, system_roots
from npu_opt.replay import deps_hold, digest, env_value

__all__ = ["Record", "recording", "user_modules", "snapshot", "unchanged"]

_ACTIVE: list["Record"] = []
_INSTALLED = False
_ALL = "*"


@attrs.define
class Record:
    """Files (absolute paths) and environment variable names read while recording."""

    files: set[str] = attrs.field(factory=set)
    env: set[str] = attrs.field(factory=set)


def _is_user_file(path: str) -> bool:
    return not path.startswith(system_roots()) and os.path.isfile(path)


@functools.lru_cache(maxsize=None)
def _is_user_module_file(path: str) -> bool:
    """`_is_user_file` for a loaded module's file (fixed for the process's lifetime)."""
    return _is_user_file(path)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _ACTIVE or event != "open":
        return
    path, mode = args[0], args[1]
    if isinstance(path, int) or (isinstance(mode, str) and any(c in mode for c in "wax")):
        return
    with contextlib.suppress(TypeError, ValueError, OSError):
        name = os.path.abspath(os.fsdecode(path))
        for record in _ACTIVE:
            record.files.add(name)


class _TrackedEnviron(type(os.environ)):  # type: ignore[misc]
    """`os.environ` that tells the active records which variables were looked up."""

    def __getitem__(self, key: str) -> str:
        for record in _ACTIVE:
            record.env.add(key)
        return super().__getitem__(key)

    def __iter__(self) -> Iterator[str]:
        for record in _ACTIVE:
            record.env.add(_ALL)
        return super().__iter__()


def _install() -> None:
    global _INSTALLED
    if _INSTALLED:
        return
    env = os.environ
    if not isinstance(env, _TrackedEnviron):
        os.environ = _TrackedEnviron(env._data, env.encodekey, env.decodekey,  # type: ignore[attr-defined]
                                     env.encodevalue, env.decodevalue)  # type: ignore[attr-defined]
    sys.addaudithook(_audit)
    _INSTALLED = True


@contextlib.contextmanager
def recording() -> Iterator[Record]:
    """Record what the code run inside the block reads."""
    _install()
    record = Record()
    _ACTIVE.append(record)
    try:
        yield record
    finally:
        _ACTIVE.remove(record)


def user_modules() -> set[str]:
    """Files of every loaded module that is neither the Python installation's nor npu-opt's
    (those a kernel file's import scope keeps included: npu_opt/import_scope.py)."""
    files = {f for f in scope_files() if _is_user_module_file(f)}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str):
            user = _user_file_of(file) if os.path.isabs(file) else _user_file_of(os.path.abspath(file))
            if user is not None:
                files.add(user)
    return files


@functools.lru_cache(maxsize=None)
def _user_file_of(file: str) -> str | None:
    """A loaded module's `__file__` as an absolute path when it is the user's, else None
    (fixed for the process's lifetime, asked of every module after every compile)."""
    path = os.path.abspath(file)
    return path if _is_user_module_file(path) else None


def snapshot(record: Record) -> dict[str, dict[str, str | None]]:
    """Content hashes of the recorded user files and values of the recorded variables."""
    files = {f for f in record.files if _is_user_file(f)}
    return {"files": {f: digest(f) for f in sorted(files)},
            "env": {name: env_value(name) for name in sorted(record.env)}}


def unchanged(snap: Any) -> bool:
    """Whether every file and variable of `snap` still has the recorded content."""
    return deps_hold(snap)
