"""The cpu executor: walk `Kernel.ops` in program order, one buffer per value.

Each op kind has one small function, declared with `@handles` (backends/cpu/handlers.py)
in the module that holds it, taking the op and its operand buffers and returning the
result buffer; buffers are not modified in place, so `view`, a whole-packet `commit_trim`, an
identity `fetch_cast` and the moves (strided views, backends/cpu/moves_strided.py) may
share them. The one exception is a handler declared with `donate=i` (`to_view`, writing a
tile into its destination): it is told `owned=True` when operand i is read for the last
time there and no other buffer still held (a value, a parameter, an in-out's final) shares
its memory, and may then write that buffer in place instead of copying it whole. A buffer
is dropped after its last use, which keeps the peak memory of large kernels down.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from ir.errors import InternalError
from ir.kernel import Kernel
from ir.ops import (
    Begin, Collect, Commit, CommitTrim, ContractTime, Fetch, Op,
    Final, Param, Return, ToDm, ToHbm, ToTrf, View,
)

from ir.interleave_ops import BeginInterleaved
from ir.spm import spm_as_hbm
from ir.spm_ops import SpmToDm, ToSpm
from ir.vrf_ops import ToVrf

from ir.regions import LoopRun, closes_region, extend_reads, loops
from ir.runtime_ops import GuardBegin, GuardEnd
from backends.cpu import arena, compact, compact_moves, heap_trim, layout, lazy_rows, moves, row_classes, run_memo, \
    runtime, uninit
from backends.cpu.lru import ByObject
from backends.cpu.scratch import Scratch, memory
from backends.cpu.handlers import HANDLERS, handles, takes_compact, takes_lazy
from backends.cpu.options import DEFAULT, CpuOptions, blas_threads

__all__ = ["execute_inout", "run_blas_limit"]


@handles(ToDm, ToHbm, options=True, compact=True, makes_compact=True)
def _dma(op: ToDm | ToHbm, src: np.ndarray, options: CpuOptions = DEFAULT, compact: bool = False) -> np.ndarray:
    """Tensor DMA (docs/machine/dma.md): a global move; destination padding is zero. `compact`:
    the result may hold its live row only (backends/cpu/compact.py)."""
    return compact_moves.move_global(src, op.src.type, op.result.type, fast=options.fast_moves, fresh=compact,
                                     copies=isinstance(op, ToDm),  # a DM broadcast: its distinct rows
                                     threads=options.threads)


@handles(ToSpm, options=True)
def _to_spm(op: ToSpm, src: np.ndarray, options: CpuOptions = DEFAULT) -> np.ndarray:
    """DM -> SPM (docs/machine/spm.md): an SPM tensor is held as the HBM tensor it is stored as
    (`ir.spm.spm_as_hbm`), so this is a DMA into that HBM-like store; padding is zero."""
    return moves.move_global(src, op.src.type, spm_as_hbm(op.result.type), fast=options.fast_moves)


@handles(SpmToDm, options=True)
def _spm_to_dm(op: SpmToDm, src: np.ndarray, options: CpuOptions = DEFAULT) -> np.ndarray:
    """SPM -> DM: a DMA out of the SPM's HBM-like store."""
    return moves.move_global(src, spm_as_hbm(op.src.type), op.result.type, fast=options.fast_moves)


@handles(View, compact=True, lazy=True)
def _view(op: View, src: Any) -> Any:
    """`view()` is the identity on data (docs/machine/fetch.md): any value passes as it is."""
    return src


@handles(Begin, compact=True, lazy=True)
def _begin(op: Begin, dm: Any) -> Any:
    """`begin` (docs/machine/fetch.md): the DM buffer as a stream with one time step (the
    same cells of the same rows: a move not copied yet keeps its rows and form)."""
    if isinstance(dm, compact_moves.Pending):
        dm = compact_moves.realize(dm)
    if isinstance(dm, compact.Compact):
        return compact.make(dm.base, op.result.type)
    shape = layout.shape_of(op.result.type)
    if isinstance(dm, lazy_rows.LazyRows):
        if layout.n_rows(op.result.type) == dm.n_rows and math.prod(shape) == dm.n_rows * dm.n_dst:
            return attrs.evolve(dm, shape=shape)
        dm = lazy_rows.materialize(dm)
    return dm.reshape(shape)


