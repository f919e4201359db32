"""The mapping-text campaign (#28 item 14): mutated, generated and extreme texts, with
escapes that name themselves or nest mappings past the depth limit, end in a documented
MappingError or a mapping that survives being used; never in another exception.

Per-text times are printed (run with -s to see them), not asserted: a timing assertion
would fail on a loaded machine without saying anything about the code.
"""

from __future__ import annotations

import collections

import pytest

from ir.errors import MappingError
from ir.mapping import m
from tests.hardening.mapping_campaign import AXES, ENV, campaign, run, undocumented


def _campaign(seed: int, count: int) -> None:
    found: dict[str, str] = {}
    outcomes: collections.Counter[str] = collections.Counter()
    times = []
    for text in campaign(seed, count):
        error, seconds = run(text)
        times.append((seconds, text[:60]))
        outcomes[getattr(error, "category", "ok") if error is None or isinstance(error, MappingError)
                 else type(error).__name__] += 1
        issue = undocumented(error)
        if issue:
            found.setdefault(issue.split(":")[0], f"{issue} <- {text[:120]!r}")
    times.sort(reverse=True)
    print(f"\nmapping campaign seed {seed}: {count} texts, {sum(t for t, _ in times):.1f} s in all, "
          f"slowest {times[0][0]:.3f} s ({times[0][1]!r}), over 1 s: {sum(t > 1 for t, _ in times)}; "
          f"outcomes {dict(outcomes)}")
    assert not found, found
    assert outcomes["ok"] > count // 20  # the campaign reaches the uses, not only the parser


def test_two_thousand_mapping_texts():
    _campaign(seed=2026, count=2000)


@pytest.mark.slow
def test_one_hundred_thousand_mapping_texts():
    _campaign(seed=1, count=100_000)


# --- the findings the campaign started from, each pinned ----------------------------------------


def test_an_escape_naming_itself_is_a_cycle_said_once():
    with pytest.raises(MappingError) as info:
        m("(" * 60 + "{L}" + ")" * 60, axes=AXES, L="(" * 60 + "{L}" + ")" * 60)
    assert info.value.category == "escape_type" and info.value.column == 61
    assert "{L} -> {L}" in info.value.detail and info.value.detail.count("in escape") == 0


def test_escapes_naming_each_other_are_a_cycle():
    with pytest.raises(MappingError) as info:
        m("{M}", axes=AXES, M="{N}, A", N="({M}) / 2")
    assert info.value.category == "escape_type"
    assert "{M} -> {N} -> {M}" in info.value.detail


def test_escapes_nested_past_the_limit_are_refused():
    env = {f"E{i}": f"{{E{i + 1}}}" for i in range(20)} | {"E20": "A"}
    assert m("{E0}", axes=AXES, E0="{E1}", E1="{E2}", E2="A").size == 8
    with pytest.raises(MappingError) as info:
        m("{E0}", axes=AXES, **env)
    assert info.value.category == "limit" and info.value.column == 1


def test_mapping_escapes_nested_fifteen_hundred_deep_stop_at_the_tree_limit():
    built, error = m("A", axes=AXES), None
    for level in range(1500):
        try:
            built = m("({Y}, 1)", axes=AXES, Y=built)
        except MappingError as e:
            error = (level, e)
            break
    assert error is not None and error[1].category == "limit"
    assert error[0] == 127  # the 128th level is the first one refused (A itself is level 1)
    assert built.depth == 128 and str(built).count("1") == 127 and hash(built) == hash(built)
    assert built.factors() == m("A", axes=AXES).factors()


def test_a_megabyte_text_is_refused_before_it_is_parsed():
    text = "B, " * 400_000 + "B"
    with pytest.raises(MappingError) as info:
        m(text, axes=AXES)
    assert info.value.category == "limit" and "characters" in info.value.detail
    assert len(str(info.value)) < 400  # the message quotes the start of the text, not all of it


def test_a_ragged_padding_of_six_hundred_thousand_cells_factors_as_one_piece():
    mapping = m("A # 640815", axes={"A": 640814})
    (piece,) = mapping.factors()
    assert piece.extent == 640815 and piece.names == ("A",)
    column = piece.matrix[:, 1]
    assert column[640813] == 640813 and column[640814] == 0 and piece.matrix[640814, 0] != piece.matrix[0, 0]
    assert mapping.normalize().equivalent(mapping)


def test_the_campaign_environment_is_what_the_docstring_says():
    assert ENV["deep"].depth == 121 and isinstance(ENV["k"], int)
