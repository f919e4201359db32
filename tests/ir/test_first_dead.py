"""DMA-5's live run reads the first padding cell of a DM element from its factor form
(ir/rules/dma_tail.py `_first_dead`), so the check costs the same for any axis size; this holds
it to the cell table it replaced, over generated mappings."""

import numpy as np
import pytest
from hypothesis import given, settings

from ir.errors import MappingError
from ir.mapping import m
from ir.mapping.cells import LIVE
from ir.rules.dma_tail import _first_dead
from tests.ir.strategies import AXES, mapping_texts


def _oracle(mapping) -> int | None:
    status = mapping.cells(np.arange(mapping.size, dtype=np.int64)).status
    dead = np.flatnonzero(status != LIVE)
    return int(dead[0]) if dead.size else None


@settings(max_examples=300, deadline=None)
@given(mapping_texts)
def test_first_dead_matches_the_cell_table(text):
    try:
        mapping = m(text, axes=AXES)
        factors = mapping.factors()
    except MappingError:
        return
    assert _first_dead(factors) == _oracle(mapping)


@pytest.mark.parametrize("text, first", [
    ("A, B", None),              # dense
    ("A # 6", 4),                # a padded axis: the tail
    ("A, 1 # 3", 1),             # pure padding innermost
    ("[A, C] # 9, B", 48),       # a ragged piece outside a dense axis
    ("A % 2 # 3, B", 12),
])
def test_first_dead_examples(text, first):
    mapping = m(text, axes=AXES)
    assert _first_dead(mapping.factors()) == first == _oracle(mapping)
