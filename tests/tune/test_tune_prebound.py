"""Pruning before a candidate is built (`Space.bound`): a candidate whose bound from its
parameters exceeds the best makespan back is never built nor traced (driver/tune.py prunes
it before it is sent, driver/tune_eval.py before it is built); the winner stays what the
sweep without the bound finds, and so do the makespans it schedules; a bound above a
candidate's bound after lowering stops the run (the space's error, or ours for synth's).

The bound the first test gives is the two-load candidates' bound after lowering, read from a
sweep without it: the tightest the contract allows."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

from driver.tune import tune
from driver.tune_exec import FactoryRef, load_space
from driver.tune_report import report_json, table
from ir.errors import InternalError, NpuOptError

FILE = str(Path(__file__).with_name("small_space.py"))


def _counting(space):
    """`space` without its oracle check, and the parameters its factory was called with."""
    built: list[dict] = []

    def factory(**point):
        built.append(point)
        return space.factory(**point)

    return attrs.evolve(space, factory=factory, inputs=None, oracle=None), built


def test_a_bound_from_the_parameters_prunes_before_the_kernel_is_built() -> None:
    space = load_space(FactoryRef(FILE, "SPACE"))
    plain_space, plain_built = _counting(space)
    plain = tune(plain_space)
    two = max(c.bound for c in plain.candidates if c.params["loads"] == 2 and c.bound is not None)
    bounded_space, built = _counting(attrs.evolve(space, bound=lambda p, rates: two if p["loads"] == 2 else None))
    bounded = tune(bounded_space)
    assert bounded.winner.index == plain.winner.index and bounded.winner.makespan == plain.winner.makespan
    ok = lambda r: [(c.index, c.makespan, c.bound) for c in r.candidates if c.status == "ok"]  # noqa: E731
    # the bounded sweep takes the unbounded one-load candidates first (driver/tune.py `sweep_order`), so
    # every two-load one is pruned by its bound; the plain sweep lowered #4 before any makespan was known
    assert ok(bounded) == [x for x in ok(plain) if plain.candidates[x[0]].params["loads"] == 1]
    early = [c for c in bounded.candidates if c.message.endswith("from its parameters")]
    assert {c.index for c in early} == {3, 4, 5} and all(c.status == "pruned" and c.bound == two for c in early)
    # the sweep tells them by a field (`from_params`), not by their message; the report shows neither
    # the field nor anything new: tune.json's entry and tune.txt's row are what they were
    assert [c for c in bounded.candidates if c.from_params] == early
    assert not any(c.from_params for c in plain.candidates)
    entry = report_json(bounded)["candidates"][3]
    assert list(entry) == ["index", "params", "status", "makespan", "bound", "code", "message", "checked", "bits"]
    assert re.fullmatch(rf"bound {two} > best makespan \d+, from its parameters", entry["message"])
    row = next(line for line in table(bounded).splitlines() if line.startswith("3  "))
    assert row.split()[-2:] == [str(two), "pruned"]
    assert len(built) == len(plain_built) - 3 and all(c.params not in built for c in early)
    assert plain.candidates[3].status == "refused"  # never built, its refusal is not seen: it could not win


def test_a_bound_above_the_lowered_bound_stops_the_run() -> None:
    space = attrs.evolve(load_space(FactoryRef(FILE, "SPACE")), inputs=None, oracle=None,
                         bound=lambda point, rates: 10 ** 9)
    with pytest.raises(NpuOptError, match=r"bound\(\) gave 1000000000 cycles for candidate #\d .* above its bound "
                                          r"after lowering") as e:
        tune(space)
    assert e.value.code == "USAGE"

    def ours(point, rates):  # a bound of npu-opt's own (synth's) that is wrong is our bug
        return 10 ** 9

    ours.__module__ = "synth.bound"
    with pytest.raises(InternalError, match="above its bound after lowering"):
        tune(attrs.evolve(space, bound=ours))


def test_a_bound_that_raises_is_the_space_files_error(tmp_path: Path) -> None:
    path = tmp_path / "raising_bound.py"
    path.write_text(Path(FILE).read_text() + "\n\ndef bad_bound(point, rates):\n    raise ValueError('no bound here')\n\n\n"
                    "BOUNDED = Space(make, {'loads': [1, 2], 'packet': [32]}, bound=bad_bound)\n")
    with pytest.raises(NpuOptError, match=r"raising_bound.py:\d+: the space's bound\(\) raised ValueError: no bound") as e:
        tune(load_space(FactoryRef(str(path), "BOUNDED")))
    assert e.value.code == "USAGE"
