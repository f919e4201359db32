"""The Python surface of the mapping language: errors with columns, escapes, registry, values."""

from __future__ import annotations

import pytest

from ir.mapping import (
    AxisFactor, BroadcastFactor, Index, Mapping, MappingError, OutOfBounds, Padding, PaddingKind, PaddingFactor, axes, idx, m,
)
from ir.mapping.factors import RaggedFactor

axes(Q=16, R=19)  # this module's registry, used by the registry tests below


# --- errors: category, column, caret ----------------------------------------------------

@pytest.mark.parametrize("text, category, column", [
    ("A / 3", "stride_not_divisible", 5),
    ("A, B / 2", "stride_not_divisible", 8),
    ("A % 0", "zero_divisor", 5),
    ("A # 4", "padding_too_small", 5),
    ("A = 9", "resize_too_large", 5),
    ("Zed", "unknown_axis", 1),
    ("A, Zed", "unknown_axis", 4),
    ("A * 2", "syntax", 3),
    ("a", "unknown_axis", 1),
    ("_a", "syntax", 1),
    ("A / (A, B)", "factor_not_count", 5),
    ("A, {L}", "unknown_escape", 4),
    ("(A, B", "syntax", 6),
    ("", "syntax", 1),
])
def test_error_category_and_column(text, category, column):
    with pytest.raises(MappingError) as info:
        m(text, axes={"A": 8, "B": 5})
    err = info.value
    assert (err.category, err.column) == (category, column)
    assert err.code == f"MAP-{category}"


def test_message_quotes_expression_with_caret_under_fault():
    with pytest.raises(MappingError) as info:
        m("A / 8 # 256, A % 3", axes={"A": 2048})
    lines = str(info.value).splitlines()
    assert lines[1].endswith("A / 8 # 256, A % 3")
    caret = lines[2].index("^") - lines[1].index("A")
    assert "A / 8 # 256, A % 3"[caret] == "3"


def test_non_string_input_is_a_mapping_error():
    with pytest.raises(MappingError):
        m(42, axes={"A": 8})  # type: ignore[arg-type]


# --- escapes -----------------------------------------------------------------------------

def test_escapes_resolve_keywords_then_locals_then_globals():
    inner = m("A / 2", axes={"A": 8})
    got = m("{inner}, A % 2", axes={"A": 8})
    assert got == m("A / 2, A % 2", axes={"A": 8})
    assert m("A # {N}", axes={"A": 8}, N=16).size == 16


def test_escape_cycle_is_reported():
    with pytest.raises(MappingError) as info:
        m("{X}", axes={"A": 8}, X="{X}")
    assert info.value.category == "escape_type"


def test_dotted_escape_uses_attributes():
    (out,) = axes(Out=64)
    assert m("1 # {out.SIZE}").size == 64
    assert out.mapping == m("Out")


# --- axis registry -------------------------------------------------------------------------

def test_module_registry_resolves_symbols():
    assert m("Q / 4").size == 4
    assert m("R # 24").size == 24


def test_redeclaring_with_another_size_is_refused():
    axes(Q=16)  # same size: harmless
    with pytest.raises(MappingError) as info:
        axes(Q=32)
    assert info.value.category == "invalid_axis_decl"


@pytest.mark.parametrize("text", ["A = 8, A = 8", "_a = 8", "type = 8", "A = 0", ", A = 1", "A = 1,,"])
def test_textual_declaration_errors(text):
    with pytest.raises(MappingError) as info:
        axes(text)
    assert info.value.category in {"invalid_axis_decl", "syntax"}


def test_textual_declaration():
    declared = axes("Tx = 3, Ty = 5,")
    assert [(a.name, a.size) for a in declared] == [("Tx", 3), ("Ty", 5)]
    assert m("Tx, Ty").size == 15


def test_explicit_axes_override_registry():
    assert m("Q", axes={"Q": 3}).size == 3


# --- values -------------------------------------------------------------------------------

def test_index_drops_zeros_and_compares_with_dicts():
    assert Index(A=0) == Index() == {}
    assert Index({"A": 1}, B=7) == {"A": 1, "B": 7, "C": 0}
    assert hash(Index(A=1)) == hash(Index({"A": 1, "B": 0}))
    assert Index(A=3)["A"] == 3 and Index(A=3).get("B") == 0


def test_out_of_bounds_and_padding_values():
    mapping = m("A #{0} 10", axes={"A": 8})
    assert mapping.cell(9) == Padding(PaddingKind.ZERO)
    assert mapping.cell(10) == OutOfBounds() and mapping.cell(10) == OutOfBounds
    assert isinstance(mapping.cell(10), OutOfBounds)
    assert PaddingKind.BOTTOM < PaddingKind.ZERO < PaddingKind.TOP


