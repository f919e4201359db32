"""The autotuner behind `npu-opt tune` (docs/tuning.md "Tuning automatically").

`tune(space)` compiles the kernel of every point of a `npu_opt.tune.Space`, ranks the
candidates that compile by the schedule model's makespan, runs the best `top` of them on
the cpu backend and in the VISA interpreter against the space's numpy oracle, and returns
a `TuneResult` whose winner is the fastest candidate that passed (ties go to the earlier
candidate, so the winner does not depend on how the work was spread).

Pruning: after lowering, a candidate's *bound* is the work of its busiest context (the
sum of that context's step durations): the model runs a context's steps one at a time,
so no schedule of the candidate can be shorter. A candidate whose bound exceeds the best
makespan already found is not emitted or scheduled (status `pruned`); it could not win.
Candidates run in batches as wide as the executor (inline, a process pool of `jobs`, or a
dask.distributed cluster at `scheduler`), each batch pruned against the batches before it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from backends import get_backend
from backends.npu import compile_kernel
from ir.errors import InternalError
from npu_opt.device import DeviceKernel
from npu_opt.tune import Space
from tu_ops.target import for_chips, get_target
from visa.schedule import builtin_rates, schedule_artifact
from visa.schedule.model import busiest_context
from visa.schedule.steps import build_steps

from driver.tune_exec import FactoryRef, make_executor, resolve_space

__all__ = ["Candidate", "Job", "TuneResult", "evaluate", "tune"]

_PRUNED = object()


@attrs.frozen
class Candidate:
    """One point of the space and what became of it: `ok` (compiled: `makespan`, `text`),
    `pruned` (its `bound` exceeds a makespan already found), `refused` / `ice` (the compile's
    `code` and first message) or `error` (the factory raised for these parameters)."""

    index: int
    params: dict[str, Any] = attrs.field(eq=False)
    status: str
    makespan: int | None = None
    bound: int | None = None
    code: str | None = None
    message: str = ""
    text: str | None = attrs.field(default=None, repr=False)
    checked: str | None = None  # "pass", or "fail: why", for the candidates run against the oracle

    def label(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.params.items())


@attrs.frozen
class Job:
    """The work of one candidate, as a worker receives it."""

    ref: Any  # a FactoryRef (a worker loads the file) or the Space itself (same process)
    index: int
    params: dict[str, Any]
    target: str
    cutoff: int | None


@attrs.frozen
class TuneResult:
    """Every candidate in candidate order, the winner (None: no candidate compiled and passed)."""

    kernel: str
    target: str
    candidates: tuple[Candidate, ...]
    winner: Candidate | None
    executor: str
    seconds: float

    def ranked(self) -> list[Candidate]:
        """The compiled candidates, fastest first (ties: the earlier candidate)."""
        return _ranked(self.candidates)

    def count(self, status: str) -> int:
        return sum(c.status == status for c in self.candidates)


def _ranked(candidates: Sequence[Candidate]) -> list[Candidate]:
    return sorted((c for c in candidates if c.status == "ok"), key=lambda c: (c.makespan, c.index))


def _first_message(outcome: Any) -> str:
    return outcome.diagnostics[0].message if outcome.diagnostics else ""


def evaluate(job: Job) -> Candidate:
    """Build, lower, bound and (unless pruned) emit and schedule one candidate."""
    space = resolve_space(job.ref)
    try:
        kernel = space.factory(**job.params)
    except Exception as e:  # noqa: BLE001 - the factory refuses these parameters: a candidate, not a crash
        return Candidate(job.index, job.params, "error", code="USAGE", message=f"{type(e).__name__}: {e}")
    if not isinstance(kernel, DeviceKernel):
        return Candidate(job.index, job.params, "error", code="USAGE",
                         message=f"the factory returned {type(kernel).__name__}, not a @device kernel")
    target = get_target(job.target)
    rates = builtin_rates(target.name) or builtin_rates("rngd")
    seen: dict[str, int] = {}

    def gate(lowered: Any, tgt: Any) -> Any:
        seen["bound"] = bound = busiest_context(build_steps(lowered, rates, tgt))[1]
        return _PRUNED if job.cutoff is not None and bound > job.cutoff else None

    outcome = compile_kernel(kernel, target, gate=gate)
    bound = seen.get("bound")
    if outcome is _PRUNED:
        return Candidate(job.index, job.params, "pruned", bound=bound,
                         message=f"bound {bound} > best makespan {job.cutoff}")
    if outcome.status != "ok":
        return Candidate(job.index, job.params, outcome.status, bound=bound, code=outcome.code,
                         message=_first_message(outcome))
    schedule = schedule_artifact(outcome.artifact, target=for_chips(target, kernel.chips), rates=rates)
    if bound is not None and schedule.makespan < bound:
        raise InternalError(f"tune: candidate {job.index} has makespan {schedule.makespan} below its bound {bound}")
    return Candidate(job.index, job.params, "ok", makespan=schedule.makespan, bound=bound, text=outcome.text)


def _results(got: Any) -> tuple[Any, ...]:
    return got if isinstance(got, tuple) else (got,)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _agrees(got: np.ndarray, want: np.ndarray, space: Space) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if space.rtol == 0 and space.atol == 0:
        return bool(np.array_equal(got, want))
    return bool(np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=space.rtol, atol=space.atol))


def check(space: Space, candidate: Candidate, seed: int) -> str:
    """Run the candidate's kernel on the cpu backend and in the VISA interpreter against the
    oracle: "pass", or "fail: " and what differed."""
    kernel = space.factory(**candidate.params)

    def fresh() -> tuple[Any, ...]:  # every run gets its own arrays: in-out results are written in place
        return tuple(space.inputs(np.random.default_rng(seed)))

    want = _results(space.oracle(*fresh()))
    cpu = _results(get_backend("cpu").run(kernel, fresh()))
    visa = _results(get_backend("visa").run(kernel, fresh()))
    if len(cpu) != len(want):
        return f"fail: the kernel gives {len(cpu)} result(s), the oracle {len(want)}"
    for k, (c, v, w) in enumerate(zip(cpu, visa, want)):
        if not _same_bits(c, v):
            return f"fail: result {k}: the cpu backend and the VISA interpreter differ"
        if not _agrees(c, w, space):
            return f"fail: result {k} differs from the oracle"
    return "pass"


def tune(space: Space, *, ref: FactoryRef | None = None, target: str = "rngd", jobs: int = 1,
         scheduler: str | None = None, top: int = 3, prune: bool = True, seed: int = 0,
         progress: Callable[[Candidate], None] | None = None) -> TuneResult:
    """Tune `space` (see the module docstring). `ref` names the file and attribute the space
    came from, so process and cluster workers can load it; without one the work stays in
    this process. `top` candidates (fastest first) are checked against the oracle."""
    start = time.perf_counter()
    points = space.points()
    executor = make_executor(jobs, scheduler, in_process=ref is None)
    best: int | None = None
    found: list[Candidate | None] = [None] * len(points)
    try:
        for lo in range(0, len(points), executor.width):
            batch = [Job(ref if ref is not None else space, i, points[i], target, best if prune else None)
                     for i in range(lo, min(len(points), lo + executor.width))]
            for candidate in executor.map(evaluate, batch):
                found[candidate.index] = candidate
                if candidate.status == "ok":
                    best = candidate.makespan if best is None else min(best, candidate.makespan)
                if progress is not None:
                    progress(candidate)
    finally:
        executor.close()
    candidates = [c for c in found if c is not None]
    ranked = _ranked(candidates)
    winner = ranked[0] if ranked else None
    if space.checks:
        winner = None
        for c in ranked[:max(top, 0)]:
            verdict = check(space, c, seed)
            candidates[c.index] = attrs.evolve(c, checked=verdict)
            if winner is None and verdict == "pass":
                winner = candidates[c.index]
    return TuneResult(kernel=_kernel_name(space, winner, candidates), target=target, candidates=tuple(candidates),
                      winner=winner, executor=executor.description,
                      seconds=math.floor((time.perf_counter() - start) * 1e3) / 1e3)


def _kernel_name(space: Space, winner: Candidate | None, candidates: Sequence[Candidate]) -> str:
    """The winner's kernel name (else the first candidate the factory builds)."""
    for c in ([winner] if winner is not None else []) + [c for c in candidates if c.status != "error"]:
        try:
            return space.factory(**c.params).name
        except Exception:  # noqa: BLE001 - a candidate the factory refuses names nothing
            continue
    return "kernel"
