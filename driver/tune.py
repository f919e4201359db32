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
Candidates leave in ascending order of their bound from their parameters (`sweep_order`; a
candidate of no such bound counts as 0; ties, and spaces of no bound, in an order spread
over the space, `spread`: bit-reversed indices): the candidates that could be fastest are lowered first,
so the dear ones whose bound is high are pruned by it before they are built, and a makespan
near the best is known while most of the space is unswept. The calling process's heap is
frozen for the sweep (`_frozen_heap`).
Candidates go to the executor (inline, `jobs` processes, or a dask.distributed cluster at
`scheduler`) in batches of several (driver/tune_eval.py; sized by the measured price of
their candidates, driver/tune_batches.py), each sent with the best makespan
known when it leaves and pruning against what its process has found in the sweep (and, in
a `jobs` pool, what any of the pool's processes has found: a shared value); a new batch
leaves whenever one comes back, so no worker waits for the slowest of a round.
This process evaluates candidates too, one at a time, and looks at the workers between
any two (a dask sweep's only until the scheduler answers).

Numerics (driver/tune_bits.py): candidates that tie on makespan may fold floats in another
order. The winner's results are compared bit for bit with those of every candidate that
ties with it and of the other checked ones (`Candidate.bits`), and a space with
`exact=True` lets only candidates that give the bits of its golden candidate win.
"""

from __future__ import annotations

import contextlib
import gc
import math
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from backends.npu import compile_kernel
from ir.errors import InternalError
from npu_opt.tune import Space
from tu_ops.target import for_chips, get_target
from visa.schedule import schedule_artifact

from driver.tune_bits import Runs, compare_bits
from driver.tune_batches import MAX_BATCH, Costs, batch_size
from driver.tune_eval import Batch, Candidate, evaluate_timed, param_pruned, prebound, target_rates
from driver.tune_exec import FactoryRef, make_executor

__all__ = ["Candidate", "TuneResult", "sweep_order", "tune", "with_text"]


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
           take: Callable[[list[Candidate]], None], drop: Callable[[int, int], bool] = lambda index, best: False,
           idle: Callable[[], None] = lambda: None, order: Sequence[int] | None = None) -> None:
    """Evaluate every point in `order` (default `spread`): batches to the executor's workers,
    up to two in flight per worker, and, when the executor `helps`, one candidate at a time
    here meanwhile, looking at the workers between any two (collecting, sending, asking a
    `starting()` dask executor whether its scheduler answered). A batch holds about the same
    predicted work, a share of what is left (driver/tune_batches.py), so the last ones are
    short. Until a makespan is known, while this process looks for one too, each worker
    gets one candidate at a time. Whenever a better makespan is known (a batch back with it,
    or the executor's processes shared it: `executor.best()`), the queued candidates `drop`
    prunes by their parameter bound leave the queue, never sent; such a candidate pruned
    anywhere (about a millisecond) moves no price (`Costs`), or the traced ones still queued
    would look cheap and a batch take a run of them. Once the queue is empty and this process
    would only wait for the workers' last batches, it calls `idle()` before each wait (the
    tuner emits the leading candidate's artifact there)."""
    queue = deque(spread(len(points)) if order is None else order)
    costs = Costs(points)  # what each candidate back cost (CPU seconds, measured where it ran)
    best: list[float] = [math.inf]  # the best makespan back so far (queue pruned against it)

    def lower(new: float | None) -> None:
        if new is not None and new < best[0]:
            best[0] = new
            kept = [i for i in queue if not drop(i, new)]
            if len(kept) < len(queue):
                queue.clear()
                queue.extend(kept)

    def back(timed: tuple[Sequence[float], list[Candidate]]) -> None:
        priced = [(c.index, s) for c, s in zip(timed[1], timed[0]) if not c.from_params]
        costs.add([i for i, _ in priced], [s for _, s in priced])
        take(timed[1])
        lower(min((c.makespan for c in timed[1] if c.status == "ok"), default=math.inf))

    def batch() -> Batch:
        if best[0] == math.inf and executor.helps:  # no makespan yet, and this process looks for one
            return make([queue.popleft()])  # with two, this process lowered the third with nothing to beat
        head = [queue[k] for k in range(min(len(queue), MAX_BATCH))]
        size = batch_size(head, len(queue), executor.width, costs)
        return make([queue.popleft() for _ in range(size)])

    def collect(block: bool) -> None:
        for handle in executor.wait(pending, block=block):
            pending.discard(handle)
            back(executor.result(handle))

    pending: set[Any] = set()
    while queue or pending:
        lower(executor.best())
        if not executor.starting():
            per_worker = 1 if best[0] == math.inf and executor.helps else 2
            while queue and len(pending) < per_worker * executor.workers:
                pending.add(executor.submit(evaluate_timed, batch()))
        if executor.helps and queue:
            back(evaluate_timed(make([queue.popleft()])))
            collect(False)
        elif pending:
            if not queue:
                idle()
            collect(True)


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


def sweep_order(bounds: Sequence[int | None]) -> list[int]:
    """The indices of candidates whose bounds from their parameters are `bounds` (None: none),
    in the order the sweep sends them: ascending bound (no bound counts as 0: such a candidate
    could be the fastest), ties in `spread` order. The candidates that could be fastest come
    first, so the first makespans found are near the best and the candidates of a high
    bound, often the dearest to lower (more tiles, more commands), are pruned by their bound
    before anything is built; swept spread over the space, a candidate of high bound that
    came early was lowered in full (on a drawn space the first four, 85 % of the sweep's
    CPU). The winner does not depend on the order (ranked by makespan, then index)."""
    rank = {k: n for n, k in enumerate(spread(len(bounds)))}
    return sorted(range(len(bounds)), key=lambda k: (bounds[k] or 0, rank[k]))


@contextlib.contextmanager
def _frozen_heap() -> Iterator[None]:
    """The calling process's heap out of the cyclic collector's reach for one sweep
    (`gc.freeze`, `gc.unfreeze` after): the tuner's imports, the space and the compiler's
    caches, which a full collection walked once or twice a sweep (0.05-0.12 s), and a pool
    worker forked from this process then shares its pages untouched. New objects are still
    collected. Left alone when the caller has frozen objects itself (unfreezing would undo
    that)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


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
            found[c.index] = c = texts.keep(c)
            if c.status == "ok":
                best.append(c.makespan)
            if progress is not None:
                progress(c)

    texts = _Texts(space, target, found)
    rates = target_rates(target)
    pre = [prebound(space, p, rates) for p in points] if prune and space.bound is not None else [None] * len(points)

    def drop(index: int, known: int) -> bool:
        """Prune a queued candidate here, before it is sent, when its bound from its parameters
        (`Space.bound`) exceeds `known`, the best makespan known (back so far, or shared by the
        executor's processes)."""
        if not (prune and space.bound is not None):
            return False
        pruned = param_pruned(index, points[index], pre[index], known)
        if pruned is None:
            return False
        take([pruned])
        return True

    with _frozen_heap():
        executor = make_executor(jobs, scheduler, in_process=ref is None, ref=ref, sweep=sweep)
        try:
            _sweep(executor, points, make, take, drop, texts.idle, sweep_order(pre))
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
        winner = candidates[winner.index] = attrs.evolve(winner, text=texts.of(winner))
    return TuneResult(kernel=_kernel_name(space, winner, candidates), target=target, candidates=tuple(candidates),
                      winner=winner, executor=executor.description,
                      seconds=math.floor((time.perf_counter() - start) * 1e3) / 1e3)


class _Texts:
    """The artifacts of a sweep's leading candidates: those the sweep emitted (`keep`: a
    candidate that led when it was evaluated comes back with its text, driver/tune_eval.py),
    those emitted while this process waited for the workers' last batches (`idle`, once
    each), and the winner's (`of`: emitted then, or now)."""

    def __init__(self, space: Space, target: str, found: list[Candidate | None]) -> None:
        self._space, self._target, self._found = space, target, found
        self._texts: dict[int, str] = {}

    def keep(self, c: Candidate) -> Candidate:
        """`c` without its text, which is kept here (a result carries the winner's alone)."""
        if c.text is None:
            return c
        self._texts[c.index] = c.text
        return attrs.evolve(c, text=None)

    def idle(self) -> None:
        """Emit the artifact of the candidate that leads so far: the winner's, unless a batch
        still out beats it or the oracle check fails it."""
        lead = _ranked([c for c in self._found if c is not None])[:1]
        if lead and lead[0].index not in self._texts:
            self._texts[lead[0].index] = _text(self._space, lead[0], self._target)

    def of(self, winner: Candidate) -> str:
        if winner.index not in self._texts:
            self._texts[winner.index] = _text(self._space, winner, self._target)
        return self._texts[winner.index]


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
    return attrs.evolve(winner, text=_text(space, winner, target))


def _text(space: Space, winner: Candidate, target: str) -> str:
    """The artifact text of candidate `winner` (see `with_text`)."""
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
    return outcome.text


def _kernel_name(space: Space, winner: Candidate | None, candidates: Sequence[Candidate]) -> str:
    """The winner's kernel name (else the first candidate the factory builds)."""
    for c in ([winner] if winner is not None else []) + [c for c in candidates if c.status != "error"]:
        try:
            return space.factory(**c.params).name
        except Exception:  # noqa: BLE001 - a candidate the factory refuses names nothing
            continue
    return "kernel"
