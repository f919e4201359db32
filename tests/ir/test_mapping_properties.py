"""Properties of the mapping language checked on random expressions."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ir.mapping import MappingError, OvershootError, m
from ir.mapping.cells import OVERSHOOT

from .strategies import AXES, garbage_texts, mapping_texts


def build(text):
    try:
        return m(text, axes=AXES)
    except MappingError:
        return None


def full_table(mapping):
    """Every cell as a comparable value, None when a position overshoots."""
    table = mapping.cells(np.arange(mapping.size))
    if np.any(table.status == OVERSHOOT):
        return None
    return [table[i] for i in range(mapping.size)]


@given(st.one_of(garbage_texts, mapping_texts))
@settings(max_examples=400, deadline=None)
def test_any_text_gives_mapping_or_mapping_error(text):
    """No exception other than MappingError escapes, whatever the string; columns are in range."""
    try:
        result = m(text, axes=AXES)
    except MappingError as e:
        assert e.category
        assert e.column is None or 1 <= e.column <= len(text) + 1
        return
    assert result.size >= 1


@given(mapping_texts)
@settings(max_examples=300, deadline=None)
def test_normalize_is_idempotent_and_equivalent(text):
    mapping = build(text)
    assume(mapping is not None and mapping.size <= 400)
    cells = full_table(mapping)
    assume(cells is not None)
    normal = mapping.normalize()
    assert normal.normalize() == normal
    assert normal.size == mapping.size
    assert full_table(normal) == cells


@given(mapping_texts, mapping_texts)
@settings(max_examples=300, deadline=None)
def test_equivalent_agrees_with_comparing_all_cells(text_a, text_b):
    a, b = build(text_a), build(text_b)
    assume(a is not None and b is not None and a.size <= 400 and b.size <= 400)
    cells_a, cells_b = full_table(a), full_table(b)
    assume(cells_a is not None and cells_b is not None)
    assert a.equivalent(b) == (a.size == b.size and cells_a == cells_b)


@given(mapping_texts)
@settings(max_examples=300, deadline=None)
def test_display_reparses_to_an_equivalent_mapping(text):
    mapping = build(text)
    assume(mapping is not None and mapping.size <= 400)
    again = m(str(mapping), axes=AXES)
    assert again.size == mapping.size
    assert full_table(again) == full_table(mapping)


@given(mapping_texts, st.integers(min_value=1, max_value=8))
@settings(max_examples=200, deadline=None)
def test_stride_modulo_decomposition(text, n):
    """E = (E / n, E % n) for every n dividing |E| (joint decoding, docs/mapping-language.md)."""
    mapping = build(text)
    assume(mapping is not None and mapping.size <= 400 and mapping.size % n == 0)
    cells = full_table(mapping)
    assume(cells is not None)
    split = mapping.stride(n).pair(mapping.modulo(n))
    assert full_table(split) == cells


def test_overshoot_is_reported_not_decoded():
    mapping = m("A, A", axes={"A": 4})
    assert mapping.size == 16
    try:
        mapping.cell(15)
    except OvershootError as e:
        assert e.category == "overshoot"
    else:
        raise AssertionError("position 15 of `A, A` must overshoot")
