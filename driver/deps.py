"""What importing and tracing a kernel read, so a cached artifact is reused only while all of
it is unchanged (the cache rule of `npu-opt compile`).

Inside `recording()` every file opened for reading (Python modules, data files, `.npy`
inputs...), every environment variable looked up through `os.environ`, `os.environb` or
`os.getenv` (or `posix.environ`, the store behind them), every symbolic link whose target was read
(`os.readlink`, `Path.readlink`, `os.path.realpath`), every path checked with `os.stat`/`os.lstat` alone (`Path.exists()`,
`os.path.getsize`...), every directory listed (`os.listdir`, `os.scandir`, `glob`) and
every module imported (with the search path it was looked up on) is recorded;
`user_modules()` adds every module loaded from outside the Python installation and
npu-opt itself. `snapshot` turns a record into content hashes, values, file kinds and
sizes, listings and the file each module name resolves to; `unchanged` tells whether a
snapshot still holds (so a new module beside a kernel that shadows one further down the
search path, or another search path, is a change). Iterating the whole environment
records `*`: such a kernel is keyed on every variable.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import sysconfig
import threading
from collections.abc import Iterator
from typing import Any

import attrs

from ir.location import OWN_PACKAGES
from npu_opt.per_file_imports import scope_files, system_roots
from driver.replay import digest, env_value, link_of, listing_of, resolve, stat_of

__all__ = ["Record", "recording", "user_modules", "snapshot"]

_ACTIVE: list["Record"] = []
_ALL = "*"


@attrs.define
class Record:
    """Files (absolute paths) and environment variable names read while recording."""

    files: set[str] = attrs.field(factory=set)
    env: set[str] = attrs.field(factory=set)
    stats: set[str] = attrs.field(factory=set)  # paths stat-ed (kind and size matter)
    dirs: set[str] = attrs.field(factory=set)  # directories listed
    imports: dict[str, tuple[str, ...]] = attrs.field(factory=dict)  # top-level module -> search path
    links: set[str] = attrs.field(factory=set)  # symbolic links whose target was read

    def __or__(self, other: "Record") -> "Record":
        return Record(self.files | other.files, self.env | other.env, self.stats | other.stats,
                      self.dirs | other.dirs, self.imports | other.imports, self.links | other.links)


def _is_user_file(path: str) -> bool:
    return not path.startswith(system_roots()) and os.path.isfile(path)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _ACTIVE:
        return
    if event == "import":
        _imported(args[0])
        return
    if event in ("os.listdir", "os.scandir"):  # a directory listed (by the user's code: `_note_stat`)
        if not isinstance(args[0], int):
            _note_stat(args[0] if args[0] is not None else ".", sys._getframe(1), "dirs")
        return
    if event != "open":
        return
    path, mode = args[0], args[1]
    if isinstance(path, int) or (isinstance(mode, str) and any(c in mode for c in "wax")):
        return
    with contextlib.suppress(TypeError, ValueError, OSError):
        name = os.path.abspath(os.fsdecode(path))
        for record in _ACTIVE:
            record.files.add(name)


def _imported(name: Any) -> None:
    """An import of `name` looked up now: its top-level name, on the search path in force."""
    if not isinstance(name, str) or name.split(".")[0] in _OWN:
        return
    top = name.split(".")[0]
    path = tuple(os.path.abspath(p) for p in sys.path if isinstance(p, str))
    for record in _ACTIVE:
        record.imports.setdefault(top, path)


@functools.cache
def _library_roots() -> tuple[str, ...]:
    """Where the code that only passes a user's call on lives: the standard library."""
    paths = sysconfig.get_paths()
    return tuple({os.path.join(os.path.realpath(paths[k]), "") for k in ("stdlib", "platstdlib")})


def _by_user_code(frame: Any) -> bool:
    """Whether the call at `frame` comes from the user's code: the first frame outside the
    standard library (pathlib, glob, genericpath pass the user's calls on) is neither the
    import system's nor npu-opt's or an installed package's (their own look-ups are no
    inputs of the kernel: a cache directory npu-opt creates must not make the next run miss)."""
    library = _library_roots()
    while frame is not None:
        file = frame.f_code.co_filename
        if file.startswith("<frozen importlib"):
            return False
        if not (file.startswith(library) or file.startswith("<frozen")):
            return _is_user_module_path(file)
        frame = frame.f_back
    return False


@functools.lru_cache(maxsize=None)
def _is_user_module_path(file: str) -> bool:
    return not os.path.abspath(file).startswith(system_roots())


_OWN = OWN_PACKAGES
_STAT = os.stat
_LSTAT = os.lstat
_READLINK = os.readlink


