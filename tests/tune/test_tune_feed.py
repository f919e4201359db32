"""How the sweep feeds its workers (driver/tune.py `_sweep`): this process evaluates one
candidate at a time and, between any two, collects what came back, sends new batches and
asks a starting cluster whether it can take tasks. The executor here runs on a virtual
clock (one tick: one candidate, here or in a worker), so these tests time nothing."""

from __future__ import annotations

import attrs
import pytest

from backends.npu import compile_kernel
from driver import tune as tune_mod
from driver import tune_batches, tune_eval
from driver.tune import tune
from driver.tune_eval import Batch, Candidate
from driver.tune_exec import FactoryRef, load_space
from tests.tune.test_tune import FILE


class _Handle:
    def __init__(self, ready: int, timed) -> None:
        self.ready, self.timed = ready, timed


class _Clock:
    """`workers` workers, each running its batches one after the other, a candidate a tick; a
    tick passes for each candidate this process evaluates (`here`) and while it waits. The
    scheduler answers at tick `answer_at` (`starting()` until then). `log`: (event, tick,
    candidates) with events sent / back / here / idle."""

    description = "clock"

    def __init__(self, workers: int = 1, answer_at: int = 0, timed=None) -> None:
        self.workers, self.width, self.helps = workers, workers + 1, True
        self._timed = timed or _timed
        self.answer_at, self.now, self.log = answer_at, 0, []
        self._free = [0] * workers  # the tick each worker's last batch is done

    def here(self, batch: Batch):
        self.now += len(batch.items)
        self.log.append(("here", self.now, len(batch.items)))
        return self._timed(batch)

    def best(self) -> int | None:
        return None

    def starting(self) -> bool:
        return self.now < self.answer_at

    def submit(self, fn, batch: Batch) -> _Handle:
        self.log.append(("sent", self.now, len(batch.items)))
        k = min(range(self.workers), key=self._free.__getitem__)
        self._free[k] = max(self._free[k], self.now) + len(batch.items)
        return _Handle(self._free[k], self._timed(batch))

    def wait(self, handles, block: bool) -> list[_Handle]:
        if block and handles:
            self.now = max(self.now, min(h.ready for h in handles))
        return [h for h in handles if h.ready <= self.now]

    def result(self, handle: _Handle):
        self.log.append(("back", self.now, handle.ready))
        return handle.timed


def _timed(batch: Batch):
    """Every candidate compiles (makespan: its index + 1000, so the first one back is a best)."""
    return (0.01,) * len(batch.items), [Candidate(i, p, "ok", makespan=1000 + i, bound=1000 + i)
                                        for i, p in batch.items]


def _sweep(executor: _Clock, count: int, monkeypatch: pytest.MonkeyPatch, idle=None) -> list[int]:
    monkeypatch.setattr(tune_mod, "evaluate_timed", executor.here)
    points = [{"k": k} for k in range(count)]
    seen: list[int] = []
    tune_mod._sweep(executor, points, lambda idx: Batch(None, "rngd", None, True, tuple((i, points[i]) for i in idx)),
                    lambda cs: seen.extend(c.index for c in cs), **({} if idle is None else {"idle": idle}))
    return seen


def _unchecked():
    """tests/tune/small_space.py's space, swept without the oracle check (the sweep alone)."""
    return attrs.evolve(load_space(FactoryRef(FILE, "SPACE")), inputs=None, oracle=None)


