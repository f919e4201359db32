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

from typing import TYPE_CHECKING, Any, Callable, Sequence, Union

import attrs
import numpy as np

from ir.regions import LoopRun, extend_reads, loops
from ir.runtime_types import checked_start
from ir.resident import host_type
from tu_ops.base import Ref
from tu_ops.program import LoweredKernel, TuProgram, resident_ranges
from tu_ops.target import Target, TargetLike, as_target
from tu_ops.trf_new import trf_maker
from visa.interp.alloc import allocate
from ir.mapping.live import live_positions
from visa.interp.dma import DmTensor, live_parts, run_dma, tensor_bytes
from visa.interp.errors import InterpError, check
from visa.interp.gather import run_gather, run_redistribute, run_scatter, run_shuffle
from visa.interp.host import as_hbm_param, check_count, from_hbm, load, save, to_hbm
from visa.interp.shortcuts import per_record, shortcut
from visa.interp.memory import Memory, copy_bytes
from visa.interp.rows import Rows, rows_of
from visa.interp.runtime import Guards
from visa.interp import shortcuts
from visa.interp.steps import STEPS, ProgramState
from visa.interp.trf import TrfTensor
from visa.interp.values import value_dtype
from visa.interp.vrf import VrfValues
from visa.interp import (  # noqa: F401 - the modules that declare the steps STEPS holds
    contract, drain, engines, feed, switch, trf, vector, vector_branch, vector_pair, vrf,
)

__all__ = ["execute", "execute_inout", "run_kernel", "resolve"]

if TYPE_CHECKING:
    from visa.artifact import VisaArtifact

Runnable = Union["VisaArtifact", LoweredKernel]
"""What the interpreter executes: a parsed artifact or the lowered kernel it holds."""
_OTHER_STEPS: dict[str, Callable[[Any, Memory, dict[int, Any], LoweredKernel], Any]] = {
    "tensor_new": lambda step, mem, env, kernel: new_tensor(step, mem),
    "memset": lambda step, mem, env, kernel: run_memset(step, mem, env),
    # the same VRF words or TRF rows, named anew (tu_ops.rf_reshape)
    "rf_reshape": lambda step, mem, env, kernel: env[step.operands()[0].id],
    # a DMA whose SPM side is stored as HBM bytes (tu_ops/spm.py)
    "dma_spm": lambda step, mem, env, kernel: run_dma(step.as_dma(), mem, env),
    "dma_shuffle": lambda step, mem, env, kernel: run_shuffle(step, mem, env),
    "dma_redistribute": lambda step, mem, env, kernel: run_redistribute(step, mem, env),
    "dma_relayout": lambda step, mem, env, kernel: run_redistribute(step, mem, env),
    "dma_gather": lambda step, mem, env, kernel: run_gather(step, mem, env, _types(kernel)),
    "dma_scatter": lambda step, mem, env, kernel: run_scatter(step, mem, env, _types(kernel)),
}
"""The body steps other than programs and plain DMAs, each run by its function into its value;
`_run` hands the rest to `run_dma` (which keeps the DM's copy notes itself)."""


def resolve(artifact_or_kernel: Runnable, target: TargetLike = None) -> tuple[LoweredKernel, Target]:
    """The lowered kernel and the target object of an artifact, a kernel, and a target
    name, path or object (default: the target the artifact names, else `rngd`)."""
    kernel = getattr(artifact_or_kernel, "kernel", artifact_or_kernel)
    if not isinstance(kernel, LoweredKernel):
        raise TypeError(f"execute() takes a VisaArtifact or a LoweredKernel, not {type(artifact_or_kernel).__name__}")
    if target is None:
        target = getattr(artifact_or_kernel, "target", None) or "rngd"
    return kernel, as_target(target)


def execute(artifact_or_kernel: Runnable, arrays: Sequence[Any], target: TargetLike = None,
            as_tuple: bool | None = None, fast: bool | None = None) -> Any:
    """Run an artifact on host arrays (one per parameter, in signature order).

    Returns one array, a tuple when the kernel has several results (or `as_tuple`), or
    None without results; bf16/f8/f4 results are `ml_dtypes` arrays. Raises `NpuOptError`
    (USAGE) for bad arrays and `InterpError` for an artifact it cannot execute. `fast`:
    False runs the plain path only, None as `NPU_OPT_INTERP_FAST` says (`visa.interp.shortcuts`)."""
    kernel, tgt = resolve(artifact_or_kernel, target)
    values, _ = execute_inout(kernel, arrays, tgt, fast)
    if as_tuple or (as_tuple is None and len(values) > 1):
        return values
    return values[0] if values else None


