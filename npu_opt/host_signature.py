"""A kernel's calling convention on the host, read from its types without running it.

`npu_opt.run` takes one numpy array per tensor parameter and returns the results, then the
in-out arrays. A framework op (`npu_opt.torch`, `npu_opt.jax`) needs the same facts before
any data exists: the shape and dtype of every argument and result, which parameters the
kernel writes in place, and which are launch-time scalars. `host_signature` traces the
kernel once (the typecheck backend's work: no lowering, no execution) and reads them from
the traced `param` and `return` ops; a refused kernel raises its `CompileError` here, so a
framework op is never built around a kernel that cannot run.

Only top-level parameters are accepted: a tuple or struct parameter (`npu_opt.params`) and
a resident DM buffer (`DmTensor[...].alloc`) have no single-array form in a framework's
operator schema (USAGE, with the way around it).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from backends.cpu.host import returns_tuple
from ir.errors import CompileError, NpuOptError
from ir.runtime_types import ScalarType
from ir.topology import host_array_shape
from npu_opt.device import DeviceKernel
from tu_ops.target import TargetLike, as_target, for_chips

__all__ = ["HostArg", "HostResult", "HostSignature", "host_signature"]


@attrs.frozen
class HostArg:
    """One parameter after `ctx`: a tensor (`shape`, `dtypes`: the host dtypes `run`
    accepts, the first preferred) or a launch-time scalar (`scalar`: its type's name)."""

    name: str
    shape: tuple[int, ...] = ()
    dtypes: tuple[np.dtype, ...] = ()
    inout: bool = False
    scalar: str | None = None


@attrs.frozen
class HostResult:
    """One returned tensor: its host shape and host dtypes (the first is what `run` gives)."""

    shape: tuple[int, ...]
    dtypes: tuple[np.dtype, ...]


@attrs.frozen
class HostSignature:
    """What `npu_opt.run(kernel, ...)` takes and gives, as data."""

    name: str
    args: tuple[HostArg, ...]
    results: tuple[HostResult, ...]
    as_tuple: bool  # the return annotation is a tuple: `run` always returns a tuple

    @property
    def inouts(self) -> tuple[HostArg, ...]:
        return tuple(a for a in self.args if a.inout)

    def values(self, returned: Any) -> tuple[Any, ...]:
        """What `npu_opt.run` returned, as a tuple: the results, then the in-out arrays."""
        return returned if isinstance(returned, tuple) else (() if returned is None else (returned,))

    def shaped(self, results: tuple[Any, ...]) -> Any:
        """The kernel's results as `run` gives them: None, one value, or a tuple."""
        if not results:
            return None
        return results[0] if len(results) == 1 and not self.as_tuple else results


def _usage(message: str) -> NpuOptError:
    return NpuOptError(message, code="USAGE")


def host_signature(kernel: Any, target: TargetLike = "rngd") -> HostSignature:
    """The host signature of `kernel` on `target` (CompileError when the kernel is refused)."""
    if not isinstance(kernel, DeviceKernel):
        raise _usage(f"a framework op wraps a @device kernel, not {type(kernel).__name__}")
    for tree in kernel.param_trees():
        if not hasattr(tree, "spec"):
            raise _usage(f"{kernel.name}: parameter `{tree.name}` is a tuple or struct; a framework op takes "
                         "tensors and scalars as top-level parameters (write a kernel that takes its members "
                         "one by one)")
    traced = kernel.trace(for_chips(as_target(target), kernel.chips))
    if traced.errors:
        raise CompileError(traced.errors)
    ir = traced.kernel
    args = []
    for p in sorted(ir.params, key=lambda p: p.index):
        t = p.result.type
        if isinstance(t, ScalarType):
            args.append(HostArg(p.name, scalar=t.dtype.name))
        elif t.kind == "dm":
            raise _usage(f"{kernel.name}: parameter `{p.name}` is a resident DM buffer; a framework op passes "
                         "host tensors only (launch it with npu_opt.run)")
        else:
            args.append(HostArg(p.name, host_array_shape(t), tuple(t.dtype.host_dtypes), bool(p.mutable)))
    returned = ir.returns.values if ir.returns is not None else ()
    results = tuple(HostResult(host_array_shape(v.type), tuple(v.type.dtype.host_dtypes)) for v in returned)
    return HostSignature(kernel.name, tuple(args), results, returns_tuple(kernel))