def test_mapping_is_hashable_and_builders_check_like_the_parser():
    a = m("A", axes={"A": 8})
    assert {a: 1}[m("(A)", axes={"A": 8})] == 1
    assert a.stride(2).pair(a.modulo(2)) == m("A / 2, A % 2", axes={"A": 8})
    assert a.pad(10, PaddingKind.BOTTOM) == m("A #{!} 10", axes={"A": 8})
    with pytest.raises(MappingError) as info:
        a.stride(3)
    assert info.value.category == "stride_not_divisible"
    with pytest.raises(MappingError):
        a.resize(9)
    assert isinstance(a, Mapping)


# --- worked examples of docs/mapping-language.md -----------------------------------------------------

def test_worked_examples():
    assert [m("A / 8 % 4", axes={"A": 64}).cell(p) for p in range(4)] == [{"A": 8 * p} for p in range(4)]
    assert [m("A % 8 / 2", axes={"A": 64}).cell(p) for p in range(4)] == [{"A": 2 * p} for p in range(4)]
    assert m("B / 64, B % 32, B / 32 % 2", axes={"B": 512}).cell(67) == {"B": 97}
    cd = m("C, D # 64", axes={"C": 13, "D": 61})
    assert cd.size == 832 and cd.cell(62) == Padding() and cd.cell(64) == {"C": 1}
    r = m("R # 24 / 4, R # 24 % 4", axes={"R": 19})
    assert r.cell(19) == Padding(PaddingKind.TOP)
    ab = m("A #{0} 5, B #{!} 3", axes={"A": 4, "B": 2})
    assert ab.cell(2) == Padding(PaddingKind.BOTTOM) and ab.cell(12) == Padding(PaddingKind.ZERO)


def test_index_literals():
    assert idx("B: 1, A #{!} 6: 5", axes={"A": 4, "B": 8}) == Padding(PaddingKind.BOTTOM)
    assert idx("A, B: 519", axes={"A": 8, "B": 512}) == {"A": 1, "B": 7}
    assert idx("", axes={}) == Index()


# --- normal forms (docs/mapping-language.md) -------------------------------------------------------

@pytest.mark.parametrize("text, sizes, expected", [
    ("A, B", {"A": 8, "B": 512}, [AxisFactor("A", 1, 8, 8), AxisFactor("B", 1, 512, 512)]),
    ("B / 64, B % 64", {"B": 512}, [AxisFactor("B", 1, 512, 512)]),
    ("A # 16", {"A": 8}, [PaddingFactor(PaddingKind.TOP, 2), AxisFactor("A", 1, 8, 8)]),
    ("1 # 2, A", {"A": 8}, [PaddingFactor(PaddingKind.TOP, 2), AxisFactor("A", 1, 8, 8)]),
    ("2, 3", {}, [BroadcastFactor(6)]),
    ("1 # 2, A # 3", {"A": 2}, [PaddingFactor(PaddingKind.TOP, 3), AxisFactor("A", 1, 2, 2)]),
    ("1", {}, []),
])
def test_factor_forms(text, sizes, expected):
    assert list(m(text, axes=sizes).factors()) == expected


def test_ragged_factor_forms():
    (op, ax) = m("K # 32", axes={"K": 20}).factors()
    assert ax == AxisFactor("K", 1, 4, 20)
    assert isinstance(op, RaggedFactor)
    assert op.cells == (Index(), Index(K=4), Index(K=8), Index(K=12), Index(K=16),
                        Padding(), Padding(), Padding())
    assert [type(f) for f in m("D # 64", axes={"D": 61}).factors()] == [RaggedFactor]


def test_normalize_gives_one_tree_per_equivalence_class():
    sizes = {"A": 8, "B": 512}
    forms = {m(t, axes=sizes).normalize() for t in ["A, B", "A, B / 64, B % 64", "(A, B) / 1", "1, A, B, 1"]}
    assert len(forms) == 1
    assert m("A # 16", axes=sizes).normalize() == m("1 # 2, A", axes=sizes).normalize()
    assert m("A # 16", axes=sizes).normalize() != m("A, 1 # 2", axes=sizes).normalize()


def test_normal_form_of_a_repeated_digit_range_stays_equivalent():
    """Found by the idempotence property: `B % 2, B = 2` has two identical factors
    AxisFactor(B, 1, 2); rendering both as `B % 2` would make one chain key whose merged values
    overshoot. The repeat is spelled `B = 2`, which adds coordinates as the cells do."""
    e = m("B % 2, B = 2", axes={"B": 6})
    normal = e.normalize()
    assert [normal.cell(p) for p in range(4)] == [e.cell(p) for p in range(4)] == [{}, {"B": 1}, {"B": 1}, {"B": 2}]
    assert normal.normalize() == normal
    strided = m("B / 2 % 2, B / 2 = 2", axes={"B": 12})
    assert [strided.normalize().cell(p) for p in range(4)] == [strided.cell(p) for p in range(4)]
