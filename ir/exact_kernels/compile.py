"""Loading numba and compiling kernel modules, for every compiled contraction (`ir.exact_kernels`).

A kernel module names its kernels in `ORDER` (each calls only those before it) and the
innermost in `INLINE`; `compiled` compiles each module once per process, without the GIL
or fast-math, rebinding each name to its compiled form, the machine code kept on disk
under `cache_dir()` (a read-only checkout too) for later processes.

One threshold serves both backends (`JIT_MIN`, measured by benchmarks/bench_first_run.py):
a process keeps the numpy path until the float contractions it has run (this one
included) reach `JIT_MIN` products in all (`wanted`), since numba's import and the load of
the cached kernels cost more than the compiled path saves on fewer; once numba is loaded,
every contraction takes the compiled path. A one-off run stays cheap; a loop of runs
moves to the compiled path after its first few.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from hashlib import sha256
from pathlib import Path
from typing import Any

from ir.exact_kernels import compile_lock

__all__ = ["JIT_MIN", "cache_dir", "compiled", "loaded", "njit", "numba", "numba_version", "read_only", "wanted"]

JIT_MIN = 1 << 28
"""Products from which a process that has not loaded numba yet loads it (module docstring).
Measured (benchmarks/bench_first_run.py, 2 cores, one BLAS thread): numba's import and the
load of the cached kernels cost 0.28-0.44 s of CPU; compiled, a 2^25-product bf16
contraction saves 26 ms on the cpu backend and 48-60 ms in the interpreter, so loading
numba pays from 2^28.5-2^29.0 and 2^27.8-2^27.9 products (two runs); 2^28 is the power of
two nearest their geometric mean. (An earlier machine measured 2^29.5 and 2^28.4, and
2^29.)"""
CACHE_ENV = "NUMBA_CACHE_DIR"
"""numba's own variable: when set, its compiled kernels go there."""


def cache_dir() -> Path:
    """Where the compiled kernels are kept: under `NUMBA_CACHE_DIR` when set, else npu-opt's
    directory in the user cache (`XDG_CACHE_HOME`, else ~/.cache), never the checkout; in a
    subdirectory named by this library's files, since numba keys a kernel's cache on its
    own file only and the kernels of both backends inline the tiles from here."""
    base = os.environ.get(CACHE_ENV) or str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                                            / "npu-opt" / "numba")
    digest = sha256(b"".join(p.read_bytes() for p in sorted(Path(__file__).parent.glob("*.py"))))
    return Path(base) / digest.hexdigest()[:16]


_SEEN = [0]
"""The float contractions' products so far in this process (`wanted`)."""


def wanted(products: int) -> bool:
    """Whether a contraction of `products` products is to run compiled, numba permitting:
    numba loaded already, or this process's contractions (this one included) at least
    `JIT_MIN` products in all."""
    _SEEN[0] += products
    return loaded() or _SEEN[0] >= JIT_MIN


def loaded() -> bool:
    """Whether numba is loaded in this process (then every contraction runs compiled)."""
    return "numba" in sys.modules


@functools.lru_cache(maxsize=1)
def numba() -> Any:
    """The numba module, its disk cache pointed at `cache_dir()`; None when not importable."""
    try:
        import numba as module
    except ImportError:
        return None
    module.config.CACHE_DIR = str(cache_dir())   # numba reads it when a kernel's cache is made
    return module


def numba_version() -> str:
    """The importable numba's version ("" without one)."""
    module = numba()
    return "" if module is None else module.__version__


def njit(module: Any, fn: Any, inline: str = "never") -> Any:
    """`fn` compiled by numba (`module`) without the GIL, its machine code kept on disk when
    a cache directory can be written (numba refuses `cache=True` when none can: then per
    process), each new signature compiled by one process at a time so that the others
    load it from the disk cache (`compile_lock`)."""
    try:
        return compile_lock.guard(module, module.njit(nogil=True, cache=True, inline=inline)(fn))
    except RuntimeError:
        return module.njit(nogil=True, inline=inline)(fn)


def read_only(*args: Any) -> tuple[Any, ...]:
    """`args` with each writeable array a read-only view of itself (anything else as it is):
    numba compiles a kernel once per argument type and a read-only array is a type of its
    own, so a kernel whose inputs came writeable in one call and read-only (a host input, a
    broadcast view) in another was compiled twice or four times; a caller passing the
    arrays a kernel only reads through this gets one. A view costs well under a
    microsecond, and numba's machine code for the two types is the same."""
    out = []
    for array in args:
        if getattr(array, "flags", None) is not None and array.flags.writeable:
            array = array.view()
            array.flags.writeable = False
        out.append(array)
    return tuple(out)


_DONE: dict[str, dict[str, Any]] = {}
_LOCK = threading.Lock()   # one thread compiles a module; another asking meanwhile waits for its kernels


def compiled(*spaces: dict[str, Any]) -> dict[str, Any] | None:
    """The kernels of the kernel modules whose namespaces (`vars(module)`, or a module's own
    `globals()`) are `spaces`, each compiled once per process, in turn, by name; None
    without numba. A module with a `build(numba)` makes its intrinsics first."""
    module = numba()
    if module is None:
        return None
    out: dict[str, Any] = {}
    for space in spaces:
        if space["__name__"] not in _DONE:
            with _LOCK:   # rebinding the names half way, a second thread would compile compiled ones
                if space["__name__"] not in _DONE:
                    _compile(module, space)
        out.update(_DONE[space["__name__"]])
    return out


def _compile(module: Any, space: dict[str, Any]) -> None:
    """Compile one kernel module's `ORDER`, rebinding each name, into `_DONE`."""
    if "build" in space:
        space["build"](module)
    python = {name: space[name] for name in space["ORDER"]}
    done = {}
    for name in space["ORDER"]:
        space[name] = done[name] = njit(module, python[name], "always" if name in space["INLINE"] else "never")
    _DONE[space["__name__"]] = done
