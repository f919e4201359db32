"""What a tune worker does with a batch of candidates (driver/tune.py runs the sweep).

A worker receives a `Batch`, several candidates of one space, and evaluates them in turn.
Once a makespan is known to beat, a candidate whose bound from its parameters alone
(`Space.bound`: synth's spaces give one) exceeds it is pruned before anything is built or
traced (tracing was three quarters of a pruned sweep). The others: build the kernel, trace
it and, once a makespan is known to beat, bound it early from its
DMA records alone (`early_bound`: the DMA context's work, a few percent of the lowering's
price); a candidate whose early bound exceeds that makespan is pruned there, before its
programs are lowered, allocated and verified. The rest are lowered and verified; their
bound (the work of their busiest context) and, unless pruned, their makespan come from
the same steps. Only a candidate that leads is emitted (`_leading_text`: no makespan known
yet, or its makespan at most the best known), from the lowering its makespan came from:
the winner's artifact comes back with it and the tuner need not compile it once more
after the sweep, a serial step that kept the other processes idle. Sending candidates in batches pays a
task's round trip once per batch, and a batch prunes against the best makespan it finds
itself as well as the one it was sent with.

Candidates that trace to the same kernel (equal IR ops, facts and source locations:
a reuse or loop-order lever that changes nothing for a one-tile loop, say) share one
lowering: each worker process keeps what the lowering of a traced kernel gave (status, rule
ID, bound and makespan) and answers a repeat from it, for the length of one tune run.
"""

from __future__ import annotations

import gc
import inspect
import threading
import time
from typing import Any

import attrs

from backends.npu import compile_kernel, emit_lowered, lowering_key
from ir.errors import InternalError, NpuOptError
from npu_opt.device import DeviceKernel
from tu_ops.lower.build import dma_records
from tu_ops.lower.emulation import emulate_dtypes
from tu_ops.target import Target, for_chips, get_target
from visa.schedule import builtin_rates, schedule_artifact
from visa.schedule.loops import repeats, step_repeats
from visa.schedule.model import busiest_context, launch_cycles, steps_makespan
from visa.schedule.steps import build_steps

from driver.tune_space import resolve_space

__all__ = ["Batch", "Candidate", "PoolBest", "early_bound", "evaluate_batch", "evaluate_timed", "freeze_heap",
           "param_pruned", "prebound", "share_best", "shared_best", "target_rates"]


@attrs.frozen
class Candidate:
    """One point of the space and what became of it: `ok` (compiled: `makespan`), `pruned`
    (its `bound` exceeds a makespan already found), `refused` / `ice` (the compile's `code`
    and first message) or `error` (the factory raised for these parameters). The winner
    carries its artifact's `text`; the candidates run against the oracle their `checked`
    verdict, and those whose results were compared with the winner's their `bits`."""

    index: int
    params: dict[str, Any] = attrs.field(eq=False)
    status: str
    makespan: int | None = None
    bound: int | None = None
    code: str | None = None
    message: str = ""
    text: str | None = attrs.field(default=None, repr=False)
    checked: str | None = None  # "pass", or "fail: why", for the candidates run against the oracle
    bits: str | None = None  # "same" or "other: ...": its results against the winner's
    # pruned by its bound from its parameters (`param_pruned`), before anything was built: about
    # a millisecond wherever that happened, so its time says nothing of a price (driver/tune.py)
    from_params: bool = False

    def label(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.params.items())


@attrs.frozen
class Batch:
    """The work of one task: candidates (index, parameters) of the space `ref` names."""

    ref: Any  # a FactoryRef (a worker loads the file) or the Space itself (same process)
    target: str
    cutoff: int | None  # the best makespan known when the batch was sent
    prune: bool
    items: tuple[tuple[int, dict[str, Any]], ...]
    sweep: str = ""  # the tune run it belongs to: a worker's known lowerings last one run


@attrs.frozen
class _Known:
    """What the lowering of one traced kernel gave."""

    status: str
    code: str | None
    message: str
    bound: int | None
    makespan: int | None  # None: pruned before it was scheduled
    text: str | None = None  # the artifact, emitted when the candidate led (`_leading_text`)


