"""A pair whose chains over a compound base sit among other items is factored from the table
of those chains alone (ir.mapping.structural `_Factoring.tab_apart`): the same factors as
the whole table, and no table of the whole pair (issue 61, first-run memory)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from ir.mapping import AxisFactor, OvershootError, PaddingFactor, PaddingKind, RaggedFactor, m
from ir.mapping.cells import LIVE
from ir.mapping.structural import _Factoring, structural_factors
from tests.ir.test_structural import outcome, table_factors

# (text, axes): chains over one or two padded bases with symbols, chains over symbols and
# broadcasts between, before and after them
SPLIT = [
    ("N # 512 % 512 / 64, M, N # 512 % 64, K", {"N": 384, "M": 3, "K": 2}),
    ("B, (C # 12) % 4, A / 2, (C # 12) / 4", {"A": 6, "B": 2, "C": 8}),
    ("(A # 10) / 5, 3, (A # 10) % 5", {"A": 5}),
    ("(A #{0} 16) / 4, B, (A #{0} 16) % 4", {"A": 12, "B": 3}),
    ("(A # 8) / 4, (B # 6) / 2, C, (A # 8) % 4, (B # 6) % 2", {"A": 4, "B": 4, "C": 5}),
    ("(A # 12) / 4, B / 2, (A # 12) % 4", {"A": 8, "B": 4}),
    ("1 # 2, (M # 16) / 8, N, 1 # 4, (M # 16) % 8, K # 5", {"M": 8, "N": 3, "K": 3}),   # padded items
]


@pytest.mark.parametrize(("text", "axes"), SPLIT)
def test_the_split_table_gives_the_whole_tables_factors(text: str, axes: dict[str, int]) -> None:
    mapping = m(text, axes=axes)
    apart = _Factoring(mapping).tab_apart(mapping)
    assert apart is not None, "the pair is factored apart, not tabulated whole"
    assert apart == table_factors(mapping)
    assert outcome(structural_factors, mapping) == outcome(table_factors, mapping)


@pytest.mark.parametrize(("text", "axes"), [
    ("R # 24 / 4, A, R # 24 % 4", {"R": 19, "A": 3}),        # a ragged piece spans A's place
    ("(A # 12) / 4, A % 2, (A # 12) % 4", {"A": 8}),        # A's coordinates may sum past 8
    ("(A # 6) / 2, B, (A # 6) % 2, B", {"A": 5, "B": 3}),   # two items with one key
    ("(A # 8) / 4, 1 #{0} 2, (A # 8) % 4", {"A": 4}),       # two padding kinds: the order decides
])
def test_a_pair_that_does_not_split_is_tabulated(text: str, axes: dict[str, int]) -> None:
    mapping = m(text, axes=axes)
    assert _Factoring(mapping).tab_apart(mapping) is None
    assert outcome(structural_factors, mapping) == outcome(table_factors, mapping)


def test_a_machine_sized_pair_is_factored_without_its_table() -> None:
    # the DM buffer of a drawn kernel (issue 61, drawn_s2_2): 2^22 positions, N padded to
    # 512 and split over two levels with M between; it was a 2^22-cell table (past the
    # mapping limit) and a 2^19 one with K cut to 32: 40-290 MiB on the first run
    axes = {"N": 384, "M": 1024, "K": 256}
    tracemalloc.start()
    try:
        big = structural_factors(m("N # 512 % 512 / 64, M % 1024 / 32, N # 512 % 64, K", axes=axes))
        half = structural_factors(m("N # 512 % 512 / 64, M % 1024 / 32, N # 512 % 64, K % 32", axes=axes))
        # a DM tensor of one slice in 128 (drawn_s1_2 at small scale): 2^23 positions, M split
        # around its slice and the padding of the others
        dm = structural_factors(m("1 # 2, M # 128 % 128 / 128, N % 32 / 16, 1 # 128, M # 128 % 128, K",
                                  axes={"M": 96, "N": 32, "K": 128}))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{peak / 2**20:.1f} MiB traced while factoring"
    live, top = LIVE, int(PaddingKind.TOP)
    n_hi = [RaggedFactor.from_table(["N"], np.array([[live, 0], [live, 128], [live, 256], [top, 0]])),
            AxisFactor("N", 64, 2, 384)]
    tail = [AxisFactor("M", 32, 32, 1024), AxisFactor("N", 1, 64, 384)]
    assert big == [*n_hi, *tail, AxisFactor("K", 1, 256, 256)]
    assert half == [*n_hi, *tail, AxisFactor("K", 1, 32, 256)]
    m_hi = RaggedFactor.from_table(["M"], np.array([[live, 0], [live, 32], [live, 64], [top, 0]]))
    assert dm == [PaddingFactor(PaddingKind.TOP, 2), AxisFactor("N", 16, 2, 32), PaddingFactor(PaddingKind.TOP, 128),
                  m_hi, AxisFactor("M", 1, 32, 96), AxisFactor("K", 1, 128, 128)]


def test_an_overshooting_joint_part_is_left_to_the_whole_table() -> None:
    mapping = m("(A, A) / 4, B, (A, A) % 4", axes={"A": 4, "B": 3})
    assert _Factoring(mapping).tab_apart(mapping) is None
    with pytest.raises(OvershootError):
        structural_factors(mapping)
