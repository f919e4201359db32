"""Tune's numerics (issue 38 item 8): ties that give other bits are reported for the winner,
and an exact space lets only candidates with its golden candidate's bits win.

Expected bits come from running each candidate on the cpu backend here and comparing the
arrays with numpy, not from the tuner."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest

from backends import get_backend
from driver.tune import Candidate, TuneResult, tune
from driver.tune_exec import FactoryRef, load_space
from driver.tune_report import report_json, table
from npu_opt.tune import Space

FILE = str(Path(__file__).with_name("bits_space.py"))


def _space(name: str) -> Space:
    return load_space(FactoryRef(FILE, name))


def _cpu(space: Space, index: int) -> np.ndarray:
    out = get_backend("cpu").run(space.factory(**space.points()[index]), space.inputs(np.random.default_rng(0)))
    return np.asarray(out)


def _differing(a: np.ndarray, b: np.ndarray) -> int:
    return int((a.view(np.uint32) != b.view(np.uint32)).sum())


def test_a_tie_that_gives_other_bits_is_reported_for_the_winner() -> None:
    space = _space("TIES")
    result = tune(space, prune=False, top=1)
    w = result.winner
    assert w.index == 0 and w.params["packet"] == 16  # the earlier of the tie wins
    tie = result.candidates[2]
    assert tie.params["packet"] == 32 and tie.makespan == w.makespan
    n = _differing(_cpu(space, 0), _cpu(space, 2))
    assert n > 0, "packet 16 and 32 must fold the f32 sums in another order"
    assert tie.bits == f"other: result 0: {n} of {512 * 512} values differ"
    assert [c.index for c in result.other_bits()] == [2]
    assert result.candidates[1].bits is None  # slower and not checked: not compared
    assert "other bits than the winner: #2 (same makespan)" in table(result)
    assert report_json(result)["other_bits"] == [2]


def test_an_exact_space_pins_the_golden_candidates_bits() -> None:
    space = _space("EXACT")
    result = tune(space, prune=False, top=1)
    golden = _cpu(space, 2)
    assert _differing(_cpu(space, 0), golden) > 0
    first = result.candidates[0]
    assert first.checked.startswith("fail: other bits than the golden candidate (result 0: ")
    assert result.winner.index == 2  # the tie with the golden bits, checked past --top
    assert result.winner.checked == "pass"


def test_an_exact_space_without_a_golden_pins_its_first_point() -> None:
    result = tune(_space("EXACT_DEFAULT"), prune=False, top=1)
    assert result.winner.index == 0 and result.winner.checked == "pass"
    assert result.candidates[2].bits is not None and result.candidates[2].bits.startswith("other: ")


def test_a_golden_candidate_must_name_the_spaces_parameters() -> None:
    space = _space("TIES")
    with pytest.raises(ValueError, match="the golden candidate names"):
        Space(space.factory, dict(space.params), inputs=space.inputs, exact=True, golden={"packet": 32})
    with pytest.raises(ValueError, match="an exact space needs `inputs`"):
        Space(space.factory, dict(space.params), exact=True)


def _result(*cands: Candidate) -> TuneResult:
    return TuneResult("k", "rngd", cands, next(c for c in cands if c.bits == "same" and c.checked == "pass"),
                      "inline", 0.0)


def test_the_bits_line_says_plainly_when_every_compared_candidate_gives_the_winners_bits() -> None:
    """Issue 58: "none of the candidates compared" read as an error when every compared
    candidate had given the winner's bits; the line now says what was compared and found."""
    win = Candidate(0, {"p": 0}, "ok", makespan=10, checked="pass", bits="same")
    tie = Candidate(1, {"p": 1}, "ok", makespan=10, bits="same")
    slower = Candidate(2, {"p": 2}, "ok", makespan=20, checked="pass", bits="same")
    text = table(_result(win, tie, slower))
    assert text.endswith("bits: #1 (same makespan), #2 give the same bits as the winner\n")
    assert "none of the candidates compared" not in text
    assert table(_result(win, slower)).endswith("bits: #2 gives the same bits as the winner\n")
    alone = table(_result(win, Candidate(1, {"p": 1}, "ok", makespan=30)))
    assert alone.endswith("bits: no other candidate ties with the winner or was checked, so none was compared "
                          "with it\n")
    other = attrs.evolve(tie, bits="other: result 0: 3 of 9 values differ")
    assert table(_result(win, other, slower)).endswith("other bits than the winner: #1 (same makespan)\n")
