"""The plain interpreter's side of its speed machinery: the one switch, and the hooks the
shortcuts of visa/interp/fast/ register themselves on.

The interpreter's plain modules are the executable spec of the artifact: they import nothing
from visa/interp/fast/ (tests/test_layers.py). Where a shortcut may compute the same bits
faster, the plain code asks this module for it by name (`shortcut`): the function a fast
module registered (`register`), or None when the switch is off or nothing registered, and
the plain code then runs its own path. `per_record` is the hook of the per-record memo
(visa/interp/fast/memo.py). visa/interp/__init__.py loads visa.interp.fast, whose modules
register on import.

The switch: off when the environment variable `NPU_OPT_INTERP_FAST` is `0` (or `false`,
`no`, `off`; a run reads it once, as it starts), or inside `mode(False)` (what
`execute(..., fast=False)` uses); the interpreter then runs only its plain numpy path. `mode` sets the switch for the whole
process while it is open (a concurrent run in another thread sees it too: its results are
the same bits).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar, TypeVar

import numpy as np

__all__ = ["ENV", "on", "mode", "register", "shortcut", "per_record", "frozen", "Held"]

ENV = "NPU_OPT_INTERP_FAST"
"""0: the plain path only; unset or anything else: the speed machinery may run."""
_forced: list[bool] = []
_SHORTCUTS: dict[str, Callable[..., Any]] = {}
F = TypeVar("F", bound=Callable[..., Any])


_run: ContextVar[bool | None] = ContextVar("npu_opt_interp_fast_run", default=None)
"""The environment's switch as a run in this context read it once (`mode(None)`): a run asks
`on` hundreds of times (~1 us each to read the environment)."""


def _from_env() -> bool:
    return os.environ.get(ENV, "").strip().lower() not in ("0", "false", "no", "off")


def on() -> bool:
    """Whether the speed machinery may run (module docstring)."""
    if _forced:
        return _forced[-1]
    read = _run.get()
    return _from_env() if read is None else read


@contextmanager
def mode(fast: bool | None) -> Iterator[None]:
    """The switch set to `fast` while open (None: as the environment says, read once when
    it opens, for this context only)."""
    if fast is None:
        token = _run.set(_from_env())
        try:
            yield
        finally:
            _run.reset(token)
        return
    _forced.append(bool(fast))
    try:
        yield
    finally:
        _forced.pop()


def register(name: str) -> Callable[[F], F]:
    """Enter the decorated function as the shortcut of hook `name` (one per hook)."""
    def enter(fn: F) -> F:
        if _SHORTCUTS.setdefault(name, fn) is not fn:
            raise ValueError(f"two shortcuts for the interpreter's hook {name!r}")
        return fn

    return enter


def shortcut(name: str) -> Callable[..., Any] | None:
    """The shortcut registered on hook `name`, or None: the switch is off, or none is registered."""
    return _SHORTCUTS.get(name) if on() else None


class Held:
    """A stream a shortcut holds in a form of its own instead of the plain `(rows, T, P)`
    array: `KIND` names the form (a reader says which forms it takes,
    `visa.interp.steps.ProgramState.input`), `materialize()` writes it out."""

    KIND: ClassVar[str] = ""
    shape: tuple[int, ...]
    dtype: np.dtype

    def materialize(self) -> np.ndarray:
        raise NotImplementedError

    def strided(self) -> np.ndarray:
        """Its plain `(rows, T, P)` values for a reader that takes any strides (the form
        "strided"): a view of what it holds when it can be one, else written out."""
        return self.materialize()

    def natural_view(self, count: int, pattern: np.ndarray) -> np.ndarray | None:
        """Its elements at `pattern` (rows first) as a view of what it holds, or None."""
        return None

    def trf_rows_view(self, bits: int, row: np.dtype, lanes: int, nrows: int) -> np.ndarray | None:
        """Its flits as a view (rows, *loops, row elements) a TRF load stores from, or None;
        of the stored rows only (the others undefined) when `stored_rows` is not None."""
        return None

    def stored_rows(self) -> np.ndarray | None:
        """Each row's stored row when only some rows are stored (a row repeats its stored
        one), else None: every row is."""
        return None

    def equal_rows(self) -> np.ndarray | None:
        """Each row's first row holding the same values, when known (every row stored or
        not), else None."""
        return self.stored_rows()


def frozen(value: Any) -> Any:
    """`value` with its arrays (or a tuple's) made read-only: what a record determines is shared."""
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
    elif isinstance(value, tuple):
        for v in value:
            frozen(v)
    return value


def per_record(fn: F) -> F:
    """A function of a record's own fields (and a few plain numbers): computed every time on
    the plain path, remembered by the memo shortcut (hook "per_record") when it runs. Its
    arrays are read-only either way."""
    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def run(*args: Any) -> Any:
        memo = shortcut("per_record")
        return memo(name, fn, args) if memo is not None else frozen(fn(*args))

    return run  # type: ignore[return-value]