def execute_inout(artifact_or_kernel: Runnable, arrays: Sequence[Any], target: TargetLike = None,
                  fast: bool | None = None) -> tuple[tuple, tuple]:
    """Run an artifact on host arrays; (results, final contents of the in-out parameters),
    both as host arrays in signature order. The arrays themselves are never written.
    `fast`: as for `execute`."""
    with shortcuts.mode(fast):
        kernel, tgt = resolve(artifact_or_kernel, target)
        check_count(kernel.name, kernel.params, arrays)
        # a parameter's HBM bytes may be a view of the caller's array (`borrowed`): the run only
        # reads those (a `dma_into` copies them), the others are the run's own, written in place
        hbm = [to_hbm(p, a, tgt, copy=False) if p.at is None else to_hbm(as_hbm_param(p), _resident_host(a), tgt)
               for p, a in zip(kernel.params, arrays)]  # a resident buffer: its host type's bytes
        borrowed = {id(h) for h, a, p in zip(hbm, arrays, kernel.params)
                    if p.at is None and isinstance(h, np.ndarray) and np.may_share_memory(h, a)}
        env = _run(kernel, hbm, tgt, owned={p.ref.id for p, h in zip(kernel.params, hbm)
                                            if p.at is None and isinstance(h, np.ndarray) and id(h) not in borrowed})
        types = _types(kernel)
        handed: set[int] = set(borrowed)   # a borrowed array goes back to the host only as a copy

        def host(ref: Any) -> np.ndarray:
            # the run's HBM arrays are its own (`to_hbm` copies what it would share, a DMA
            # allocates its result): the first host array of each may be a view of it
            data = _hbm(env, ref)
            owned = id(data) not in handed
            handed.add(id(data))
            t = types[ref.id]
            return from_hbm(data, host_type(t) if t.kind == "dm" else t, tgt, owned)

        results = tuple(host(r) for r in kernel.results)
        finals = tuple(host(r) for r in kernel.finals)
        return results, finals


def _resident_host(value: Any) -> Any:
    """A resident parameter's host form: a buffer's contents (`DmBuffer.host_array`), or the
    array itself when the caller gives one (`npu-opt visa --exec --input NAME=FILE.npy`,
    in the buffer's host shape, checked by `to_hbm` as any parameter's)."""
    return value.host_array() if hasattr(value, "host_array") else value


def run_kernel(kernel: LoweredKernel, params: Sequence[np.ndarray], target: Target) -> list[np.ndarray]:
    """Run the body on HBM parameter bytes; return the HBM bytes of the results, in order."""
    env = _run(kernel, params, target)
    return [_hbm(env, r) for r in kernel.results]


@per_record
def _last_reads(kernel: LoweredKernel) -> dict[int, int]:
    """The index of the last step reading each value (any field naming it, a program's
    records included), past the last step for a result or final: after that step no one
    reads the value's bytes, so a `dma_into` there may write over them."""
    last: dict[int, int] = {}
    for i, step in enumerate(kernel.steps):
        for op in (step.ops if isinstance(step, TuProgram) else (step,)):
            for f in attrs.fields(type(op)):
                if f.name != "result":
                    for ref in _refs(getattr(op, f.name)):
                        last[ref.id] = i
    for ref in (*kernel.results, *kernel.finals):
        last[ref.id] = len(kernel.steps)
    made_at = {op.result.id: i for i, step in enumerate(kernel.steps)
               for op in (step.ops if isinstance(step, TuProgram) else (step,))}
    return extend_reads(last, made_at, loops(kernel.steps))   # a rolled loop reads them again (ir.regions)


def _rolled(kernel: LoweredKernel) -> LoopRun:
    """A fresh run of the kernel's rolled loops (the spans and carried tensors kept per kernel)."""
    kept = _loop_spans(kernel)
    return LoopRun(kept.items, kept.spans, kept.carry)


@per_record
def _loop_spans(kernel: LoweredKernel) -> LoopRun:
    return LoopRun.of(kernel.steps)


