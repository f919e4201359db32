"""Each kernel file sees its own imports.

Python keeps one `sys.modules` for the whole process: once `a/ka.py` has imported its
`helper`, `b/kb.py`'s `import helper` would get a's module, not the `helper.py` beside b.
So the command line loads each kernel file in its own import scope: the user modules
(neither the Python installation's nor npu-opt's) its import added to `sys.modules` are
taken out again afterwards and kept with the file, with the file's directory. While one
of its kernels is traced, `in_scope` puts them (and the directory, first on `sys.path`)
back, so a helper imported inside a kernel body is the file's own too. The names the file's
code rebinds in npu-opt's modules (and numpy's...) stay its own as well
(npu_opt/shared_modules.py). And while the user's code runs there, `os._exit(n)` raises
instead of ending npu-opt with status n.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import sysconfig
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from ir.location import OWN_PACKAGES
from npu_opt.fault_owner import ClosedOutput, ProcessExit, SelfSignal
from npu_opt.shared_modules import forget, own_changes

__all__ = ["system_roots", "is_user_module", "loading", "in_scope", "scope_files", "no_process_exit"]


@functools.cache
def system_roots() -> tuple[str, ...]:
    """Directories whose modules are not the user's: the Python installation's and npu-opt's."""
    roots = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {sys.prefix, sys.base_prefix, sys.exec_prefix}
    here = Path(__file__).resolve().parents[1]  # npu-opt's own packages, loaded yet or not
    roots.update(str(here / package) for package in sorted(OWN_PACKAGES))
    return tuple(str(Path(r).resolve()) + os.sep for r in roots if r)


def is_user_module(module: object) -> bool:
    """Whether a loaded module comes from a file outside the installation and npu-opt."""
    file = getattr(module, "__file__", None)
    return isinstance(file, str) and _user_file(file)


@functools.lru_cache(maxsize=None)
def _user_file(file: str) -> bool:
    return not os.path.abspath(file).startswith(system_roots())


_SCOPES: dict[str, tuple[str, dict[str, ModuleType]]] = {}  # kernel module name -> (directory, modules)
_SCOPE_LOCK = threading.RLock()
"""Held while a scope is in place: `sys.modules`, `sys.path` and `os._exit` are the process's,
so two threads tracing kernels of loaded files (a dask worker's threads in `npu-opt tune`)
take turns; one thread may nest scopes (a kernel traced while its file loads)."""


def _take_out(before: set[str]) -> dict[str, ModuleType]:
    """Remove from `sys.modules` the user modules added since `before`; return them."""
    taken = {}
    for name in [n for n in sys.modules if n not in before]:
        module = sys.modules[name]
        if is_user_module(module):
            taken[name] = sys.modules.pop(name)
    return taken


@contextlib.contextmanager
def loading(module_name: str, directory: str) -> Iterator[None]:
    """Import a kernel file (module `module_name`, in `directory`) in its own scope."""
    _SCOPES[module_name] = (directory, {})
    forget(module_name)
    with in_scope(module_name):
        yield


@contextlib.contextmanager
def in_scope(module_name: str) -> Iterator[None]:
    """Run code of the kernel file `module_name` with its own modules and directory first
    on `sys.path` (nothing changes for a module the command line did not load)."""
    scope = _SCOPES.get(module_name)
    if scope is None:
        yield
        return
    directory, modules = scope
    with _SCOPE_LOCK, no_process_exit(), _kept_streams(), _own_modules(module_name, directory, modules), \
            own_changes(module_name):
        yield


class _Unclosable:
    """A standard stream as the user's code sees it: everything is the stream's, except
    `close()`, which only flushes (npu-opt still writes its report there)."""

    def __init__(self, stream: Any) -> None:
        object.__setattr__(self, "_stream", stream)

    def close(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._stream, name, value)

    def __iter__(self) -> Any:
        return iter(self._stream)

    def __enter__(self) -> "_Unclosable":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@contextlib.contextmanager
