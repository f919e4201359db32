"""The autotuner behind `npu-opt tune` (docs/tuning.md "Tuning automatically").

`tune(space)` compiles the kernel of every point of a `npu_opt.tune.Space`, ranks the
candidates that compile by the schedule model's makespan, runs the best `top` of them on
the cpu backend and in the VISA interpreter against the space's numpy oracle, and returns
a `TuneResult` whose winner is the fastest candidate that passed (ties go to the earlier
candidate, so the winner does not depend on how the work was spread).

Pruning: a candidate's *bound* is the work of its busiest context (the sum of that
context's step durations): the model runs a context's steps one at a time, so no schedule
of the candidate can be shorter. Before anything is built, a space may bound a candidate
from its parameters (`Space.bound`, never above the bound): one whose bound so exceeds the
best makespan back so far is pruned in this process and never sent (and a worker prunes
one it was sent by the best it knows). Before lowering, the DMA context's work alone is known
from the candidate's DMA records (driver/tune_eval.py `early_bound`); a candidate whose
early bound already exceeds the best makespan found is pruned there, its programs never
lowered or verified. After lowering, one whose whole bound exceeds it is not scheduled.
Either way its status is `pruned`: it could not win.
Candidates leave in an order spread over the space (`spread`: bit-reversed indices), so a
makespan near the best is known while most of the space is unswept and prunes it.
Candidates go to the executor (inline, `jobs` processes, or a dask.distributed cluster at
`scheduler`) in batches of several (driver/tune_eval.py; sized by the measured price of
their candidates, driver/tune_batches.py), each sent with the best makespan
known when it leaves and pruning against what its process has found in the sweep (and, in
a `jobs` pool, what any of the pool's processes has found: a shared value); a new batch
leaves whenever one comes back, so no worker waits for the slowest of a round.

Numerics (driver/tune_bits.py): candidates that tie on makespan may fold floats in another
order. The winner's results are compared bit for bit with those of every candidate that
ties with it and of the other checked ones (`Candidate.bits`), and a space with
`exact=True` lets only candidates that give the bits of its golden candidate win.
"""

from __future__ import annotations

import math
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from backends.npu import compile_kernel
from ir.errors import InternalError
from npu_opt.tune import Space
from tu_ops.target import for_chips, get_target
from visa.schedule import schedule_artifact

from driver.tune_bits import Runs, compare_bits
from driver.tune_batches import MAX_BATCH, MIN_BATCH, SHARES, Costs, batch_size
from driver.tune_eval import Batch, Candidate, evaluate_timed, prebound, target_rates
from driver.tune_exec import FactoryRef, make_executor

__all__ = ["Candidate", "TuneResult", "tune", "with_text"]


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

    def other_bits(self) -> list[Candidate]:
        """The ranked candidates whose results differ from the winner's in some bit."""
        return [c for c in self.ranked() if c.bits is not None and c.bits != "same"]


def _ranked(candidates: Sequence[Candidate]) -> list[Candidate]:
    return sorted((c for c in candidates if c.status == "ok"), key=lambda c: (c.makespan, c.index))


