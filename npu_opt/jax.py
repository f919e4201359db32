"""`npu_opt.jax.op(kernel)`: a kernel as a JAX function (docs/frameworks.md).

The function calls `npu_opt.run` through `jax.pure_callback`, with the shapes and dtypes of
its outputs read from the kernel's types (`npu_opt.host_signature`), so it works under
`jax.jit` and `jax.vmap` (one launch per batch element). JAX arrays are immutable, so an
in-out parameter (`Mut[...]`) is an input whose final contents come back as an output: the
function returns what `npu_opt.run` returns, the results followed by the final in-out
arrays. bf16 and f8 arrays are the same `ml_dtypes` types in JAX and npu-opt, so values
cross unchanged. A launch-time scalar (`HbmScalar`) is a Python int (or bool) or a 0-d
integer array. A refusal raises the kernel's `CompileError` when the function is made. A
launch error (`RunTimeRefusal`, with its `.code`) raises as it is when the function is
called eagerly; under `jax.jit` JAX reports it as a `JaxRuntimeError` whose message holds
the code and the sentence.

Importing this module imports jax; `import npu_opt` alone never does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ir.errors import NpuOptError
from ir.words import a_an
from npu_opt.host_signature import host_signature
from npu_opt.run import run

__all__ = ["op"]

_SCALAR_DTYPES = {"bool": np.bool_, "i32": np.int32, "u32": np.uint32}  # 64-bit ones follow jax's x64 flag


def _scalar_dtype(name: str) -> Any:
    if name in _SCALAR_DTYPES:
        return _SCALAR_DTYPES[name]
    return np.int64 if jax.config.jax_enable_x64 else np.int32


def op(kernel: Any, *, backend: str = "cpu", target: str = "rngd") -> Callable[..., Any]:
    """A JAX function running `kernel` (one array per tensor parameter, an int per scalar,
    in parameter order); it returns the results then the final in-out arrays, like
    `npu_opt.run`. `backend` is `"cpu"` or `"visa"`."""
    if backend not in ("cpu", "visa"):
        raise NpuOptError(f"backend={backend!r}: a JAX op runs on 'cpu' or 'visa'", code="USAGE")
    sig = host_signature(kernel, target)
    outputs = [jax.ShapeDtypeStruct(r.shape, r.dtypes[0]) for r in sig.results]
    outputs += [jax.ShapeDtypeStruct(a.shape, a.dtypes[0]) for a in sig.inouts]
    single = len(outputs) == 1 and not sig.as_tuple
    if not outputs:
        raise NpuOptError(f"{sig.name} has neither results nor in-out parameters: a JAX function of it would "
                          "return nothing", code="USAGE")

    def host(*arrays: Any) -> Any:
        values = []
        for a, array in zip(sig.args, arrays):
            if a.scalar is not None:
                values.append(bool(array) if a.scalar == "bool" else int(array))
            elif a.inout:  # written in place: a private, writable copy
                values.append(np.array(array, dtype=a.dtypes[0], copy=True, order="C"))
            else:
                values.append(np.asarray(array))
        out = sig.values(run(kernel, *values, backend=backend, target=target))
        return out[0] if single else out

    def call(*args: Any) -> Any:
        if len(args) != len(sig.args):
            names = ", ".join(a.name for a in sig.args)
            raise NpuOptError(f"{sig.name} takes {len(sig.args)} argument(s) ({names}), got {len(args)}",
                              code="USAGE")
        arrays = []
        for a, value in zip(sig.args, args):
            if a.scalar is not None:
                arrays.append(jnp.asarray(value, dtype=_scalar_dtype(a.scalar)))
                continue
            array = jnp.asarray(value)
            if array.shape != a.shape or array.dtype not in a.dtypes[:1]:
                raise NpuOptError(f"parameter `{a.name}` takes {a_an(str(a.dtypes[0]))} array of shape {a.shape}, not "
                                  f"{array.dtype} {array.shape}", code="USAGE")
            arrays.append(array)
        if not any(isinstance(x, jax.core.Tracer) for x in arrays):  # called eagerly: no callback, so a
            out = host(*arrays)                                            # refusal raises its own NpuOptError
            return jnp.asarray(out) if single else tuple(jnp.asarray(o) for o in out)
        shapes = outputs[0] if single else tuple(outputs)
        return jax.pure_callback(host, shapes, *arrays, vmap_method="sequential")

    call.__name__ = sig.name
    call.__doc__ = f"{sig.name} on the {backend} backend of npu-opt (npu_opt.jax.op)"
    return call