def _kept_streams() -> Iterator[None]:
    """`sys.stdout` and `sys.stderr` while the user's code runs: streams it cannot close
    (`sys.stdout.close()` closed file descriptor 1 under npu-opt's report: a traceback,
    issue 39), and the originals put back afterwards even if it replaced them."""
    kept = (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)
    sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__ = (_Unclosable(s) if s is not None else s for s in kept)
    try:
        yield
    finally:
        sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__ = kept


@contextlib.contextmanager
def no_process_exit() -> Iterator[None]:
    """`os._exit(n)` raises `ProcessExit(n)` while the user's code runs: its exit status
    cannot pass for npu-opt's, and a worker process is not killed by it. A signal the
    code sends its own process (`os.kill(os.getpid(), SIGTERM)`, `signal.raise_signal`,
    `os.killpg` of its group, `os.abort()`) raises `SelfSignal` the same way: a worker
    killed by it was reported as npu-opt's internal error. Closing or replacing file
    descriptor 1 or 2 (`os.close`, `os.dup2`, `os.closerange`), where npu-opt writes its
    report, raises `ClosedOutput` (the command exited 1 with nothing said)."""

    real_exit, real_kill, real_killpg, real_raise, real_abort = \
        os._exit, os.kill, os.killpg, signal.raise_signal, os.abort
    real_close, real_dup2, real_closerange = os.close, os.dup2, os.closerange

    def _exit(status: int) -> None:
        raise ProcessExit(status)

    def kill(pid: int, sig: int) -> None:
        if pid in (0, os.getpid()) and sig != 0:
            raise SelfSignal(_signal_name(sig))
        real_kill(pid, sig)

    def killpg(group: int, sig: int) -> None:
        if group in (0, os.getpgrp()) and sig != 0:
            raise SelfSignal(_signal_name(sig))
        real_killpg(group, sig)

    def raise_signal(sig: int) -> None:
        raise SelfSignal(_signal_name(sig))

    def abort() -> None:
        raise SelfSignal("SIGABRT")

    def close(fd: int) -> None:
        _keep_output(f"os.close({fd!r})", fd)
        real_close(fd)

    def dup2(fd: int, fd2: int, inheritable: bool = True) -> int:
        _keep_output(f"os.dup2({fd!r}, {fd2!r})", fd2)
        return real_dup2(fd, fd2, inheritable)

    def closerange(low: int, high: int) -> None:
        for fd in _OUTPUTS:
            if low <= fd < high:
                _keep_output(f"os.closerange({low!r}, {high!r})", fd)
        real_closerange(low, high)

    os._exit, os.kill, os.killpg, signal.raise_signal, os.abort = _exit, kill, killpg, raise_signal, abort
    os.close, os.dup2, os.closerange = close, dup2, closerange
    try:
        yield
    finally:
        os._exit, os.kill, os.killpg, signal.raise_signal, os.abort = \
            real_exit, real_kill, real_killpg, real_raise, real_abort
        os.close, os.dup2, os.closerange = real_close, real_dup2, real_closerange


_OUTPUTS = {1: "standard output", 2: "standard error"}


def _keep_output(call: str, fd: object) -> None:
    """`ClosedOutput` for a call that would close or replace npu-opt's output descriptor `fd`."""
    if fd in _OUTPUTS:
        raise ClosedOutput(call, _OUTPUTS[fd])


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


@contextlib.contextmanager
def _own_modules(module_name: str, directory: str, modules: dict[str, ModuleType]) -> Iterator[None]:
    hidden = {n: sys.modules.pop(n) for n in list(sys.modules) if n != module_name and n in modules}
    hidden.update({n: sys.modules.pop(n) for n in list(sys.modules)
                   if n != module_name and n not in modules and is_user_module(sys.modules[n])})
    sys.modules.update(modules)
    before = set(sys.modules) - set(modules)
    sys.path.insert(0, directory)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(directory)
        for name in modules:
            sys.modules.pop(name, None)
        modules.update(_take_out(before))
        for name, module in hidden.items():
            sys.modules.setdefault(name, module)


def scope_files() -> set[str]:
    """The files of every module kept in a scope (what the kernels' imports read)."""
    return {os.path.abspath(m.__file__) for _, modules in _SCOPES.values() for m in modules.values()
            if isinstance(getattr(m, "__file__", None), str)}