def test_a_batch_back_is_answered_within_one_candidate_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process looks at its workers between any two candidates it evaluates: a batch that
    came back is collected, and the worker sent another, at most one candidate later (this
    process evaluated whole batches of its own before, up to MAX_BATCH candidates, and
    looked only between them)."""
    executor = _Clock(workers=1)
    assert sorted(_sweep(executor, 200, monkeypatch)) == list(range(200))
    backs = [(tick, ready) for event, tick, ready in executor.log if event == "back"]
    assert len(backs) > 5 and max(tick - ready for tick, ready in backs) <= 1, backs
    assert {n for event, _, n in executor.log if event == "here"} == {1}


def test_the_cluster_gets_its_first_batch_when_its_scheduler_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """While the scheduler has not answered, this process evaluates candidates and asks again
    after each: the first batch leaves at the tick it answers (it asked only every MIN_BATCH
    candidates before)."""
    for answer_at in (1, 3):
        executor = _Clock(workers=2, answer_at=answer_at)
        assert sorted(_sweep(executor, 100, monkeypatch)) == list(range(100))
        sent = [tick for event, tick, _ in executor.log if event == "sent"]
        assert sent[0] == answer_at, executor.log[:6]
        assert [e for e, *_ in executor.log[:answer_at]] == ["here"] * answer_at


def test_workers_get_one_candidate_until_a_makespan_is_known(monkeypatch: pytest.MonkeyPatch) -> None:
    """Until some candidate has compiled, each worker holds one candidate (this process looks
    for a makespan too, a candidate at a time: with two a worker, this process took the third
    of the order and lowered it with nothing to prune against); then batches sized by cost,
    two in flight a worker."""
    refused = set(tune_mod.spread(64)[:4])  # the first candidates sent anywhere do not compile

    def timed(batch):
        out = [Candidate(i, p, "refused") if i in refused else Candidate(i, p, "ok", makespan=5, bound=5)
               for i, p in batch.items]
        return (0.01,) * len(out), out

    executor = _Clock(workers=2, timed=timed)
    _sweep(executor, 64, monkeypatch)
    first = [(e, n) for e, _, n in executor.log[:2]]
    assert first == [("sent", 1), ("sent", 1)]
    later = [n for e, _, n in executor.log if e == "sent"]
    assert max(later) > tune_batches.MIN_BATCH


def test_while_waiting_for_the_last_batches_this_process_calls_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """`idle()` (the tuner emits the leading candidate's artifact there) runs only once every
    candidate has left and this process would wait for a batch; never in an inline sweep."""
    calls: list[tuple[int, int]] = []
    executor = _Clock(workers=1)
    _sweep(executor, 60, monkeypatch, idle=lambda: calls.append((executor.now, len(executor.log))))
    assert calls
    last_out = max(k for k, (event, *_rest) in enumerate(executor.log) if event in ("sent", "here"))
    assert all(logged > last_out for _, logged in calls)
    inline = _Clock(workers=0)
    _sweep(inline, 20, monkeypatch, idle=lambda: calls.append((-1, -1)))
    assert (-1, -1) not in calls


def test_the_winners_artifact_comes_from_the_sweep_and_is_not_compiled_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A candidate that leads when it is evaluated comes back with its artifact, emitted from
    the lowering its makespan came from: the tuner compiles nothing after the sweep (it
    compiled the winner once more, a serial step, before), not even where `idle` would have
    emitted the leader; the text is the one a compile of the winner on its own gives."""
    emitted: list[int] = []
    real_text, real_sweep = tune_mod._text, tune_mod._sweep

    def counting(space, winner, target):
        emitted.append(winner.index)
        return real_text(space, winner, target)

    def sweep_then_wait(executor, points, make, take, drop, idle, order=None):
        real_sweep(executor, points, make, take, drop, idle, order)
        idle()  # as if a batch were still out after the last candidate left

    monkeypatch.setattr(tune_mod, "_text", counting)
    monkeypatch.setattr(tune_mod, "_sweep", sweep_then_wait)
    space = _unchecked()
    result = tune(space)
    assert emitted == []
    assert result.winner.text == compile_kernel(space.factory(**result.winner.params), "rngd").text
    assert all(c.text is None for c in result.candidates if c.index != result.winner.index)


def test_an_artifact_the_sweep_could_not_emit_is_compiled_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """If emitting a leading candidate fails, the winner is compiled once more after the sweep,
    as before: the same winner and text."""
    monkeypatch.setattr(tune_eval, "emit_lowered", lambda *a: 1 / 0)
    space = _unchecked()
    result = tune(space)
    assert result.winner.text == compile_kernel(space.factory(**result.winner.params), "rngd").text


class _Sharing(_Clock):
    """A clock whose processes have shared the makespan `shared` (a pool's shared value, what a
    dask cluster's workers publish) before any batch is back."""

    def __init__(self, shared: int, **kw) -> None:
        super().__init__(**kw)
        self.shared = shared

    def best(self) -> int | None:
        return self.shared


def test_the_queue_is_pruned_by_the_best_the_executors_processes_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """A makespan another process found prunes the queue here before the batch that found it
    is back: the candidates it prunes by their parameter bound are neither evaluated here nor
    sent."""
    executor = _Sharing(1003, workers=1)
    dropped: list[tuple[int, int]] = []

    def drop(index: int, known: int) -> bool:
        if index % 2:  # the odd candidates' parameter bound exceeds 1003
            dropped.append((index, known))
            return True
        return False

    monkeypatch.setattr(tune_mod, "evaluate_timed", executor.here)
    points = [{"k": k} for k in range(40)]
    sent: list[int] = []
    real_batch = Batch

    def make(idx):
        sent.extend(idx)
        return real_batch(None, "rngd", None, True, tuple((i, points[i]) for i in idx))

    tune_mod._sweep(executor, points, make, lambda cs: None, drop)
    assert sorted(i for i, _ in dropped) == list(range(1, 40, 2)) and {k for _, k in dropped} == {1003}
    assert sorted(sent) == list(range(0, 40, 2))


def test_a_candidate_pruned_by_its_parameters_moves_no_price(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pruned by its parameter bound, a candidate costs about a millisecond wherever that
    happens; priced, it would make the traced candidates still queued look cheap and the next
    batch take a run of them."""
    priced: list[int] = []

    class Recording(tune_batches.Costs):
        def add(self, indices, seconds):
            priced.extend(indices)
            super().add(indices, seconds)

    def timed(batch):
        out = [Candidate(i, p, "pruned", bound=9, message="bound 9 > best makespan 5, from its parameters", from_params=True)
               if i % 3 == 0 else Candidate(i, p, "ok", makespan=5, bound=5) for i, p in batch.items]
        return tuple(0.001 if c.status == "pruned" else 0.04 for c in out), out

    monkeypatch.setattr(tune_mod, "Costs", Recording)
    _sweep(_Clock(workers=1, timed=timed), 30, monkeypatch)
    assert sorted(priced) == [k for k in range(30) if k % 3]
