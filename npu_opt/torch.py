"""`npu_opt.torch.op(kernel)`: a kernel as a PyTorch custom operator (docs/frameworks.md).

The operator is registered with `torch.library.custom_op` under the namespace `npu_opt`.
Its CPU implementation is `npu_opt.run` (the cpu backend by default, the VISA interpreter
with `backend="visa"`), so it computes what the chip computes, bit for bit. Its fake
implementation builds empty results of the shapes and dtypes the kernel's types declare
(`npu_opt.host_signature`), so FX tracing and `torch.compile` never run the kernel to learn
them. In-out parameters (`Mut[...]`) are declared mutated and written in place; the
operator returns the kernel's results only (none: `None`, one: a tensor, several: a tuple).

Tensors cross without copies where the layout allows: a contiguous CPU tensor is viewed as a
numpy array (bf16 and f8 through their bit containers), a result array is viewed as a
tensor. A refusal or a launch error raises the `NpuOptError` of `npu_opt.run`, whose
`.code` names the rule.

Importing this module imports torch; `import npu_opt` alone never does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import torch

from ir.errors import NpuOptError
from ir.words import a_an
from npu_opt.host_signature import HostArg, HostSignature, host_signature
from npu_opt.run import run

__all__ = ["op", "NAMESPACE"]

NAMESPACE = "npu_opt"

# numpy (host) dtype -> (torch dtype, the same-width integer both can view it as, or None)
_TORCH: dict[np.dtype, tuple[torch.dtype, Any]] = {
    np.dtype(np.int8): (torch.int8, None),
    np.dtype(np.uint8): (torch.uint8, None),
    np.dtype(np.int16): (torch.int16, None),
    np.dtype(np.int32): (torch.int32, None),
    np.dtype(np.float32): (torch.float32, None),
    np.dtype(ml_dtypes.bfloat16): (torch.bfloat16, (torch.int16, np.int16)),
    np.dtype(ml_dtypes.float8_e4m3fn): (torch.float8_e4m3fn, (torch.uint8, np.uint8)),
    np.dtype(ml_dtypes.float8_e5m2): (torch.float8_e5m2, (torch.uint8, np.uint8)),
}
_SCALAR_SCHEMA = {"bool": "bool"}  # every integer scalar type is a schema `int`

_OPS: dict[tuple[int, str, str], tuple[Any, Any]] = {}  # (kernel id, backend, target) -> (kernel, op)


def _host(dtypes: tuple[np.dtype, ...], what: str) -> tuple[np.dtype, torch.dtype, Any]:
    """The first host dtype with a torch counterpart: (numpy dtype, torch dtype, bit view)."""
    for d in dtypes:
        if d in _TORCH:
            tdtype, bits = _TORCH[d]
            return d, tdtype, bits
    raise NpuOptError(f"{what} is {dtypes[0]}, which has no PyTorch dtype; a PyTorch op passes i8, u8, i16, i32, "
                      "f32, bf16, f8e4m3 and f8e5m2 tensors", code="USAGE")


def _to_numpy(t: torch.Tensor, arg: HostArg) -> tuple[np.ndarray, bool]:
    """A numpy array of `t`'s values and whether it shares `t`'s memory: it does for a
    contiguous CPU tensor (bf16 and f8 through their bit containers); another device or a
    strided view is copied."""
    if not isinstance(t, torch.Tensor):
        raise NpuOptError(f"parameter `{arg.name}` takes a torch.Tensor, not {type(t).__name__}", code="USAGE")
    host, tdtype, bits = _host(arg.dtypes, f"parameter `{arg.name}`")
    if t.dtype != tdtype:
        raise NpuOptError(f"parameter `{arg.name}` is {a_an(str(tdtype))} tensor, not {t.dtype}", code="USAGE")
    t = t.detach()
    shared = t.device.type == "cpu" and t.is_contiguous()
    if not shared:
        t = t.to("cpu").contiguous()
    array = t.numpy() if bits is None else t.view(bits[0]).numpy().view(host)
    return array, shared


def _to_torch(a: np.ndarray) -> torch.Tensor:
    """A tensor sharing the result array `a`'s memory."""
    a = np.ascontiguousarray(a)
    tdtype, bits = _TORCH[a.dtype]
    if bits is None:
        return torch.from_numpy(a)
    return torch.from_numpy(a.view(bits[1])).view(tdtype)