class _Key:
    """A traced kernel's lowering key (`backends.npu.lowering_key`) with its hash taken once:
    hashing an `ir.Kernel` walks every op, mapping and fact, and a dict lookup followed by a
    store hashed it twice per candidate (3 % of a drawn space's sweep)."""

    __slots__ = ("value", "_hash")

    def __init__(self, value: tuple[Any, ...]) -> None:
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and self._hash == other._hash and self.value == other.value


_KNOWN: dict[_Key, _Known] = {}
_KNOWN_LIMIT = 4096


class _Here(threading.local):
    """Per thread (a dask worker runs a task on each of its threads, and a long-lived cluster
    serves several sweeps at once): the sweep of the batch being evaluated, the best makespan
    this thread has found in it (None: none yet), and the one every process of the sweep
    shares (`share_best`: a `--jobs` pool's `PoolBest`, a dask cluster's sweep view): a batch
    prunes against the least of them and its own cutoff, so a worker learns of a makespan
    found elsewhere at its next candidate, not at its next batch."""

    sweep = ""
    own: int | None = None
    shared: Any = None


_HERE = _Here()


class PoolBest:
    """The best makespan the processes of one `--jobs` pool share: a multiprocessing.Value('q')
    (0: none yet), read at every candidate and lowered under its lock."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def best(self) -> int | None:
        return self._value.value or None

    def offer(self, makespan: int) -> None:
        with self._value.get_lock():
            if self._value.value == 0 or makespan < self._value.value:
                self._value.value = makespan


def share_best(board: Any) -> None:
    """Prune against (and publish to) `board`, the best makespan the processes of one sweep
    share: a `PoolBest`, or a dask cluster's (driver/tune_share.py); anything with `best()`
    (None: none yet) and `offer(makespan)`. None stops sharing."""
    _HERE.shared = board


def shared_best() -> int | None:
    """The best makespan the processes of this sweep share (`share_best`; None: none yet, or
    no board): what the tuner prunes its queue against besides the results back so far."""
    return _HERE.shared.best() if _HERE.shared is not None else None


def _best_known(cutoff: int | None) -> int | None:
    """The least of `cutoff`, this process's best in the sweep and the shared best."""
    known = [x for x in (cutoff, _HERE.own) if x is not None]
    shared = shared_best()
    if shared is not None:
        known.append(shared)
    return min(known, default=None)


def _found(makespan: int) -> None:
    """Record a makespan found here: this process's best, and the shared one."""
    if _HERE.own is None or makespan < _HERE.own:
        _HERE.own = makespan
    if _HERE.shared is not None:
        _HERE.shared.offer(makespan)


_FROZEN = [False]


def freeze_heap() -> None:
    """A worker process's heap, once it holds what every task reuses (the tuner's imports, the
    loaded space, the compiler's caches), moved out of the cyclic collector's reach, once per
    process (`gc.freeze`). Its objects are still freed by their reference counts; the
    collector no longer walks them. A full collection walked the whole heap (some 140,000
    objects, 45-65 ms) about once a sweep in each process, inside some candidate's time; and
    in a forked pool worker that walk writes every object's header, copying every page it
    shares with this process. Called by a pool worker's start (driver/tune_exec.py `_warm`)
    and after a dask worker's first task (driver/tune_share.py `on_cluster`). The process
    that calls `tune`, the user's own, is frozen for the sweep only (driver/tune.py
    `_frozen_heap`)."""
    if not _FROZEN[0]:
        _FROZEN[0] = True
        gc.freeze()


def evaluate_timed(batch: Batch) -> tuple[tuple[float, ...], list[Candidate]]:
    """(the CPU seconds each candidate took this thread, `evaluate_batch(batch)`): what the
    sweep sizes batches by (driver/tune_batches.py; CPU, not wall time: a busy machine
    stretches the wall time of every candidate alike and would shrink every batch)."""
    seconds: list[float] = []
    out = evaluate_batch(batch, seconds)
    return tuple(seconds), out


def evaluate_batch(batch: Batch, seconds: list[float] | None = None) -> list[Candidate]:
    """Every candidate of `batch`, in order, each pruned against the best makespan known:
    the batch's cutoff, what this process found in the sweep, the pool's shared best.
    `seconds`, if given, receives each candidate's CPU seconds."""
    space = resolve_space(batch.ref)
    if batch.sweep != _HERE.sweep or not batch.sweep:  # a batch of no named sweep stands alone
        _KNOWN.clear()
        _HERE.sweep = batch.sweep
        _HERE.own = None
    out = []
    for index, params in batch.items:
        start = time.thread_time()
        c = evaluate(space, index, params, batch.target, _best_known(batch.cutoff) if batch.prune else None,
                     lead=batch.prune)
        if batch.prune and c.status == "ok":
            _found(c.makespan)
        out.append(c)
        if seconds is not None:
            seconds.append(time.thread_time() - start)
    return out


