"""Hypothesis strategies for mapping texts shared by the mapping tests."""

from __future__ import annotations

from hypothesis import strategies as st

AXES = {"A": 4, "B": 6, "C": 2, "D": 5}

atoms = st.one_of(
    st.sampled_from(sorted(AXES)),
    st.sampled_from(["1", "2", "3"]),
)


def _extend(inner):
    ops = st.sampled_from(["/", "%", "=", "#", "#{0}", "#{!}"])
    nums = st.integers(min_value=1, max_value=12).map(str)
    postfix = st.tuples(inner, ops, nums).map(lambda t: f"({t[0]}) {t[1]} {t[2]}")
    pair = st.tuples(inner, inner).map(lambda t: f"{t[0]}, {t[1]}")
    return st.one_of(postfix, pair, inner.map(lambda s: f"[{s}]"))


# Texts that are syntactically valid; many break a size rule and must raise MappingError.
mapping_texts = st.recursive(atoms, _extend, max_leaves=6)

# Garbage: arbitrary characters from the language's alphabet plus a few outsiders.
garbage_texts = st.text(alphabet="ABCDab0123456789 ,/%=#{}*!()[]:_-+$.\n\t", max_size=24)
