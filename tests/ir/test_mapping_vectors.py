"""Every case of the shared mapping vectors (spec/vectors/mapping.json, copied here).

The copy follows furiosa-opt v0.9 where the shared spec (written against v0.6) differs:
lowercase axis names (v0.9) and counts after an operator (`W / F`, `W / (W / 256)`, v0.8)
are legal, so four v0.6 error cases became the cases their new rules give, and the
`v08-`/`v09-` cases cover the new forms (docs/mapping-language.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ir.mapping import Index, MappingError, OutOfBounds, Padding, PaddingKind, idx, m

CASES = json.loads((Path(__file__).parents[1] / "vectors" / "mapping.json").read_text())


def expected_cell(c):
    """A vector's cell notation as a cell value."""
    if c == "oob":
        return OutOfBounds()
    if isinstance(c, str):
        assert c.startswith("pad:")
        return Padding(PaddingKind[c[4:].upper()])
    return Index(c)


def build(case, text, key):
    env = case.get("env", {})
    if key == "index":
        return idx(text, axes=case["axes"], **env)
    return m(text, axes=case["axes"], **env)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_vector(case):
    key = "index" if "index" in case else "expr"
    text = case[key]
    if "error" in case:
        with pytest.raises(MappingError) as info:
            build(case, text, key)
        assert info.value.category == case["error"]
        assert info.value.code == f"MAP-{case['error']}"
        return
    got = build(case, text, key)
    if key == "index":
        assert got == expected_cell(case["cell"])
        for other in case.get("equal_to", []):
            assert build(case, other, key) == got, other
        return
    assert got.size == case["size"]
    for position, cell in case["cells"]:
        assert got.cell(position) == expected_cell(cell), position
    for other in case.get("equal_to", []):
        assert got.equivalent(build(case, other, key)), other
    for other in case.get("not_equal_to", []):
        assert not got.equivalent(build(case, other, key)), other
    for other in case.get("same_tree", []):
        assert build(case, other, key) == got, other
    for other in case.get("not_same_tree", []):
        assert build(case, other, key) != got, other


def test_vectors_cover_every_error_category():
    """The suite exercises each category docs/mapping-language.md lists."""
    categories = {c["error"] for c in CASES if "error" in c}
    assert categories == {
        "syntax", "unknown_axis", "unknown_escape", "escape_type", "zero_divisor",
        "stride_not_divisible", "modulo_not_divisible", "resize_too_large",
        "padding_too_small", "zero_size", "invalid_axis_decl", "factor_not_count",
    }