def _refs(value: Any) -> list[Ref]:
    """The value references in a record field, inside tuples, lists and attrs objects too."""
    if isinstance(value, Ref):
        return [value]
    if isinstance(value, (tuple, list)):
        return [r for v in value for r in _refs(v)]
    if attrs.has(type(value)):
        return [r for f in attrs.fields(type(value)) for r in _refs(getattr(value, f.name))]
    return []


@per_record
def _types(kernel: LoweredKernel) -> dict[int, Any]:
    """The IR type of every value of a kernel (parameters and op results), by value id."""
    return {op.result.id: op.output_type for op in kernel.ops()} | {p.ref.id: p.type for p in kernel.params}


@per_record
def _layout(kernel: LoweredKernel, target: Target) -> tuple[dict[int, int], dict[int, int], int]:
    """The allocation (`alloc.allocate`) and the highest DM byte offset it places a tensor at."""
    dm_address, trf_row = allocate(kernel, target)
    sizes = {op.result.id: tensor_bytes(op.output_type, target) for op in kernel.ops()
             if op.result.id in dm_address and op.output_type.kind == "dm"}
    top = max([dm_address[k] + n for k, n in sizes.items()] + [b for _, b in resident_ranges(kernel.params)],
              default=0)
    return dm_address, trf_row, top


def _hbm(env: dict[int, Any], ref: Any) -> np.ndarray:
    value = env.get(ref.id)
    if not isinstance(value, np.ndarray):
        raise InterpError(f"the result {ref} is not an HBM tensor")
    return value


def _run(kernel: LoweredKernel, params: Sequence[np.ndarray], target: Target,
         owned: set[int] | frozenset[int] = frozenset()) -> dict[int, Any]:
    """The value environment after running the body on HBM parameter bytes; those of the
    parameters `owned` (value ids) are the run's own: a `dma_into` may write over them."""
    dm_address, trf_row, top = _layout(kernel, target)
    mem = Memory(target, dm_reserve=top)
    mem.dm_address, mem.trf_row = dict(dm_address), dict(trf_row)
    env: dict[int, Any] = {p.ref.id: data if p.at is None else load(mem, p, data)
                           for p, data in zip(kernel.params, params)}
    guards = Guards()  # runtime guards and scalar records (docs/runtime.md)
    last, made = _last_reads(kernel), set(owned)   # made: HBM arrays this run owns (its DMAs' too), no one else holds
    rolled = _rolled(kernel)   # rolled loops (docs/loops.md): the walk goes back to a body's first step
    i = -1
    while i + 1 < len(kernel.steps):
        i += 1
        step = kernel.steps[i]
        steered = rolled.steer(i, env, guards)
        if steered is not None:
            i = steered - 1
            continue
        if guards.skips(step, env):
            continue
        _forget_copies(step, mem)
        if isinstance(step, TuProgram):
            _program(step, mem, env)
        elif step.MNEMONIC in _OTHER_STEPS:
            env[step.result.id] = _OTHER_STEPS[step.MNEMONIC](step, mem, env, kernel)
        else:
            into = getattr(step, "into", None)
            in_place = into is not None and into.id in made and last.get(into.id, len(kernel.steps)) <= i
            env[step.result.id] = run_dma(step, mem, env, in_place)
            if step.output_type.kind == "hbm":
                made.add(step.result.id)
    for ref in kernel.finals:  # a written resident parameter: its DM bytes, before the DM goes
        if isinstance(env.get(ref.id), DmTensor):
            env[ref.id] = save(mem, env[ref.id])
    mem.release()    # values in `env` are HBM arrays, DM addresses, TRF rows: none reads the DM bytes
    return env


def new_tensor(op: Any, mem: Memory) -> Any:
    """`tensor_new`: HBM bytes of zeros, or a DM, TRF or VRF range zeroed in every live slice."""
    t = op.output_type
    if t.kind == "trf":
        return _new_trf(op, mem)
    if t.kind == "vrf":  # zeros in every live slice (the reference's host model; the chip leaves the words)
        return VrfValues(op, np.zeros((Rows((t.chip, t.cluster, t.slice)).count, t.element.size), value_dtype(t.dtype)))
    size = tensor_bytes(t, mem.target)
    if t.kind == "hbm":
        return np.zeros(t.chip.size * size, np.uint8)
    base = mem.dm_address[op.result.id]
    mem.zero_dm(live_parts(t), t.slice.size, base, size, op)
    return DmTensor(base, t)