def evaluate(space: Any, index: int, params: dict[str, Any], target: str, cutoff: int | None,
             lead: bool = False) -> Candidate:
    """Build, lower, bound and (unless its bound exceeds `cutoff`) schedule one candidate; one
    whose bound from its parameters (`Space.bound`) already exceeds `cutoff` is never built.
    `lead`: a candidate whose makespan is at most `cutoff` (or any, while `cutoff` is None)
    carries its artifact's `text` (`_leading_text`)."""
    rates = target_rates(target)
    pre = prebound(space, params, rates)
    pruned = param_pruned(index, params, pre, cutoff)
    if pruned is not None:
        return pruned
    try:
        kernel = space.factory(**params)
    except Exception as e:  # noqa: BLE001 - the factory refuses these parameters: a candidate, not a crash
        code = e.code if isinstance(e, NpuOptError) and e.code != "ICE" else "USAGE"  # a rule's own ID
        return Candidate(index, params, "error", code=code, message=f"{type(e).__name__}: {e}")
    if not isinstance(kernel, DeviceKernel):
        return Candidate(index, params, "error", code="USAGE",
                         message=f"the factory returned {type(kernel).__name__}, not a @device kernel")
    tgt = for_chips(get_target(target), kernel.chips)
    try:
        traced = kernel.trace(tgt)
    except Exception:  # noqa: BLE001 - compile_kernel traces again and reports the crash as an ICE
        traced = None
    key = None
    if traced is not None and not traced.errors:
        key = _Key(lowering_key(traced.kernel, tgt))
        known = _KNOWN.get(key)
        if known is not None and (known.status != "ok" or known.makespan is not None or
                                  (cutoff is not None and known.bound > cutoff)):
            return _candidate(index, params, known, cutoff, lead)
    known = _lower(kernel, rates, tgt, traced, cutoff, _Pre(space, index, params, pre), lead)
    if key is not None:
        if len(_KNOWN) >= _KNOWN_LIMIT:
            _KNOWN.clear()
        _KNOWN[key] = known
    return _candidate(index, params, known, cutoff, lead)


def _leads(makespan: int, cutoff: int | None) -> bool:
    """Whether a candidate of `makespan` may win against the best makespan known (`cutoff`;
    a tie may go to the earlier candidate)."""
    return cutoff is None or makespan <= cutoff


def _candidate(index: int, params: dict[str, Any], known: _Known, cutoff: int | None, lead: bool) -> Candidate:
    if known.status != "ok":
        return Candidate(index, params, known.status, bound=known.bound, code=known.code, message=known.message)
    if cutoff is not None and known.bound > cutoff:
        return Candidate(index, params, "pruned", bound=known.bound, message=f"bound {known.bound} > best makespan {cutoff}")
    text = known.text if lead and _leads(known.makespan, cutoff) else None
    return Candidate(index, params, "ok", makespan=known.makespan, bound=known.bound, text=text)


def _leading_text(lowered: Any, tgt: Target, rates: Any, makespan: int) -> str | None:
    """The artifact text of a verified lowering whose steps gave `makespan`, emitted as
    `compile_kernel` emits it, with its schedule's makespan checked against `makespan`. None
    when the emission fails or the makespans differ: the tuner then compiles the winner
    once more after the sweep (driver/tune.py `_text`), which reports either as before."""
    try:
        text, artifact = emit_lowered(lowered, tgt)
        if schedule_artifact(artifact, target=tgt, rates=rates).makespan != makespan:
            return None
    except Exception:  # noqa: BLE001 - the compile after the sweep reports it (an ICE)
        return None
    return text


