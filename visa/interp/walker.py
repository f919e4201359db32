"""The walker: execute a lowered kernel's body in program order (visa/visa.lark item 4).

`execute(artifact_or_kernel, arrays, target)` binds each host array to its parameter as
HBM bytes, runs every `dma` record and every TU program (its FeedBuffer, then the ops in
order; the three contraction records run as one step), and returns the results named by
`return` as host arrays. Each record kind runs through the step its executing module
declares (`visa.interp.steps`). Values live in one environment: HBM tensors as byte arrays, DM
tensors as addresses, TRF tensors as row ranges, streams as per-slice value arrays local
to their program. Nothing here reads the traced IR or the Python kernel.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tu_ops.program import LoweredKernel, TuProgram
from tu_ops.target import Target, get_target
from visa.interp import contract, drain, engines, feed, vector  # noqa: F401 - each declares its steps
from visa.interp import vrf  # noqa: F401
from visa.interp.alloc import allocate
from visa.interp.dma import DmTensor, run_dma
from visa.interp.errors import InterpError, check
from visa.interp.host import check_count, from_hbm, to_hbm
from visa.interp.memory import Memory
from visa.interp.rows import Rows
from visa.interp.steps import STEPS, ProgramState
from visa.interp.trf import TrfTensor

__all__ = ["execute", "run_kernel", "resolve"]


def resolve(artifact_or_kernel: Any, target: Any = None) -> tuple[LoweredKernel, Target]:
    """The lowered kernel and the target object of an artifact, a kernel, and a target
    name, path or object (default: the target the artifact names, else `rngd`)."""
    kernel = getattr(artifact_or_kernel, "kernel", artifact_or_kernel)
    if not isinstance(kernel, LoweredKernel):
        raise TypeError(f"execute() takes a VisaArtifact or a LoweredKernel, not {type(artifact_or_kernel).__name__}")
    if target is None:
        target = getattr(artifact_or_kernel, "target", None) or "rngd"
    if not isinstance(target, Target):
        target = get_target(target)
    return kernel, target


def execute(artifact_or_kernel: Any, arrays: Sequence[Any], target: Any = None,
            as_tuple: bool | None = None) -> Any:
    """Run an artifact on host arrays (one per parameter, in signature order).

    Returns one array, a tuple when the kernel has several results (or `as_tuple`), or
    None without results; bf16/f8/f4 results are `ml_dtypes` arrays. Raises `NpuOptError`
    (USAGE) for bad arrays and `InterpError` for an artifact it cannot execute."""
    kernel, tgt = resolve(artifact_or_kernel, target)
    check_count(kernel.name, kernel.params, arrays)
    hbm = [to_hbm(p, a, tgt) for p, a in zip(kernel.params, arrays)]
    outputs = run_kernel(kernel, hbm, tgt)
    types = {op.result.id: op.output_type for op in kernel.ops()} | {p.ref.id: p.type for p in kernel.params}
    values = tuple(from_hbm(buf, types[r.id], tgt) for r, buf in zip(kernel.results, outputs))
    if as_tuple or (as_tuple is None and len(values) > 1):
        return values
    return values[0] if values else None


def run_kernel(kernel: LoweredKernel, params: Sequence[np.ndarray], target: Target) -> list[np.ndarray]:
    """Run the body on HBM parameter bytes; return the HBM bytes of the results, in order."""
    mem = Memory(target)
    mem.dm_address, mem.trf_row = allocate(kernel, target)
    env: dict[int, Any] = {p.ref.id: data for p, data in zip(kernel.params, params)}
    for step in kernel.steps:
        if isinstance(step, TuProgram):
            _program(step, mem, env)
        else:
            env[step.result.id] = run_dma(step, mem, env)
    out = []
    for r in kernel.results:
        value = env.get(r.id)
        if not isinstance(value, np.ndarray):
            raise InterpError(f"the result {r} is not an HBM tensor")
        out.append(value)
    return out


def _program(program: TuProgram, mem: Memory, env: dict[int, Any]) -> None:
    """Run one TU program on its live slices; its sink's value goes into `env`."""
    state = ProgramState(Rows(program.space), mem, env)
    ops = list(program.ops)
    check(bool(ops) and ops[0].MNEMONIC == "feed_buffer", "a program starts with its feed_buffer", program.sink)
    i = 0
    while i < len(ops):
        op = ops[i]
        step = STEPS.get(op.MNEMONIC)
        if step is None:
            raise InterpError(f"`{op.MNEMONIC}` cannot run here", op)
        i += step(ops, i, state)
    check(isinstance(env.get(ops[-1].result.id), (DmTensor, TrfTensor, vrf.VrfValues)),
          "a program ends with its trf_load, vrf_load or commit", ops[-1])