def _sweep(executor: Any, points: list[dict[str, Any]], make: Callable[[list[int]], Batch],
           take: Callable[[list[Candidate]], None], drop: Callable[[int], bool] = lambda index: False) -> None:
    """Evaluate every point in batches: up to two batches in flight per worker, this process
    evaluating one itself while they run (when the executor lets it). A batch holds about the
    same predicted work, a share of what is left (driver/tune_batches.py: by the CPU seconds
    each candidate back cost), so batches shrink as the space drains: the last ones, which
    the other processes may have to wait for, are short. When this process helps, it first
    evaluates small batches until one candidate compiles (a few at most), each worker one
    small batch at a time meanwhile, so the workers' larger batches carry a makespan to prune
    against (a batch sent without one lowers its candidates in full until it finds its own or
    hears of one: the shared best); the workers did nothing meanwhile before, a fifth of a
    `--jobs 2` sweep once pruning skipped the traces. While the executor still starts
    (`starting()`: a dask scheduler that has not answered yet), this process evaluates small
    batches too, asking between them, so the cluster's workers wait no longer than one
    small batch for their first (a batch sized for this process alone held a second or
    more of work, every worker idle meanwhile). Whenever a batch comes back, the queued
    candidates `drop` prunes (by their bound from their parameters, against the best makespan
    back so far) leave the queue: they are never sent, nor sized into a batch."""
    queue = deque(spread(len(points)))
    costs = Costs(points)  # what each candidate back cost (CPU seconds, measured where it ran)

    def batch() -> Batch:
        head = [queue[k] for k in range(min(len(queue), MAX_BATCH))]
        size = batch_size(head, len(queue), executor.width, costs)
        return make([queue.popleft() for _ in range(size)])

    def back(timed: tuple[Sequence[float], list[Candidate]]) -> None:
        costs.add([c.index for c in timed[1]], timed[0])
        take(timed[1])
        kept = [i for i in queue if not drop(i)]
        if len(kept) < len(queue):
            queue.clear()
            queue.extend(kept)

    def small() -> Batch:
        return make([queue.popleft() for _ in range(min(len(queue), MIN_BATCH))])

    pending: set[Any] = set()
    _start(executor, queue, pending, small, back)
    while queue or pending:
        while queue and len(pending) < 2 * executor.workers:
            pending.add(executor.submit(evaluate_timed, batch()))
        if executor.helps and queue:
            back(evaluate_timed(batch()))
            done = executor.wait(pending, block=False)
        else:
            done = executor.wait(pending, block=True)
        for handle in done:
            pending.discard(handle)
            back(executor.result(handle))


def _start(executor: Any, queue: deque, pending: set[Any], small: Callable[[], Batch],
           back: Callable[[tuple[Sequence[float], list[Candidate]]], None]) -> None:
    """The sweep's start: small batches until a makespan is known, here and one in each worker
    at a time (a worker prunes against what this process finds from its next candidate on: the
    shared best); and while the executor still starts (a dask scheduler not yet answered),
    small batches here, so its workers get theirs as soon as it has. The batches still in
    flight stay in `pending`."""
    tries, found = 0, False
    while queue and executor.helps and (executor.starting() or (executor.workers and tries < SHARES and not found)):
        while queue and executor.workers and len(pending) < executor.workers and not executor.starting():
            pending.add(executor.submit(evaluate_timed, small()))
        if not queue:
            break
        first = evaluate_timed(small())
        back(first)
        tries += 1
        found = found or any(c.status == "ok" for c in first[1])
        for handle in executor.wait(pending, block=False):
            pending.discard(handle)
            timed = executor.result(handle)
            back(timed)
            found = found or any(c.status == "ok" for c in timed[1])


def spread(count: int) -> list[int]:
    """The indices 0..count-1 in the order the sweep sends them: by the bit-reversed binary
    digits of the index (0, count/2, count/4, 3count/4, ...), so the first candidates sample
    the whole space, every value of the slowest-varying lever early, and the best makespan
    drops to near its final value while most of the space is still unswept. A space's good
    candidates are rarely at its start (synth lists placements on all slices first); swept
    from the start, every candidate before them was lowered in full, then pruned ones after."""
    bits = max(1, (count - 1).bit_length())
    reversed_ = (int(format(k, f"0{bits}b")[::-1], 2) for k in range(1 << bits))
    return [k for k in reversed_ if k < count]