def early_bound(traced: Any, tgt: Target, rates: Any) -> int | None:
    """A lower bound of the candidate's makespan from its DMA records alone
    (`tu_ops.lower.build.dma_records`, after the dtype emulation the lowering starts with):
    the launch, then every DMA-context record's cycles, a record in a rolled loop's body
    counted once per iteration. The model runs the DMA context's steps one at a time and a
    loop's body alone, `trips` times over (visa/schedule/loops.py), so no schedule is
    shorter; the price is a few percent of the whole lowering. None when the records cannot
    be made on their own (the whole lowering then says why)."""
    try:
        kernel, _ = emulate_dtypes(traced.kernel, tgt, True)
        records = dma_records(kernel, tgt)
    except Exception:  # noqa: BLE001 - a refusal or a crash here is the whole lowering's to report
        return None
    return launch_cycles(rates) + sum(n * r.busy_cycles(rates, tgt) for n, r in zip(repeats(records), records))


def target_rates(target: str) -> Any:
    """The schedule model's rates of the target named `target` (rngd's when it ships none)."""
    return builtin_rates(get_target(target).name) or builtin_rates("rngd")


def prebound(space: Any, params: dict[str, Any], rates: Any) -> int | None:
    """The space's bound of the candidate from its parameters (`Space.bound`; None: none)."""
    return None if space.bound is None else space.bound(params, rates)


def param_pruned(index: int, params: dict[str, Any], pre: int | None, cutoff: int | None) -> Candidate | None:
    """Candidate `index` pruned by its bound from its parameters (`pre`, `prebound`) when that
    exceeds `cutoff`, the best makespan known; None when it does not (or either is unknown)."""
    if cutoff is None or pre is None or pre <= cutoff:
        return None
    return Candidate(index, params, "pruned", bound=pre, from_params=True,
                     message=f"bound {pre} > best makespan {cutoff}, from its parameters")


@attrs.frozen
class _Pre:
    """A traced candidate's bound from its parameters, checked against what its records cost."""

    space: Any
    index: int
    params: dict[str, Any]
    bound: int | None

    def check(self, bound: int) -> None:
        """`Space.bound` may never exceed the candidate's bound (the launch and its busiest
        context's work): above it, it could prune a candidate that would win, or one that the
        bound would not have pruned."""
        if self.bound is None or self.bound <= bound:
            return
        fn = inspect.unwrap(self.space.bound)
        text = (f"the space's bound() gave {self.bound} cycles for candidate #{self.index} ({self.params}), above "
                f"its bound after lowering ({bound}): a bound from the parameters may never exceed it")
        if getattr(fn, "__module__", "").split(".")[0] in _OWN_PACKAGES:
            raise InternalError(f"tune: {text}")
        raise NpuOptError(text, code="USAGE")


_OWN_PACKAGES = frozenset({"synth", "driver", "npu_opt", "benchmarks"})  # a bound of ours is wrong: an ICE


def _lower(kernel: DeviceKernel, rates: Any, tgt: Target, traced: Any, cutoff: int | None, pre: _Pre,
           lead: bool = False) -> _Known:
    early = None
    if cutoff is not None and traced is not None and not traced.errors:
        early = early_bound(traced, tgt, rates)
        if early is not None and early > cutoff:  # pruned before the lowering: it could not win
            return _Known("ok", None, "", early, None)

    def gate(lowered: Any, gate_target: Any) -> _Known:  # the compile stops with what the gate returns
        steps = build_steps(lowered, rates, gate_target)
        # nothing issues before the launch; a rolled body's steps count once per iteration
        bound = launch_cycles(rates) + busiest_context(steps, step_repeats(lowered))[1]
        pre.check(bound)
        if cutoff is not None and bound > cutoff:
            return _Known("ok", None, "", bound, None)
        makespan = steps_makespan(steps, rates, lowered)
        if makespan < max(bound, early or 0):
            raise InternalError(f"tune: a candidate of {kernel.name} has makespan {makespan} below its bound "
                                f"{bound} or its early bound {early}")
        text = _leading_text(lowered, gate_target, rates, makespan) if lead and _leads(makespan, cutoff) else None
        return _Known("ok", None, "", bound, makespan, text)

    outcome = compile_kernel(kernel, tgt, gate=gate, traced=traced)
    if isinstance(outcome, _Known):
        return outcome
    if outcome.status == "ok":  # the gate stops every lowering that verifies
        raise InternalError(f"tune: the compile of {kernel.name} went past its gate")
    message = outcome.diagnostics[0].message if outcome.diagnostics else ""
    return _Known(outcome.status, outcome.code, message, None, None)
