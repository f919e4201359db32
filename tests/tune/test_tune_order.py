"""The order the sweep takes candidates in (driver/tune.py `sweep_order`): ascending bound from
the parameters (`Space.bound`; none counts as 0), ties in the spread order. The candidates of
a high bound then come after a makespan is known and are pruned by their bound, never built;
the winner stays the one every executor and an unpruned sweep find. The calling process's
heap is frozen for the sweep and unfrozen after (`_frozen_heap`).

The bound the space gives is the two-load candidates' bound after lowering, read from a
sweep without pruning: the tightest the contract allows."""

from __future__ import annotations

import gc
from pathlib import Path

import attrs
import pytest

from driver.tune import sweep_order, tune
from driver.tune_exec import FactoryRef, load_space

FILE = Path(__file__).with_name("small_space.py")


def test_the_order_is_ascending_bound_with_ties_in_spread_order() -> None:
    # spread(8) is 0 4 2 6 1 5 3 7; by hand: no bound and 0 (#1, #5), 1 (#7), 3 (#2, #6, #3), 7 (#0), 9 (#4)
    assert sweep_order([7, None, 3, 3, 9, 0, 3, 1]) == [1, 5, 7, 2, 6, 3, 0, 4]
    assert sweep_order([None] * 5) == [0, 4, 2, 1, 3]  # no bound anywhere: the spread order


@pytest.fixture(scope="module")
def ordered(tmp_path_factory: pytest.TempPathFactory) -> tuple[FactoryRef, int]:
    """A tune file whose first candidates (two loads of `w`) are the dearer ones, with the bound
    their lowering gives them; the others (one load) have no bound."""
    plain = tune(attrs.evolve(load_space(FactoryRef(str(FILE), "SPACE")), inputs=None, oracle=None), prune=False)
    two = min(c.bound for c in plain.candidates if c.params["loads"] == 2 and c.status == "ok")
    one = min(c.makespan for c in plain.candidates if c.params["loads"] == 1 and c.status == "ok")
    assert two > one  # the two-load candidates cannot win once a one-load one is known
    path = tmp_path_factory.mktemp("order") / "ordered_space.py"
    path.write_text(FILE.read_text() + f"\n\nORDERED = Space(make, {{'loads': [2, 1], 'packet': [32, 64]}}, "
                    f"bound=lambda point, rates: {two} if point['loads'] == 2 else None)\n")
    return FactoryRef(str(path), "ORDERED"), two


def test_high_bound_candidates_are_pruned_before_they_are_built(ordered: tuple[FactoryRef, int]) -> None:
    ref, two = ordered
    built: list[dict] = []
    space = load_space(ref)

    def factory(**point):
        built.append(point)
        return space.factory(**point)

    result = tune(attrs.evolve(space, factory=factory))
    # spread over the space, #0 (two loads) would go first and be lowered in full
    assert built[:2] == [{"loads": 1, "packet": 32}, {"loads": 1, "packet": 64}]
    assert all(point["loads"] == 1 for point in built)  # (the winner is built once more for its name)
    statuses = [(c.index, c.status, c.bound) for c in result.candidates]
    assert statuses[:2] == [(0, "pruned", two), (1, "pruned", two)]
    assert all(c.message.endswith("from its parameters") for c in result.candidates[:2])
    assert [c.status for c in result.candidates[2:]] == ["ok", "ok"]
    assert result.winner.index == 2  # #2 and #3 tie on makespan: the earlier wins


def test_the_winner_is_the_same_under_every_order_and_executor(ordered: tuple[FactoryRef, int]) -> None:
    ref, _ = ordered
    space = load_space(ref)
    runs = [tune(space), tune(space, ref=ref, jobs=2), tune(space, prune=False)]
    assert {(r.winner.index, r.winner.makespan) for r in runs} == {(runs[2].winner.index, runs[2].winner.makespan)}
    assert runs[1].executor == "2 processes"


def test_the_callers_heap_is_frozen_for_the_sweep_only() -> None:
    space = attrs.evolve(load_space(FactoryRef(str(FILE), "WRONG")), inputs=None, oracle=None)
    during: list[int] = []
    gc.unfreeze()  # whatever another test in this process froze
    tune(space, progress=lambda c: during.append(gc.get_freeze_count()))
    assert during and all(n > 0 for n in during) and gc.get_freeze_count() == 0
    gc.freeze()  # a caller that froze its heap itself keeps it frozen
    try:
        tune(space)
        assert gc.get_freeze_count() > 0  # (unfreezing empties it; objects freed meanwhile leave it)
    finally:
        gc.unfreeze()