def tune(space: Space, *, ref: FactoryRef | None = None, target: str = "rngd", jobs: int = 1,
         scheduler: str | None = None, top: int = 3, prune: bool = True, seed: int = 0,
         progress: Callable[[Candidate], None] | None = None) -> TuneResult:
    """Tune `space` (see the module docstring). `ref` names the file and attribute the space
    came from, so process and cluster workers can load it; without one the work stays in
    this process. `top` candidates (fastest first) are checked against the oracle (an exact
    space checks on down the ranking until one passes)."""
    start = time.perf_counter()
    points = space.points()
    best: list[int] = []
    sweep = uuid.uuid4().hex
    found: list[Candidate | None] = [None] * len(points)

    def make(indices: list[int]) -> Batch:
        return Batch(ref if ref is not None else space, target, min(best) if best and prune else None, prune,
                     tuple((i, points[i]) for i in indices), sweep)

    def take(candidates: list[Candidate]) -> None:
        for c in candidates:
            found[c.index] = c
            if c.status == "ok":
                best.append(c.makespan)
            if progress is not None:
                progress(c)

    rates = target_rates(target)
    pre: dict[int, int | None] = {}

    def drop(index: int) -> bool:
        """Prune a queued candidate here, before it is sent, when its bound from its parameters
        (`Space.bound`) exceeds the best makespan back so far."""
        if not (prune and best and space.bound is not None):
            return False
        if index not in pre:
            pre[index] = prebound(space, points[index], rates)
        if pre[index] is None or pre[index] <= min(best):
            return False
        take([Candidate(index, points[index], "pruned", bound=pre[index],
                        message=f"bound {pre[index]} > best makespan {min(best)}, from its parameters")])
        return True

    executor = make_executor(jobs, scheduler, in_process=ref is None, ref=ref)
    try:
        _sweep(executor, points, make, take, drop)
        executor.settle()
    finally:
        executor.close()
    candidates = [c for c in found if c is not None]
    if len(candidates) != len(points):
        raise InternalError(f"tune: {len(points) - len(candidates)} candidate(s) came back from no worker")
    ranked = _ranked(candidates)
    winner = ranked[0] if ranked else None
    if space.checks:
        winner = _checked(space, candidates, ranked, top, seed)
    if winner is not None:
        winner = candidates[winner.index] = with_text(space, winner, target)
    return TuneResult(kernel=_kernel_name(space, winner, candidates), target=target, candidates=tuple(candidates),
                      winner=winner, executor=executor.description,
                      seconds=math.floor((time.perf_counter() - start) * 1e3) / 1e3)


def _checked(space: Space, candidates: list[Candidate], ranked: list[Candidate], top: int,
             seed: int) -> Candidate | None:
    """Check the best `top` candidates (an exact space: on until one passes), then compare the
    winner's bits with the ties' and the checked candidates'; the winner (None: none passed)."""
    runs = Runs(space, seed)
    winner = None
    for k, c in enumerate(ranked):
        if k >= max(top, 0) and (winner is not None or not space.exact):
            break
        candidates[c.index] = attrs.evolve(c, checked=runs.check(c.params))
        if winner is None and candidates[c.index].checked == "pass":
            winner = candidates[c.index]
    if winner is None:
        return None
    compared = [c for c in ranked if c.index != winner.index and
                (c.makespan == winner.makespan or candidates[c.index].checked is not None)]
    for c in compared:
        candidates[c.index] = attrs.evolve(candidates[c.index], bits=compare_bits(runs, winner.params, c.params))
    return attrs.evolve(winner, bits="same")


def with_text(space: Space, winner: Candidate, target: str) -> Candidate:
    """The winner with its artifact's text: compiled once more, emitted this time, and its
    schedule's makespan checked against the sweep's."""
    kernel = space.factory(**winner.params)
    tgt = get_target(target)
    outcome = compile_kernel(kernel, tgt)
    if outcome.status != "ok":
        raise InternalError(f"tune: the winner #{winner.index} compiled in the sweep but not again: {outcome.status}")
    rates = target_rates(target)
    makespan = schedule_artifact(outcome.artifact, target=for_chips(tgt, kernel.chips), rates=rates).makespan
    if makespan != winner.makespan:
        raise InternalError(f"tune: the winner #{winner.index}'s artifact has makespan {makespan}, "
                            f"its sweep {winner.makespan}")
    return attrs.evolve(winner, text=outcome.text)


def _kernel_name(space: Space, winner: Candidate | None, candidates: Sequence[Candidate]) -> str:
    """The winner's kernel name (else the first candidate the factory builds)."""
    for c in ([winner] if winner is not None else []) + [c for c in candidates if c.status != "error"]:
        try:
            return space.factory(**c.params).name
        except Exception:  # noqa: BLE001 - a candidate the factory refuses names nothing
            continue
    return "kernel"