@handles(BeginInterleaved)
def _begin_interleaved(op: BeginInterleaved, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`begin_interleaved`: the two DM buffers side by side along the begun element's
    outermost axis (`I, Element`), as one stream of one time step."""
    rows = lhs.shape[:3]
    both = np.concatenate([lhs.reshape(*rows, -1), rhs.reshape(*rows, -1)], axis=-1)
    return both.reshape(layout.shape_of(op.result.type))


@handles(ToVrf, options=True, compact=True, makes_compact=True)
@handles(Fetch, Collect, Commit, options=True, lazy=True, compact=True, makes_compact=True)  # a move composes
@handles(ToTrf, options=True, lazy=True)  # with a lazy input; the contraction reads full buffers
def _move(op: Fetch | Collect | ToTrf | Commit | ToVrf, src: np.ndarray, options: CpuOptions = DEFAULT,
          compact: bool = False) -> np.ndarray:
    """fetch, collect, to_trf and commit: per-slice moves (docs/machine/fetch.md). `compact`:
    the result may hold its live rows only (backends/cpu/compact.py; the executor says so
    when no contraction reads it)."""
    return compact_moves.move_local(src, op.input.type, op.result.type, fast=options.fast_moves,
                                    lazy=options.fast_moves, fresh=compact)


@handles(CommitTrim, compact=True, lazy=True)
def _commit_trim(op: CommitTrim, src: Any) -> Any:
    """commit_trim (docs/machine/commit.md): the leading cells of every packet (of a value of
    live rows only: backends/cpu/compact_moves.py)."""
    t = op.input.type
    kept = compact_moves.trim(src, t, op.result.type, op.packet.size)
    if kept is not None:
        return kept
    src = compact_moves.materialize(src)
    if t.packet.size == op.packet.size and np.shape(src) == layout.shape_of(op.result.type):
        return src  # every cell of every packet kept: the buffer as it is
    if layout.spatial_levels(t) != layout.spatial_levels(op.result.type):
        return moves.trim(src, op.packet.size)
    rows = layout.rows_view(src, t)  # the live rows only: padding rows stay zero
    return layout.from_rows(moves.trim(rows, op.packet.size), op.result.type).reshape(layout.shape_of(op.result.type))




def _owned(step: "_Step", index: int, env: dict[int, Any], params: Sequence[Any], finals: list[Any],
           inplace: frozenset[int] = frozenset()) -> bool:
    """Whether operand `index` of `step` (of a `Compact`, its live rows) may be written in
    place: read for the last time here, once, and sharing memory with nothing else still held (the parameters of
    `inplace` aside: their memory is theirs to write, `execute_inout`)."""
    v = step.operands[index]
    buf = env[v]
    if isinstance(buf, compact.Compact):  # its live rows, held by this value alone
        buf = buf.base
    if (v not in step.last and not step.carried) or step.operands.count(v) != 1 or not isinstance(buf, np.ndarray) \
            or not buf.flags.writeable or not buf.flags.c_contiguous:
        return False
    kept = [x for k, x in enumerate(params) if k not in inplace]
    # the step's own result id may still hold an earlier iteration's version: replaced here
    held = [memory(x) for k, x in env.items() if k not in (v, step.result)] + [memory(x) for x in (*kept, *finals)]
    if any(other is not None and np.may_share_memory(buf, other) for other in held):
        return False
    root = buf
    while isinstance(root.base, np.ndarray):
        root = root.base
    row_classes.forget(root)  # its rows are about to change
    arena.forget_note(root)  # and what its maker left in it (`arena.empty_noted`)
    arena.written(buf)  # and what the run kept computed from it (backends/cpu/run_memo.py)
    return True


@attrs.frozen
class _Step:
    """One op of a kernel as the executor walks it: its operand ids, its result id, whether
    it takes `LazyRows` operands, whether it takes `Compact` ones, the ids read here
    for the last time, and (for a handler that may make a `Compact` of a full buffer,
    else None) whether it may here."""

    op: Op
    operands: tuple[int, ...]
    result: int | None
    lazy: bool
    last: tuple[int, ...]
    compact: bool = False
    fresh: bool | None = None
    bracket: bool = True  # a region's opener or end (a loop's, a guard's): `_steer` looks at it
    carried: bool = False  # its donated operand is a loop's carried tensor this step's result replaces (`_carried`)
    options: bool = False  # its handler takes the `CpuOptions`
    donate: int | None = None  # the operand its handler may write in place (`handles(donate=)`)


_STEPS: ByObject[tuple[_Step, ...]] = ByObject()


def _steps(kernel: Kernel) -> tuple[_Step, ...]:
    """The walk of `kernel.ops`, made once per kernel object (a traced kernel is kept and
    run again: `CpuBackend` caches the trace)."""
    found = _STEPS.get(kernel)
    if found is not None:
        return found
    operands = [tuple(v.id for v in op.operands()) for op in kernel.ops]
    last: dict[int, int] = {}
    for position, (op, ids) in enumerate(zip(kernel.ops, operands)):
        for v in ids[1:] if isinstance(op, Final) else ids:  # a final reads its value, not its parameter
            last[v] = position
    made_at = {op.result.id: k for k, op in enumerate(kernel.ops) if op.result is not None}
    last = extend_reads(last, made_at, loops(kernel.ops))   # a rolled loop reads them again (ir.regions)
    steps = [_Step(op, ids, None if isinstance(op, Return) else op.result.id, takes_lazy(op),
                   tuple(dict.fromkeys(v for v in ids if last.get(v) == position)), takes_compact(op),
                   options=bool(HANDLERS.facts(type(op)).get("options")), donate=HANDLERS.facts(type(op)).get("donate"))
             for position, (op, ids) in enumerate(zip(kernel.ops, operands))]
    fed = compact.read_full(steps, lambda s: bool(HANDLERS.facts(type(s.op)).get("gathers")))
    steps = [attrs.evolve(s, fresh=s.result not in fed) if HANDLERS.facts(type(s.op)).get("makes_compact") else s
             for s in steps]
    spans = loops(kernel.ops)
    brackets = {r.begin for r in spans} | {r.end for r in spans}
    carried = _carried(steps, spans)
    steps = [attrs.evolve(s, bracket=position in brackets or isinstance(s.op, (GuardBegin, GuardEnd))
                          or closes_region(s.op), carried=position in carried)
             for position, s in enumerate(steps)]
    return _STEPS.put(kernel, tuple(steps))


def _carried(steps: Sequence[_Step], spans: Sequence[Any]) -> set[int]:
    """Positions of the steps that write a loop's carried tensor in place, the last time the
    iteration reads it: a step of the loop's own body (no inner loop's) whose handler
    donates that operand, whose result the loop carries into it (`ir.regions.carried`),
    after which no step of the body reads it again. The loop's end replaces the tensor by
    that result, so its old version is read for the last time there, though the loop
    reads the tensor again (`extend_reads`) and `last` cannot say so."""
    found: set[int] = set()
    carries = LoopRun.of([s.op for s in steps]).carry if spans else {}
    for r in spans:
        carry = carries.get(r.begin, {})
        inner = [q for q in spans if q is not r and r.begin < q.begin < r.end]
        for tensor, version in carry.items():
            at = next((p for p in range(r.begin + 1, r.end) if steps[p].result == version), None)
            if at is None or any(q.holds(at) for q in inner):
                continue
            donate = HANDLERS.facts(type(steps[at].op)).get("donate")
            if donate is None or steps[at].operands[donate] != tensor \
                    or any(tensor in steps[p].operands for p in range(at + 1, r.end)):
                continue
            found.add(at)
    return found


_MEMO_ENDS: ByObject[int] = ByObject()


def _memo_end(kernel: Kernel) -> int:
    """The position after which no step of a run of `kernel` reads the run's memo
    (backends/cpu/run_memo.py): its last step whose handler keeps results there
    (`handles(memo=True)`), or the end of the outermost loop holding it (a later iteration
    reads them again); -1 when there is none. Kept per kernel object."""
    found = _MEMO_ENDS.get(kernel)
    if found is None:
        at = max((k for k, op in enumerate(kernel.ops)
                  if HANDLERS.get(type(op)) is not None and HANDLERS.facts(type(op)).get("memo")), default=-1)
        found = _MEMO_ENDS.put(kernel, max([at, *(r.end for r in loops(kernel.ops) if r.holds(at))]))
    return found


_FAULTS: ByObject[bool] = ByObject()


def _may_fault(kernel: Kernel) -> bool:
    """Whether a run of `kernel` may stop with an error its data decide (a gather's index, a
    tile at a runtime start): it takes a runtime scalar or has an op whose handler may
    raise (`handles(faults=True)`). Kept per kernel object."""
    found = _FAULTS.get(kernel)
    if found is None:
        found = _FAULTS.put(kernel, any(op.result.type.kind == "scalar" if isinstance(op, Param)
                                        else HANDLERS.get(type(op)) is not None
                                        and bool(HANDLERS.facts(type(op)).get("faults"))
                                        for op in kernel.ops))
    return found


_MULTIPLIES: ByObject[str] = ByObject()


def run_blas_limit(kernel: Kernel, options: CpuOptions) -> Any:
    """The BLAS limit a run of `kernel` holds for all its matmuls: one thread when it has a contraction
    and the options hold BLAS at one, or at any number when every contraction accumulates floats (their
    matmuls run BLAS on one thread anyway: contract_blas.py). A matmul's own limit is then a nested block,
    not a change of the pool and back (~25 us each: a 3-tile bf16 run at two threads made three)."""
    found = _MULTIPLIES.get(kernel)
    if found is None:
        kinds = {op.result.type.acc.is_float for op in kernel.ops if isinstance(op, ContractTime)}
        found = _MULTIPLIES.put(kernel, "float" if kinds == {True} else "any" if kinds else "none")
    held = found == "float" and options.blas_threads is not None or found == "any" and options.blas_threads == 1
    return blas_threads(1 if held else None)


def _handler(op_cls: type, found: dict[type, Any]) -> Any:
    """The handler of `op_cls`, looked up once per run (`found`: this run's; a test may swap
    a handler between runs). Its facts are read once per kernel, into the steps (`_steps`)."""
    if op_cls not in found:
        found[op_cls] = HANDLERS.get(op_cls)
    return found[op_cls]


def _keywords(step: _Step, options: CpuOptions, env: dict[int, Any], params: Sequence[Any],
              finals: list[Any], inplace: frozenset[int] = frozenset()) -> dict[str, Any]:
    """The keywords the handler of `step` takes: the options, whether it may make a
    `Compact`, whether it owns its donated operand (the handler's facts, read
    once per kernel: `_steps`)."""
    kwargs: dict[str, Any] = {"options": options} if step.options else {}
    if step.fresh is not None:
        kwargs["compact"] = step.fresh
    if step.donate is not None:
        kwargs["owned"] = _owned(step, step.donate, env, params, finals, inplace)
    return kwargs


def _final(step: _Step, env: dict[int, Any], finals: list[Any], marks: Any) -> None:
    """A `final`: its value, the full buffer, is the in-out parameter's last version (the
    parameter itself may be gone, read for the last time before)."""
    value = step.operands[1]
    env[value] = compact_moves.prepare(env[value], step.lazy, step.compact)
    finals.append(env[value])
    env[step.result] = env[value]
    if marks is not None:
        marks.before(step.op)


_LOOPS: ByObject[LoopRun] = ByObject()


def _rolled(kernel: Kernel) -> LoopRun:
    """A fresh run of the kernel's rolled loops (their spans and carried tensors kept per kernel)."""
    kept = _LOOPS.get(kernel) or _LOOPS.put(kernel, LoopRun.of(kernel.ops))
    return LoopRun(kept.items, kept.spans, kept.carry)