_IN_HOOK = threading.local()
"""Set while a stat hook decides whether its call is the user's: what the decision itself
stats (`system_roots` resolving its paths once a memo of it was cleared) is no input, and
must not re-enter the hook (it recursed until Python's limit, then failed the load)."""


def _recorder(real: Any, part: str) -> Any:
    """`real` (`os.stat`, `os.lstat`, `os.readlink`) telling the active records which paths the
    user's code stat-ed or which links it read (`part`: pathlib's `readlink` and
    `os.path.realpath` call `os.readlink` too)."""
    def hook(path: Any, *args: Any, **kwargs: Any) -> Any:
        if _ACTIVE and not isinstance(path, int) and kwargs.get("dir_fd") is None and \
                not getattr(_IN_HOOK, "on", False):
            _IN_HOOK.on = True
            try:
                _note_stat(path, sys._getframe(1), part)
            finally:
                _IN_HOOK.on = False
        return real(path, *args, **kwargs)

    hook.__name__, hook.__doc__ = real.__name__, real.__doc__
    return hook


def _note_stat(path: Any, frame: Any, part: str) -> None:
    """`path` into the active records' `part` when the call at `frame` is the user's code's (the
    import system's and npu-opt's own look-ups, discovery's walk included, are no inputs)."""
    if not _by_user_code(frame):
        return
    with contextlib.suppress(TypeError, ValueError):
        name = os.path.abspath(os.fsdecode(path))
        for record in _ACTIVE:
            getattr(record, part).add(name)


class _TrackedData(dict):  # type: ignore[type-arg]
    """The process's environment as bytes (`posix.environ`, the store behind `os.environ`
    and `os.environb`), telling the active records which variables were read through it."""

    def _note(self, key: Any) -> None:
        if _ACTIVE:
            name = key.decode("utf-8", "surrogateescape") if isinstance(key, bytes) else str(key)
            for record in _ACTIVE:
                record.env.add(name)

    def _note_all(self) -> None:
        for record in _ACTIVE:
            record.env.add(_ALL)

    def __getitem__(self, key: Any) -> Any:
        self._note(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._note(key)
        return super().get(key, default)

    def __contains__(self, key: Any) -> bool:
        self._note(key)
        return super().__contains__(key)

    def __iter__(self) -> Iterator[Any]:
        self._note_all()
        return super().__iter__()

    def keys(self) -> Any:
        self._note_all()
        return super().keys()

    def items(self) -> Any:
        self._note_all()
        return super().items()

    def values(self) -> Any:
        self._note_all()
        return super().values()

    def copy(self) -> dict:  # type: ignore[type-arg]
        self._note_all()
        return dict(super().items())

    def __reduce__(self) -> Any:  # pickled (a worker's copy): a plain dict
        return (dict, (dict(super().items()),))


@functools.cache  # once per process
def _install() -> None:
    env = os.environ
    data = env._data  # type: ignore[attr-defined]
    if not isinstance(data, _TrackedData):  # `posix.environ` is this very dict: one store, tracked
        data = _TrackedData(data)
        posix = sys.modules.get("posix")
        if posix is not None and getattr(posix, "environ", None) is env._data:  # type: ignore[attr-defined]
            posix.environ = data
    for environ in (env, getattr(os, "environb", None)):  # their every lookup reads the tracked store
        if environ is not None:
            environ._data = data  # type: ignore[attr-defined]
    _library_roots()  # both computed before os.stat is wrapped: they stat paths themselves
    system_roots()
    os.stat = _recorder(_STAT, "stats")
    os.lstat = _recorder(_LSTAT, "stats")
    os.readlink = _recorder(_READLINK, "links")
    sys.addaudithook(_audit)


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
    (those a kernel file's import scope keeps included: npu_opt/per_file_imports.py)."""
    files = {f for f in scope_files() if _user_file_of(f)}  # absolute paths already
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
    return path if _is_user_file(path) else None


def snapshot(record: Record) -> dict[str, dict[str, Any]]:
    """Content hashes of the recorded user files, values of the recorded variables, kinds
    and sizes of the user paths stat-ed, listings of the user directories listed, and the
    file each imported top-level module resolves to on its search path."""
    files = {f for f in record.files if _is_user_file(f)}
    roots = system_roots()
    return {"files": {f: digest(f) for f in sorted(files)},
            "env": {name: env_value(name) for name in sorted(record.env)},
            "stats": {p: stat_of(p) for p in sorted(record.stats) if not p.startswith(roots)},
            "dirs": {d: listing_of(d) for d in sorted(record.dirs) if not d.startswith(roots)},
            "modules": {name: [list(path), resolve(name, list(path))] for name, path in sorted(record.imports.items())},
            "links": {p: link_of(p) for p in sorted(record.links) if not p.startswith(roots)}}
