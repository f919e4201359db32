"""The user's code of a tune file, called so that it cannot decide `npu-opt tune`'s fate
(issue 39, items 5 and 8).

`guarded(space, path)` gives the space with its `factory`, `inputs`, `oracle` and `bound` wrapped:
while one runs, `os._exit(n)` raises instead of ending the process (as while a kernel file
is imported or traced, npu_opt/per_file_imports.py), and `sys.exit()`, `os._exit()` or a stray
`KeyboardInterrupt` become an ordinary exception (`UserExit`): a factory's is that
candidate's error, an `inputs()`, `oracle()` or `bound()` one is a USAGE error naming the line.
Any other exception `inputs()`, `oracle()` or `bound()` raises is a USAGE error with the user's line too,
and `inputs()` must return a tuple (or list) of as many arrays as the kernel takes
parameters: a bare array would otherwise be split into its rows.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from driver.discover import _line_in
from ir.errors import NpuOptError, exception_text
from npu_opt.fault_owner import USER_EXITS, exit_text, interrupted
from npu_opt.device import DeviceKernel
from npu_opt.per_file_imports import no_process_exit
from npu_opt.tune import Space

__all__ = ["UserExit", "guarded"]


class UserExit(Exception):
    """`sys.exit()` / `os._exit()` / `KeyboardInterrupt` raised by the space's code."""


def _usage(path: str, fn: Any, role: str, e: BaseException | None, what: str) -> NpuOptError:
    """USAGE at the user's line: where `e` was raised in the file, else where `fn` starts."""
    line = _line_in(e, Path(path)) if e is not None else None
    line = line or getattr(getattr(fn, "__code__", None), "co_firstlineno", None)
    where = f"{path}:{line}" if line else path
    return NpuOptError(f"{where}: the space's {role} {what}", code="USAGE")


def _call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`fn(*args, **kwargs)` with `os._exit` raising; an exit becomes `UserExit`."""
    try:
        with no_process_exit():
            return fn(*args, **kwargs)
    except USER_EXITS as e:
        if interrupted(e):
            raise  # a real Ctrl-C stops the command
        raise UserExit(f"called {exit_text(e)}; code in a tune space may not exit npu-opt") from e


def _parameter_count(kernel: DeviceKernel | None) -> int | None:
    """How many arguments after `ctx` the kernel's function takes (None: unknown)."""
    try:
        return max(len(inspect.signature(kernel.fn).parameters) - 1, 0)
    except (TypeError, ValueError, AttributeError):
        return None


def guarded(space: Space, path: str) -> Space:
    """`space` with its user functions wrapped (the module docstring)."""
    built: dict[str, Any] = {}  # the kernel the factory built last: how many arrays it takes

    @functools.wraps(space.factory)
    def factory(**params: Any) -> Any:
        kernel = _call(space.factory, (), params)
        built["kernel"] = kernel
        return kernel

    def user(fn: Callable[..., Any] | None, role: str) -> Callable[..., Any] | None:
        if fn is None:
            return None

        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            try:
                return _call(fn, args, {})
            except UserExit as e:
                raise _usage(path, fn, role, e.__cause__, str(e)) from None
            except Exception as e:  # noqa: BLE001 - the user's inputs()/oracle() failing is their error
                if interrupted(e):  # a harness's timeout: not the space's error
                    raise
                raise _usage(path, fn, role, e, f"raised {type(e).__name__}: {exception_text(e)}") from None
        return call

    inputs = user(space.inputs, "inputs()")
    if inputs is not None:
        raw_inputs = inputs

        @functools.wraps(space.inputs)
        def inputs(rng: Any) -> Any:
            got = raw_inputs(rng)
            if not isinstance(got, (tuple, list)):
                raise _usage(path, space.inputs, "inputs()", None,
                             f"returned {type(got).__name__}; it must return a tuple of arrays, one per kernel "
                             "parameter (write `return (x,)` for one)")
            want = _parameter_count(built.get("kernel"))
            if want is not None and len(got) != want:
                raise _usage(path, space.inputs, "inputs()", None,
                             f"returned {len(got)} array(s); kernel `{built['kernel'].name}` takes {want}")
            return tuple(got)

    return attrs.evolve(space, factory=factory, inputs=inputs, oracle=user(space.oracle, "oracle()"),
                        bound=user(space.bound, "bound()"))
