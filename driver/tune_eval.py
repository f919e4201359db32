"""What a tune worker does with a batch of candidates (driver/tune.py runs the sweep).

A worker receives a `Batch`, several candidates of one space, and evaluates them in turn:
build the kernel, trace it, lower and verify it, take its bound (the work of its busiest
context) and, unless pruned, its makespan from the same steps. Nothing is emitted: the
tuner emits the winner's artifact once, at the end. Sending candidates in batches pays a
task's round trip once per batch, and a batch prunes against the best makespan it finds
itself as well as the one it was sent with.

Candidates that trace to the same kernel (equal IR ops, facts and source locations:
a reuse or loop-order lever that changes nothing for a one-tile loop, say) share one
lowering: each worker process keeps what the lowering of a traced kernel gave (status, rule
ID, bound and makespan) and answers a repeat from it, for the length of one tune run.
"""

from __future__ import annotations

from typing import Any

import attrs

from backends.npu import compile_kernel, lowering_key
from ir.errors import InternalError, NpuOptError
from npu_opt.device import DeviceKernel
from tu_ops.target import Target, for_chips, get_target
from visa.schedule import builtin_rates
from visa.schedule.loops import repeats
from visa.schedule.model import busiest_context, launch_cycles, steps_makespan
from visa.schedule.steps import build_steps

from driver.tune_space import resolve_space

__all__ = ["Batch", "Candidate", "evaluate_batch"]


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


_KNOWN: dict[tuple[Any, ...], _Known] = {}
_KNOWN_LIMIT = 4096
_SWEEP = [""]


def evaluate_batch(batch: Batch) -> list[Candidate]:
    """Every candidate of `batch`, in order."""
    space = resolve_space(batch.ref)
    if batch.sweep != _SWEEP[0]:
        _KNOWN.clear()
        _SWEEP[0] = batch.sweep
    cutoff = batch.cutoff if batch.prune else None
    out = []
    for index, params in batch.items:
        c = evaluate(space, index, params, batch.target, cutoff)
        if batch.prune and c.status == "ok":
            cutoff = c.makespan if cutoff is None else min(cutoff, c.makespan)
        out.append(c)
    return out


def evaluate(space: Any, index: int, params: dict[str, Any], target: str, cutoff: int | None) -> Candidate:
    """Build, lower, bound and (unless its bound exceeds `cutoff`) schedule one candidate."""
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
        key = lowering_key(traced.kernel, tgt)
        known = _KNOWN.get(key)
        if known is not None and (known.status != "ok" or known.makespan is not None or
                                  (cutoff is not None and known.bound > cutoff)):
            return _candidate(index, params, known, cutoff)
    known = _lower(kernel, target, tgt, traced, cutoff)
    if key is not None:
        if len(_KNOWN) >= _KNOWN_LIMIT:
            _KNOWN.clear()
        _KNOWN[key] = known
    return _candidate(index, params, known, cutoff)


def _candidate(index: int, params: dict[str, Any], known: _Known, cutoff: int | None) -> Candidate:
    if known.status != "ok":
        return Candidate(index, params, known.status, bound=known.bound, code=known.code, message=known.message)
    if cutoff is not None and known.bound > cutoff:
        return Candidate(index, params, "pruned", bound=known.bound, message=f"bound {known.bound} > best makespan {cutoff}")
    return Candidate(index, params, "ok", makespan=known.makespan, bound=known.bound)


def _lower(kernel: DeviceKernel, target: str, tgt: Target, traced: Any, cutoff: int | None) -> _Known:
    rates = builtin_rates(get_target(target).name) or builtin_rates("rngd")

    def gate(lowered: Any, gate_target: Any) -> _Known:  # the compile stops with what the gate returns
        steps = build_steps(lowered, rates, gate_target)
        # nothing issues before the launch; a rolled loop's body works once per iteration
        times = repeats(lowered)
        bound = launch_cycles(rates) + busiest_context(steps, [times[s.index] for s in steps])[1]
        if cutoff is not None and bound > cutoff:
            return _Known("ok", None, "", bound, None)
        makespan = steps_makespan(steps, rates, lowered)
        if makespan < bound:
            raise InternalError(f"tune: a candidate of {kernel.name} has makespan {makespan} below its bound {bound}")
        return _Known("ok", None, "", bound, makespan)

    outcome = compile_kernel(kernel, tgt, gate=gate, traced=traced)
    if isinstance(outcome, _Known):
        return outcome
    if outcome.status == "ok":  # the gate stops every lowering that verifies
        raise InternalError(f"tune: the compile of {kernel.name} went past its gate")
    message = outcome.diagnostics[0].message if outcome.diagnostics else ""
    return _Known(outcome.status, outcome.code, message, None, None)
