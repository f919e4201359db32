"""The `run` contract shared by the executing backends: arguments in, in-out writes, results out.

`run(kernel, *args)` takes one argument per parameter after `ctx`: a numpy array for a
tensor, a tuple (or list) for a tuple parameter, an instance for a struct parameter
(`npu_opt.params`). `prepare` checks the grouping and every in-out (`Mut`) array before
anything runs: it must be a writable, C-contiguous numpy array of exactly the
parameter's host shape and one of its host dtypes, like numpy's `out=`. A refusal is a
`USAGE` error naming the parameter, and no array is touched. After the kernel ran,
`finish` writes the final contents into the caller's in-out arrays and returns the
results followed by those arrays, in parameter order (one value alone, several as a
tuple, none as None; a tuple return annotation always gives a tuple).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from ir import host_layout
from ir.topology import accepted_host_shapes, host_array_shape, padded_chip_note
from ir.dtypes import i4
from ir.errors import NpuOptError
from ir.resident import DmBuffer, check_resident
from tu_ops.target import TargetLike, as_target, for_chips
from ir.words import a_an

__all__ = ["Call", "check_array", "prepare", "finish", "target_name", "usage_error"]


@attrs.frozen
class Call:
    """One call of `run`: an array per tensor parameter (flat, in index order) and the
    caller's in-out arrays (name, array), in parameter order."""

    flat: tuple[Any, ...]
    outs: tuple[tuple[str, np.ndarray], ...]


def target_name(target: TargetLike, chips: int = 1) -> str:
    """The name of the target a kernel of `chips` chips runs on, given the target by name,
    file or object (`for_chips`: `rngd` names the shipped target of that many chips): what a
    resident buffer's device is compared by."""
    return for_chips(as_target(target), chips).name


def usage_error(message: str) -> NpuOptError:
    """A USAGE error of a bad argument of `run` (this module's and backends/cpu/host.py's)."""
    return NpuOptError(message, code="USAGE")


def _flatten(node: Any, arg: Any, out: list[Any]) -> None:
    """Append the array of every leaf of `node` (a node of `DeviceKernel.param_trees`: a
    leaf has a `spec`, a tuple or struct `members`), taken from the user's argument `arg`."""
    if hasattr(node, "spec"):
        out.append(arg)
        return
    if not hasattr(node, "members"):  # a refused annotation: the trace reported it already
        raise usage_error(f"parameter `{node.name}` has no tensor type")
    if node.cls is None:
        n = len(node.members)
        if not isinstance(arg, (tuple, list)) or len(arg) != n:
            raise usage_error(f"parameter `{node.name}` is a tuple of {n} tensor(s): pass a tuple of {n} array(s), "
                         f"not {type(arg).__name__}" + (f" of length {len(arg)}" if isinstance(arg, (tuple, list)) else ""))
        for (_, member), item in zip(node.members, arg):
            _flatten(member, item, out)
        return
    for field, member in node.members:
        if not hasattr(arg, field):
            raise usage_error(f"parameter `{node.name}` is {a_an(node.cls.__name__)}: pass an instance whose `{field}` "
                         f"is an array, not {type(arg).__name__}")
        _flatten(member, getattr(arg, field), out)


@functools.lru_cache(maxsize=256)
def _accepted(t: Any) -> tuple[tuple[int, ...], tuple[np.dtype, ...], tuple[tuple[int, ...], ...]]:
    """(host shape, host dtypes, accepted shapes) of HBM type `t`, found once per type (a
    run checks every parameter: issue 61, the cpu backend's per-run cost)."""
    return host_array_shape(t), t.dtype.host_dtypes, accepted_host_shapes(t)


def check_array(what: str, t: Any, array: Any, why: str = "") -> None:
    """USAGE unless `array` is a numpy array of one of the host dtypes and the host shape of
    HBM type `t`; `what` names the parameter ("parameter `x`"), `why` follows the shape."""
    shape, dtypes, accepted = _accepted(t)
    if not isinstance(array, np.ndarray) or array.dtype not in dtypes:
        names = " or ".join(str(a) for a in dtypes)
        if not isinstance(array, np.ndarray):
            raise usage_error(f"{what} must be a numpy array of shape {shape} and dtype {names}{why}, "
                              f"not {type(array).__name__}")
        raise usage_error(f"{what} is {t.dtype}: pass {a_an(names)} array, not {array.dtype}")
    if array.shape not in accepted:
        whose = f"element `{t.element}`" if len(shape) == len(host_layout.host_shape(t.element)) else \
            f"type (Chip `{t.chip}`, element `{t.element}`)"
        raise usage_error(f"{what} has shape {array.shape}; its HBM {whose} needs shape {shape}{padded_chip_note(t)}")


def _check_out(name: str, t: Any, array: Any) -> None:
    """USAGE unless `array` can receive in-out parameter `name` (of HBM type `t`) in place."""
    check_array(f"in-out parameter `{name}`", t, array, " (it is written in place)")
    if not array.flags.writeable:
        raise usage_error(f"in-out parameter `{name}` is a read-only array; the kernel writes it in place",)
    if not array.flags.c_contiguous:
        raise usage_error(f"in-out parameter `{name}` is not C-contiguous; pass np.ascontiguousarray(...) "
                     "and read the result from that array")


def prepare(kernel: Any, params: Sequence[tuple[str, Any, bool]], args: Sequence[Any], target: TargetLike) -> Call:
    """Check and flatten the arguments of `run`; `params` is (name, HBM or DM type, in-out)
    of every tensor parameter in index order, `target` the launch's target (a resident
    buffer must live on it)."""
    trees = kernel.param_trees()
    if len(args) != len(trees):
        names = ", ".join(t.name for t in trees) or "none"
        raise usage_error(f"{kernel.name} takes {len(trees)} array(s) ({names}), got {len(args)}")
    flat: list[Any] = []
    for tree, arg in zip(trees, args):
        _flatten(tree, arg, flat)
    if len(flat) != len(params):  # the trace and the annotations disagree: our bug
        raise RuntimeError(f"{kernel.name}: {len(flat)} arrays for {len(params)} tensor parameters")
    check_resident(params, flat, target_name(target, kernel.chips), lambda t: target_name(t, kernel.chips))
    outs = []
    for (name, t, inout), array in zip(params, flat):
        host_layout.refuse_masked(f"parameter `{name}`", array)
        if inout and t.kind != "dm":  # a resident buffer is no host array
            _check_out(name, t, array)
        if inout:
            outs.append((name, array))
    return Call(tuple(flat), tuple(outs))


def finish(call: Call, results: Sequence[np.ndarray], finals: Sequence[np.ndarray], as_tuple: bool) -> Any:
    """Write `finals` into the caller's in-out arrays; return results then those arrays."""
    for (_, out), final in zip(call.outs, finals):
        if isinstance(out, DmBuffer):  # a resident buffer keeps what the launch left
            out.store(final)
        elif out.dtype == final.dtype:
            out[...] = final
        elif out.dtype in i4.host_dtypes[1:]:  # i4 values (int8) into an ml_dtypes.int4 array
            out[...] = final.astype(out.dtype)
        else:  # a float's values into its bit container, or back
            out[...] = final.view(out.dtype)
    values = tuple(results) + tuple(out for _, out in call.outs if not isinstance(out, DmBuffer))
    if as_tuple or len(values) > 1:
        return values
    return values[0] if values else None
