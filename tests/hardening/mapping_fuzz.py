"""Generated mapping texts for the `m()` property tests (issue 16, mapping-text findings).

`texts()` is a hypothesis strategy mixing token soup (axes, operators, fills, escapes,
numbers from tiny to thousands of digits, unicode look-alikes, every kind of whitespace)
with structured extremes (deep brackets, long operator chains, long comma lists).
`exercise(text)` runs `m()` on one text and, when it parses, what a kernel author then
asks of a mapping (size, its first and last cells, factors, normal form); it returns the
exception raised, or None.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ir.errors import MappingError

__all__ = ["texts", "exercise", "problem", "AXES"]

AXES = {"A": 8, "B": 4, "C": 65536}
_TOKENS = ["A", "B", "C", "1", "2", "8", "(", ")", "[", "]", ",", " / ", " % ", " = ", " # ", " #{0} ",
           " #{*} ", "#{!}", "{x}", "{²}", "{ 3 }", "²", "\xa0", "\u2003", "é", "Ａ", "\n", "\t", "\r", " ",
           "{", "}", ":", "-1", "0"]
_BIG = st.integers(min_value=0, max_value=6000).map(lambda n: "9" * n)


@st.composite
def _soup(draw) -> str:
    parts = draw(st.lists(st.one_of(st.sampled_from(_TOKENS), _BIG, st.text(max_size=3)), max_size=30))
    return "".join(parts)


@st.composite
def _extreme(draw) -> str:
    n = draw(st.integers(min_value=1, max_value=3000))
    kind = draw(st.sampled_from(["parens", "brackets", "chain", "commas", "pad", "bigpad", "escape"]))
    if kind == "parens":
        return "(" * n + "A" + ")" * n
    if kind == "brackets":
        return "[" * n + "A" + "]" * n
    if kind == "chain":
        return "A" + draw(st.sampled_from([" / 1", " % 8", " # 8", " = 8"])) * n
    if kind == "commas":
        return ", ".join(["A"] * n)
    if kind == "pad":
        return f"A # {draw(_BIG)}"
    if kind == "bigpad":
        big = 2 ** draw(st.integers(min_value=1, max_value=60))
        return f"A # {big}, B # {big}, A # {big}"
    return "A" + "#\xa0{0} 1" * min(n, 5)


def texts():
    """Mapping texts: token soup or structured extremes."""
    return st.one_of(_soup(), _extreme())


def exercise(text: str) -> tuple[str, BaseException | None]:
    """`m(text)` and, if it parses, size / cell / factors / normalize: which step raised
    ("m" or "use") and what (a MappingError is the documented outcome), or ("", None)."""
    from ir.mapping.api import m

    step = "m"
    try:
        mapping = m(text, axes=AXES)
        step = "use"
        size = mapping.size
        mapping.cell(0)
        mapping.cell(size - 1)
        mapping.factors()
        mapping.normalize()
    except Exception as e:  # noqa: BLE001 - MappingError or what the property test looks for
        return step, e
    return "", None


def problem(text: str) -> str | None:
    """What is wrong with how `exercise(text)` ended: an exception other than MappingError,
    or a MappingError from `m()` without a category and a column inside the text."""
    step, e = exercise(text)
    if e is None:
        return None
    if not isinstance(e, MappingError):
        return f"{type(e).__name__}: {str(e)[:200]}"
    if not e.category:
        return "MappingError without a category"
    if step == "m" and (e.column is None or not 1 <= e.column <= len(text) + 1):
        return f"MappingError {e.category} from m() with column {e.column}"
    return None