def _new_trf(op: Any, mem: Memory) -> TrfTensor:
    """`tensor_new` of a TRF tensor: its rows (the allocation rule's) zeroed in each lane of
    every live slice (the reference's host model; the chip leaves them as they were)."""
    t, shape = op.output_type, trf_maker(op, mem.target)
    if shape is None:
        raise InterpError("not a TRF tensor", op)
    first = mem.trf_row[op.result.id]
    lane_bytes = mem.trf_bytes // shape.lanes
    rows, lane_rows = -(-shape.bytes_per_lane // mem.row_bytes), lane_bytes // mem.row_bytes
    check(first + rows <= lane_rows, f"rows from {first} leave the {lane_bytes}-byte lane", op)
    slices = live_positions(t.slice)
    for chip, cluster in live_parts(t):
        mem.trf_lanes(chip, cluster, shape.lanes)[:, first:first + rows, slices, :] = 0
    return TrfTensor(shape, first, lane_bytes)


def run_memset(op: Any, mem: Memory, env: dict[int, Any] | None = None) -> Any:
    """`memset`: the value's bytes (little-endian) at every live cell of the view, in the DM of
    every live (chip, cluster) of the tensor, from the tensor's address plus the offset (moved
    by `start * start_bytes` at a runtime start; RUNTIME-10 past its limit)."""
    t = op.output_type
    bits = mem.target.bits_of(t.dtype) or 0
    width = max(bits // 8, 1)
    value = int(op.value) * 0x11 if bits == 4 else int(op.value)  # a 4-bit fill writes both nibbles of a byte
    pattern = np.frombuffer(value.to_bytes(width, "little"), np.uint8)
    levels = [live_positions(mp) for mp in op.view]
    if bits == 4:
        levels[3] = np.unique(levels[3] // 2)   # the bytes the live cells fill (DMAOP-6 checks they pair up)
    base = mem.dm_address[op.result.id] + op.offset
    if op.start is not None:
        check(env is not None and op.start.id in env, f"start {op.start} has no value", op)
        base += checked_start((env or {})[op.start.id], op.start_limit, f"{op.result} = memset") * op.start_bytes
    slice_bytes = mem.target.constants.DM_SLICE_BYTES
    cells = (levels[2][:, None] * slice_bytes + levels[3][None, :] * width).reshape(-1, 1)
    source = np.tile(pattern, len(cells))
    src_addr = (np.arange(len(cells), dtype=np.int64)[:, None] * width, np.arange(width, dtype=np.int64))
    for chip in levels[0]:
        for cluster in levels[1]:
            copy_bytes(source, src_addr, mem.dm(int(chip), int(cluster)), (base + cells, src_addr[1]), op, "memset")
    return DmTensor(mem.dm_address[op.result.id], t)


def _forget_copies(step: Any, mem: Memory) -> None:
    """Before a body step that could write the DM and does not keep the copy notes up to
    date itself (visa/interp/fast/copies.py: a plain DMA does, a program only in its sink,
    `_program`), forget them all."""
    if not isinstance(step, TuProgram) and step.MNEMONIC in _OTHER_STEPS:
        mem.copies.clear()


def _program(program: TuProgram, mem: Memory, env: dict[int, Any]) -> None:
    """Run one TU program on its live slices; its sink's value goes into `env`."""
    state = ProgramState(rows_of(program.space), mem, env)
    ops = list(program.ops)
    check(bool(ops) and ops[0].MNEMONIC == "feed_buffer", "a program starts with its feed_buffer", program.sink)
    i = 0
    while i < len(ops):
        op = ops[i]
        step = STEPS.get(op.MNEMONIC)
        if step is None:
            raise InterpError(f"`{op.MNEMONIC}` cannot run here", op)
        i += step(ops, i, state)
    check(isinstance(env.get(ops[-1].result.id), (DmTensor, TrfTensor, VrfValues)),
          "a program ends with its trf_load, vrf_load or commit", ops[-1])
    done = shortcut("program_done")  # visa/interp/fast/copies.py: the copy notes a program's sink outdates
    if done is not None:
        done(program, mem)
    mem.recycle()