def _steer(position: int, op: Op, env: dict[int, Any], guards: runtime.Guards, rolled: LoopRun) -> int | None:
    """The position to go on at when the op at `position` is a region's bracket or skipped
    (a false guard's block, a loop with no iteration), else None: the op runs."""
    steered = rolled.steer(position, env, guards)
    if steered is None and guards.skips(op, env):
        return position + 1
    return steered


def execute_inout(kernel: Kernel, params: Sequence[np.ndarray], options: CpuOptions = DEFAULT,
                  inplace: frozenset[int] = frozenset()) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """Run a trace-valid kernel on HBM parameter buffers (in parameter order); returns the
    HBM buffers of its results, in order, and the final HBM buffer of every in-out parameter
    (its `final` op), in parameter order. `options` choose how, never what. `inplace`:
    indices of in-out parameters whose buffer (writeable) is the caller's array, which its
    final is written into anyway: an op that writes a tensor in place may write it there, no
    copy of it made, unless an error the data decide could stop the run halfway
    (`_may_fault`; or the uninitialized-read check)."""
    env: dict[int, Any] = {}
    results: tuple[np.ndarray, ...] = ()
    finals: list[np.ndarray] = []
    scratch = Scratch()  # dead values' scratch, for the arena once nothing shares it
    marks = uninit.uninit_tracker(options)
    if inplace and (marks is not None or _may_fault(kernel)):
        inplace = frozenset()
    guards = runtime.Guards()  # open `ctx.when` blocks (docs/runtime.md)
    steps, rolled = _steps(kernel), _rolled(kernel)  # rolled loops (docs/loops.md) walk a body again
    handlers: dict[type, Any] = {}  # looked up once per run (a test may swap one)
    memo_end = _memo_end(kernel)  # past it, the run's kept results are read no more: dropped
    position = -1
    while position + 1 < len(steps):
        op = (step := steps[position := position + 1]).op
        if position > memo_end >= 0:
            run_memo.forget_all()  # their buffers given back for the rest of the run
            memo_end = -1
        if isinstance(op, Param):
            env[step.result] = params[op.index]
            continue
        if step.bracket or guards.false_from is not None:
            scratch.look_again()  # a loop's carried tensors and skipped results replace held values
            steered = _steer(position, op, env, guards, rolled)
            if steered is not None:
                position = steered - 1
                continue
        if isinstance(op, Final):
            _final(step, env, finals, marks)
            scratch.look_again()  # its value may have been made the full buffer
            continue
        args = _operands(step, env, scratch)
        if marks is not None:
            marks.before(op)
        if isinstance(op, Return):
            results = tuple(args)
            continue
        handler = _handler(type(op), handlers)
        if handler is None:
            raise InternalError(f"the cpu backend cannot execute `{op.text()}`")
        env[step.result] = handler(op, *args, **_keywords(step, options, env, params, finals, inplace))
        if marks is not None:
            marks.after(op, np.shape(env[step.result]), env, args)
        for v in step.last:
            scratch.dead(v, env.pop(v, None))
        scratch.recycle(env, params, finals)
        heap_trim.after_op()  # a kernel's first run: a slow op's freed heap goes back to the system
    return results, tuple(finals)


def _operands(step: _Step, env: dict[int, Any], scratch: Scratch) -> list[Any]:
    """The operands of `step` as its handler takes them: a move not copied yet, or a value
    of live rows only, made the full buffer for a consumer that takes no such value, once
    (the value replaced in `env` for every later reader)."""
    if not (step.lazy and step.compact):
        for v in step.operands:
            if type(env[v]) is np.ndarray:  # a full buffer already: nothing to prepare
                continue
            before, env[v] = env[v], compact_moves.prepare(env[v], step.lazy, step.compact)
            if env[v] is not before:
                scratch.replaced(v, before)
    return [env[v] for v in step.operands]