def _device(args: tuple[Any, ...]) -> torch.device:
    """The device of the first tensor argument (the CPU without one)."""
    return next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))


def _schema(sig: HostSignature) -> str:
    """The operator schema: `(Tensor x, Tensor(a!) out, int n) -> Tensor`."""
    params = []
    aliases = iter("abcdefghijklmnopqrstuvwxyz")
    for a in sig.args:
        if a.scalar is not None:
            params.append(f"{_SCALAR_SCHEMA.get(a.scalar, 'int')} {a.name}")
        elif a.inout:
            params.append(f"Tensor({next(aliases)}!) {a.name}")
        else:
            params.append(f"Tensor {a.name}")
    if not sig.results:
        out = "()"
    elif len(sig.results) == 1 and not sig.as_tuple:
        out = "Tensor"
    else:
        out = "(" + ", ".join("Tensor" for _ in sig.results) + ")"
    return f"({', '.join(params)}) -> {out}"


_NAMES: set[str] = set()  # operator names registered by this process


def _op_name(sig: HostSignature, backend: str) -> str:
    """`<kernel>_<backend>`, numbered when another kernel of the same name took it."""
    base = re.sub(r"\W", "_", f"{sig.name}_{backend}")
    name, n = base, 1
    while name in _NAMES:
        n += 1
        name = f"{base}_{n}"
    _NAMES.add(name)
    return name


def op(kernel: Any, *, backend: str = "cpu", target: str = "rngd") -> Callable[..., Any]:
    """The PyTorch custom operator of `kernel` (the same object for the same kernel,
    backend and target): call it with one tensor per tensor parameter and a Python int
    (bool) per `HbmScalar`, in parameter order; it returns the kernel's results and writes
    its in-out tensors in place. `backend` is `"cpu"` or `"visa"`."""
    if backend not in ("cpu", "visa"):
        raise NpuOptError(f"backend={backend!r}: a PyTorch op runs on 'cpu' or 'visa'", code="USAGE")
    key = (id(kernel), backend, str(target))
    if key in _OPS:
        return _OPS[key][1]
    sig = host_signature(kernel, target)
    for a in sig.args:
        if a.scalar is None:
            _host(a.dtypes, f"parameter `{a.name}`")
    results = [(r.shape, _host(r.dtypes, f"a result of {sig.name}")[1]) for r in sig.results]

    def impl(*args: Any) -> Any:
        arrays, copied = [], []
        for a, value in zip(sig.args, args):
            if a.scalar is not None:
                arrays.append(bool(value) if a.scalar == "bool" else int(value))
                continue
            array, shared = _to_numpy(value, a)
            if a.inout and not shared:
                copied.append((value, array))
            arrays.append(array)
        out = run(kernel, *arrays, backend=backend, target=target)
        for tensor, array in copied:  # a strided or non-CPU in-out tensor: write the final values back
            tensor.copy_(_to_torch(array))
        device = _device(args)  # where the fake results said they are
        return sig.shaped(tuple(_to_torch(v).to(device) for v in sig.values(out)[:len(sig.results)]))

    def fake(*args: Any) -> Any:
        device = _device(args)
        return sig.shaped(tuple(torch.empty(shape, dtype=dtype, device=device) for shape, dtype in results))

    name = f"{NAMESPACE}::{_op_name(sig, backend)}"
    mutated = tuple(a.name for a in sig.inouts)
    custom = torch.library.custom_op(name, impl, mutates_args=mutated, schema=_schema(sig))
    custom.register_fake(fake)
    _OPS[key] = (kernel, custom)  # the kernel is kept alive, so its id names it
    return custom
