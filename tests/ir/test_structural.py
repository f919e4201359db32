"""The structural factor form (ir.mapping.structural) against the cell table (docs/mapping-language.md)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import ir.mapping.factors as factors_mod
import ir.mapping.structural as structural
from ir.mapping import (
    AxisFactor, BroadcastFactor, Broadcast, Index, Mapping, MappingError, Modulo, RaggedFactor, OvershootError, Pad, Padding,
    PaddingKind, Pair, PaddingFactor, Resize, Stride, Symbol, m, pair_all,
)
from ir.mapping.factors import factors_from_table, table_matrix
from ir.mapping.nodes import axis_sizes
from ir.mapping.structural import structural_factors

TOP = PaddingKind.TOP


def table_factors(mapping: Mapping) -> list:
    """The reference: steps 1-6 of docs/mapping-language.md on the full cell table."""
    mat, names = table_matrix(mapping.cells(np.arange(mapping.size)))
    return factors_from_table(mat, names, axis_sizes(mapping))


def outcome(fn, mapping: Mapping) -> object:
    """A factor list, or the string "overshoot" when the mapping has no factor form."""
    try:
        return fn(mapping)
    except OvershootError:
        return "overshoot"


# --- the examples of docs/mapping-language.md ---------------------------------------------------------

STAGE = "1, 1 # 2, I / 32, J / 32, I % 32, J / 8 % 4, J % 8"


def test_ragged_padding_keeps_the_shared_inner_digits() -> None:
    k = m("K # 32", axes={"K": 20})
    cells = (Index(), Index(K=4), Index(K=8), Index(K=12), Index(K=16)) + (Padding(TOP),) * 3
    assert structural_factors(k) == [RaggedFactor(cells), AxisFactor("K", 1, 4, 20)]


def test_padding_that_shares_nothing_is_one_op() -> None:
    facs = structural_factors(m("D # 64", axes={"D": 61}))
    assert len(facs) == 1 and isinstance(facs[0], RaggedFactor) and facs[0].extent == 64


@pytest.mark.parametrize(("text", "axes", "expected"), [
    ("1 # 2, A # 3", {"A": 2}, [PaddingFactor(TOP, 3), AxisFactor("A", 1, 2, 2)]),
    ("A, B", {"A": 3, "B": 5}, [AxisFactor("A", 1, 3, 3), AxisFactor("B", 1, 5, 5)]),
    ("B / 64, B % 64", {"B": 512}, [AxisFactor("B", 1, 512, 512)]),
    ("A # 16", {"A": 8}, [PaddingFactor(TOP, 2), AxisFactor("A", 1, 8, 8)]),
    ("1 # 2, A", {"A": 8}, [PaddingFactor(TOP, 2), AxisFactor("A", 1, 8, 8)]),
    ("2, 3", {}, [BroadcastFactor(6)]),
    (STAGE, {"I": 512, "J": 512},
     [PaddingFactor(TOP, 2), AxisFactor("I", 32, 16, 512), AxisFactor("J", 32, 16, 512), AxisFactor("I", 1, 32, 512), AxisFactor("J", 1, 32, 512)]),
])
def test_spec_examples(text: str, axes: dict[str, int], expected: list) -> None:
    mapping = m(text, axes=axes)
    assert structural_factors(mapping) == expected
    assert table_factors(mapping) == expected


@pytest.mark.parametrize(("text", "axes"), [
    ("R # 24 / 4, R # 24 % 4", {"R": 19}),         # joint decoding of a compound base
    ("A / 2, A % 4", {"A": 8}),                     # overshoot
    ("A, A", {"A": 4}),                             # shared key
    ("(A, A) % 4, B", {"A": 4, "B": 3}),            # overshooting base, chain reads the safe part
    ("(A / 2, A % 4) = 4", {"A": 8}),               # resize cuts the overshoot off
    ("(A # 5, 1 #{0} 2) % 5, 1 # 3", {"A": 4}),     # ragged piece next to pure padding
    ("A = 5, B #{!} 8 / 2", {"A": 6, "B": 5}),
])
def test_tricky_cases_agree_with_the_table(text: str, axes: dict[str, int]) -> None:
    mapping = m(text, axes=axes)
    assert outcome(structural_factors, mapping) == outcome(table_factors, mapping)


def test_large_overshoot_raises() -> None:
    with pytest.raises(OvershootError):
        structural_factors(m("A / 2, A % 4096", axes={"A": 8192}))


# --- random legal mappings ---------------------------------------------------------------------

KINDS = list(PaddingKind)


def _divisors(n: int) -> list[int]:
    """Divisors of n, the trivial ones last so that shrinking does not favour no-ops."""
    inner = [d for d in range(2, n) if n % d == 0]
    return inner + ([1, n] if n > 1 else [1])


@st.composite
def trees(draw: st.DrawFn) -> Mapping:
    """Random legal trees over three small axes using every operator and padding kind.

    Subtrees are kept in a pool and reused, so compound bases with several chains (joint
    decoding) and repeated keys (overshoot) come up often."""
    sizes = draw(st.lists(st.sampled_from([4, 6, 3, 5, 2, 8, 12, 1]), min_size=3, max_size=3))
    symbols = [Symbol(name, size) for name, size in zip("ABC", sizes)]
    pool: list[Mapping] = []

    def node(depth: int) -> Mapping:
        choice = draw(st.sampled_from("sorruuuppdd"[: 4 if depth <= 0 else None]))
        if choice == "s":
            out: Mapping = draw(st.sampled_from(symbols))
        elif choice == "o":  # reuse a subtree: same compound base twice
            out = draw(st.sampled_from(pool)) if pool else unary(draw(st.sampled_from(symbols)))
        elif choice == "r":
            out = unary(draw(st.sampled_from(symbols)))
        elif choice == "u":
            out = unary(node(depth - 1))
        elif choice == "p":
            out = Pair(node(depth - 1), node(depth - 1))
        else:
            out = split(node(depth - 1))
        if out.size > 5000:  # keeps the divisor lists short; the tree is rejected anyway
            reject()
        pool.append(out)
        return out

    def unary(inner: Mapping) -> Mapping:
        size = inner.size
        divisors = _divisors(size)
        op = draw(st.sampled_from(["/", "%", "=", "#", "#k", "n"]))
        if op == "n":
            return Broadcast(draw(st.sampled_from([2, 3, 4, 1])))
        if op in "/%":
            n = draw(st.sampled_from(divisors))
            return Stride(inner, n) if op == "/" else Modulo(inner, n)
        if op == "=":
            return Resize(inner, draw(st.sampled_from(list(range(size, 0, -1)))))
        n = draw(st.one_of(st.integers(size, size + 7), st.sampled_from([2 * size, 3 * size])))
        return Pad(inner, n, draw(st.sampled_from(KINDS)) if op == "#k" else TOP)

    def split(inner: Mapping) -> Mapping:
        """`E / n, E % n` in some order, perhaps with something in between."""
        n = draw(st.sampled_from(_divisors(inner.size)))
        a, b = Stride(inner, n), Modulo(inner, n)
        if draw(st.booleans()):
            a, b = b, a
        if draw(st.booleans()):
            return Pair(a, Pair(draw(st.sampled_from(symbols)), b))
        return Pair(a, b)

    try:
        items = [node(draw(st.integers(1, 3))) for _ in range(draw(st.integers(1, 4)))]
        tree = pair_all(items)
    except MappingError:
        reject()
    if tree.size > 600:
        reject()
    return tree


@given(trees())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.filter_too_much])
def test_structural_equals_table(mapping: Mapping) -> None:
    assert outcome(structural_factors, mapping) == outcome(table_factors, mapping), str(mapping)


@pytest.mark.slow
@given(trees())
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.filter_too_much])
def test_structural_equals_table_slow(mapping: Mapping) -> None:
    assert outcome(structural_factors, mapping) == outcome(table_factors, mapping), str(mapping)


@pytest.mark.parametrize("text", [
    "(A # 7, B) / 2, C", "A # 5 = 3, B #{0} 9 % 3", "(A, 1 #{!} 2) # 11, (B # 4) / 2",
    "((A, B) # 13) / 1, C % 2", "C % 2, C % 2", "(B, A) # 30 / 2, (B, A) # 30 % 2",
])
def test_hand_picked_agree(text: str) -> None:
    mapping = m(text, axes={"A": 3, "B": 2, "C": 4})
    assert outcome(structural_factors, mapping) == outcome(table_factors, mapping)


# --- large mappings tabulate (almost) nothing --------------------------------------------------


@pytest.mark.parametrize(("text", "size"), [
    (STAGE, 512),
    ("I / 32, J / 32, I % 32, J / 8 % 4, J % 8", 4096),
    ("1 # 2, A / 8 # 256, (N, H), A % 8", 2048),
    ("1, 1 # 2, C / 2 # 256, (N, H, W), C % 2", 64),
])
def test_large_mappings_are_not_tabulated(monkeypatch: pytest.MonkeyPatch, text: str, size: int) -> None:
    counted = [0]
    real_evaluate, real_from_table = structural.evaluate, factors_mod.factors_from_table

    def spy_evaluate(mapping: Mapping, positions: object) -> object:
        counted[0] += len(np.asarray(positions).reshape(-1))
        return real_evaluate(mapping, positions)

    def spy_from_table(mat: np.ndarray, *args: object) -> list:
        counted[0] += len(mat)
        return real_from_table(mat, *args)

    monkeypatch.setattr(structural, "evaluate", spy_evaluate)
    monkeypatch.setattr(factors_mod, "factors_from_table", spy_from_table)
    axes = {"I": size, "J": size, "A": size, "C": size, "N": 4, "H": 32, "W": 32}
    mapping = m(text, axes=axes)
    facs = structural_factors(mapping)
    assert counted[0] < 4096
    assert all(isinstance(f, (AxisFactor, BroadcastFactor, PaddingFactor)) for f in facs)
