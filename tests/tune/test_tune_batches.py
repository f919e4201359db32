"""Batches sized by measured cost (driver/tune_batches.py): the prices are synthetic, so
these tests time nothing."""

from __future__ import annotations

import itertools

import pytest

from driver import tune as tune_mod
from driver.tune_batches import FEW_VALUES, MAX_BATCH, Costs, batch_size, cut
from driver.tune_eval import Batch, Candidate

# runs of cheap candidates, a run of dear ones, cheap and dear alternating, middling ones
PRICES = [0.02] * 64 + [0.25] * 16 + [0.02, 0.3] * 12 + [0.05] * 40


def _split(prices: list[float], target: float) -> list[list[float]]:
    out, k = [], 0
    while k < len(prices):
        n = cut(prices[k:], target)
        out.append(prices[k:k + n])
        k += n
    return out


def test_cut_gives_batches_of_even_work_on_a_synthetic_price_list() -> None:
    batches = _split(PRICES, 0.5)
    assert sum(map(len, batches)) == len(PRICES)
    for b in batches[:-1]:  # every batch but the last reaches the target with the fewest candidates
        assert sum(b) >= 0.5 or len(b) == MAX_BATCH
        assert sum(b[:-1]) < 0.5
    work = [sum(b) for b in batches[:-1]]
    assert max(work) < 0.5 + max(PRICES)  # past the target by less than one candidate
    assert max(work) / min(work) < 2.5  # the least: MAX_BATCH cheap ones
    by_count = [sum(PRICES[k:k + 8]) for k in range(0, len(PRICES) - 8, 8)]  # what batches of 8 held
    assert max(by_count) / min(by_count) > 10


def test_cut_keeps_to_the_batch_limits() -> None:
    assert cut([5.0] * 10, 0.5) == 1  # a candidate dear enough travels alone
    assert cut([0.0001] * 100, 0.5) == MAX_BATCH
    assert cut([0.0001] * 3, 0.5) == 3  # no more than there are
    assert cut([], 0.5) == 0


def _points() -> list[dict[str, int]]:
    """32 candidates: lever `a` varies slowest, `b` fastest."""
    return [{"a": a, "b": b} for a, b in itertools.product(range(4), range(8))]


def _price(point: dict[str, int]) -> float:
    return 0.3 if point["b"] == 7 else 0.02 + 0.01 * point["a"]


def test_costs_predict_a_dear_value_of_a_fast_varying_lever() -> None:
    """Every candidate with b == 7 is dear; its neighbours by index are cheap, its fellows by
    lever value are not."""
    points = _points()
    costs = Costs(points)
    assert costs.predict(5) is None
    measured = list(range(0, 32, 3))
    costs.add(measured, [_price(points[k]) for k in measured])
    for k in set(range(32)) - set(measured):
        if _price(points[k]) > 0.2:
            assert costs.predict(k) > 0.2, points[k]
        else:
            assert costs.predict(k) < 0.12, points[k]


def test_a_lever_value_never_measured_has_no_price_and_fills_its_batch() -> None:
    points = _points()
    costs = Costs(points)
    costs.add([0, 2, 4, 8, 10, 12], [0.02] * 6)  # a = 0, 1 with b = 0, 2, 4: values of both levers repeat
    assert costs.predict(16) is None  # a = 2 unmeasured
    assert costs.predict(6) is None  # b = 6 unmeasured
    assert costs.predict(2) == pytest.approx(0.02)
    assert batch_size([0, 2, 8], 30, 2, costs) == 3
    assert batch_size([0, 2, 6, 1, 3], 30, 2, costs) == 3  # 6: unknown, the last of its batch
    assert batch_size([6, 1, 3, 5, 7], 30, 2, costs) == 1
    assert batch_size([6, 1, 3, 5, 7], 30, 2, Costs(points)) == 5  # nothing measured: 30 / (SHARES * 2)


def test_a_lever_of_values_seen_once_moves_no_price() -> None:
    """A space listing whole configurations (one lever, every value its own): an unseen value
    is priced at the mean, not taken to end its batch (that would send one at a time)."""
    points = [{"config": f"c{k}"} for k in range(40)]
    costs = Costs(points)
    costs.add(list(range(12)), [0.01, 0.03] * 6)
    assert costs.predict(20) == pytest.approx(0.02)
    assert batch_size(list(range(20, 36)), 36, 2, costs) == 6  # target 36 * 0.02 / 6 = 0.12


class _TwoWorkers:
    """Two simulated workers: a batch starts on the worker free first, when it is sent or
    when that worker finishes what it holds, and takes the batch's summed prices."""

    width, workers, helps, description = 2, 2, False, "two simulated workers"

    def __init__(self) -> None:
        self.free, self.now, self.sent = [0.0, 0.0], 0.0, itertools.count()

    def best(self) -> int | None:
        return None

    def starting(self) -> bool:
        return False

    def submit(self, fn, batch):
        seconds, candidates = fn(batch)
        w = min((0, 1), key=lambda k: self.free[k])
        self.free[w] = max(self.free[w], self.now) + sum(seconds)
        return (self.free[w], next(self.sent), seconds, tuple(candidates))

    def wait(self, handles, block):
        first = min(handles)
        self.now = first[0]
        return [first]

    def result(self, handle):
        return handle[2], list(handle[3])


@pytest.mark.parametrize("levels, dear, rows", [(8, 7, 32), (4, 3, 32), (16, 15, 50)])
def test_a_sweep_on_two_workers_ends_together(monkeypatch: pytest.MonkeyPatch, levels: int, dear: int,
                                              rows: int) -> None:
    """Candidates whose fastest-varying lever `b` makes one in `levels` dear (0.3 s against
    0.02-0.07 s): the sweep's spread order sends those last. Batches sized by predicted
    price keep the last ones small, so the two workers finish within one dear candidate of
    each other (sized by count, as before, 0.41-0.59 s apart on these spaces)."""
    points = [{"a": a, "b": b} for a, b in itertools.product(range(rows), range(levels))]

    def price(point: dict[str, int]) -> float:
        return 0.3 if point["b"] == dear else 0.02 + 0.001 * point["a"]

    monkeypatch.setattr(tune_mod, "evaluate_timed", lambda b: (
        tuple(price(p) for _, p in b.items), [Candidate(i, p, "ok", makespan=1, bound=1) for i, p in b.items]))
    executor, seen = _TwoWorkers(), []
    tune_mod._sweep(executor, points, lambda idx: Batch(None, "rngd", None, True, tuple((i, points[i]) for i in idx)),
                    lambda cs: seen.extend(c.index for c in cs))
    assert sorted(seen) == list(range(len(points)))
    assert sum(executor.free) == pytest.approx(sum(map(price, points)))
    assert abs(executor.free[0] - executor.free[1]) < 0.3


def test_a_new_value_of_a_lever_of_many_values_moves_no_price() -> None:
    """A lever of more than FEW_VALUES values (synth's placements) brings a new value with
    most of a spread sweep's first candidates: such a value is priced at the mean, so those
    candidates travel in batches, not one at a time. A lever of few values still has no
    price for a value never measured."""
    points = [{"place": p, "b": b} for p, b in itertools.product(range(FEW_VALUES + 4), range(2))]
    costs = Costs(points)
    measured = [0, 1, 2, 3, 4, 5]  # place 0, 1, 2 with b = 0 and 1: both levers' values repeat
    costs.add(measured, [0.02] * 6)
    assert costs.predict(20) == pytest.approx(0.02)  # place 10: never measured
    assert batch_size(list(range(20, 36)), 30, 2, costs) > 1
    few = [{"a": a, "b": b} for a, b in itertools.product(range(FEW_VALUES), range(2))]
    costs = Costs(few)
    costs.add(measured, [0.02] * 6)
    assert costs.predict(20) is None


def test_the_first_batches_grow_with_the_candidates_priced() -> None:
    """The sweep's head is its dearest part: one candidate priced at 0.04 s does not make the
    next batch 10 of them (a drawn space's first dask batch took all 6 candidates its sweep
    still had to lower, and that worker did nearly all the work): at most one candidate a
    batch for every `width` priced, one at least."""
    points = [{"p": k} for k in range(64)]
    costs = Costs(points)
    costs.add([0], [0.04])
    assert batch_size(list(range(1, 17)), 56, 2, costs) == 1
    costs.add(list(range(1, 13)), [0.04] * 12)
    assert batch_size(list(range(13, 29)), 44, 2, costs) == 6  # 13 priced: 6; the price alone gives 8
    costs.add(list(range(13, 41)), [0.04] * 28)
    assert batch_size(list(range(41, 57)), 23, 2, costs) == 4  # the price alone: 23 * 0.04 / 6 -> 4
