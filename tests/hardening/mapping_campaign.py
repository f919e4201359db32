"""A seeded mapping-text campaign (#28 item 14): valid mappings mutated, token soup, escapes.

`campaign(seed, count)` yields `count` texts from a plain seeded generator (fast enough for
thousands of texts a second): mutations of the shared vector expressions (characters and
tokens inserted, deleted, swapped or duplicated, spans wrapped in brackets, two texts
spliced), token soup over the whole v0.9 vocabulary (lowercase axes, counts after an
operator, fills, escapes) and structured extremes (deep brackets, long chains, escapes that
name themselves or each other, mappings substituted into escapes far past the depth limit).
`run(text)` parses it with the escape environment `ENV` and exercises the result; it
returns the exception raised, or None, and how long the whole thing took.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from pathlib import Path

from ir.codes import MAPPING_CATEGORIES
from ir.errors import MappingError
from ir.mapping import Mapping, Symbol, m

__all__ = ["AXES", "ENV", "campaign", "run", "undocumented"]

AXES = {"A": 8, "B": 4, "C": 65536, "W": 2560, "rows": 6, "k_2": 2, "D": 61}

# Mapping-valued escapes: a chain 120 deep (legal, under the 128 limit) and one 200 deep,
# which no constructor can build, so it is made here node by node below the check.
_DEEP = Symbol("B", 4)
for _ in range(120):
    _DEEP = _DEEP.pair(m("1"))

ENV: dict[str, object] = {
    "L": "{L}", "M": "{N}, A", "N": "({M}) / 2", "S": "A, B", "T": "{S}, {S}", "U": "{T}, {T}, {T}",
    "P": m("A / 2", axes=AXES), "deep": _DEEP, "k": 8, "zero": 0, "neg": -1, "half": 2.5, "none": None,
    "big": 2 ** 60, "lower": "rows, k_2", "count": m("W / 256", axes=AXES),
}

_VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "mapping.json").read_text())
SEEDS = sorted({c["expr"] for c in _VECTORS if "expr" in c} | {
    "W / (W / 256)", "1 # (W / 512)", "W % (A), W = A", "rows, k_2 / 2", "A # 640815", "D # 64",
    "{P}, {count}", "{deep}, {P}", "{lower}", "{S}, C / {k}", "W / ({count})", "A #{0} (B / 2)",
})
_TOKENS = ["A", "B", "C", "W", "D", "rows", "k_2", "a", "_a", "type", "1", "2", "8", "256", "0", "(", ")",
           "[", "]", ",", " / ", " % ", " = ", " # ", " #{0} ", " #{*} ", "#{!}", "{L}", "{M}", "{P}",
           "{deep}", "{k}", "{zero}", "{neg}", "{half}", "{none}", "{big}", "{count}", "{T}", "{U}",
           "{nope}", "{", "}", ":", "-", "*", "é", "Ａ", "\xa0", "\n", "\t", " ", "9" * 20]


def _mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        i = rng.randint(0, len(text))
        j = rng.randint(i, min(len(text), i + 8))
        op = rng.randrange(7)
        if op == 0:
            text = text[:i] + rng.choice(_TOKENS) + text[i:]
        elif op == 1:
            text = text[:i] + text[j:]
        elif op == 2:
            text = text[:i] + rng.choice(_TOKENS) + text[j:]
        elif op == 3:
            text = text[:i] + text[i:j] * rng.randint(2, 40) + text[j:]
        elif op == 4:
            text = text[:i] + "(" + text[i:j] + ")" + text[j:]
        elif op == 5:
            text = text[:i] + rng.choice(SEEDS) + text[j:]
        else:
            text = text[:i] + rng.choice(" / % = #") + " (" + rng.choice(SEEDS) + ")" + text[j:]
    return text


def _extreme(rng: random.Random) -> str:
    n = rng.choice([1, 2, 8, 63, 64, 65, 127, 128, 129, 500, 1500, 20000])
    kind = rng.randrange(8)
    if kind == 0:
        return "(" * n + "A" + ")" * n
    if kind == 1:
        return "A" + rng.choice([" / 1", " % 8", " # 8", " = 8", " / (1)", " # (A)"]) * n
    if kind == 2:
        return ", ".join(["{P}"] * n)
    if kind == 3:
        return "W / " + "(W / " * n + "1" + ")" * n
    if kind == 4:
        return "{deep}, " * min(n, 4) + "{deep}"
    if kind == 5:
        return "(" * min(n, 60) + "{" + rng.choice(["L", "M", "N", "U"]) + "}" + ")" * min(n, 60)
    if kind == 6:
        return "B, " * n * 20 + "B"  # long text: refused before it is parsed
    return rng.choice(["rows", "a", "type"]) + " / " + rng.choice(["rows", "k_2", "(rows)", "(k_2, k_2)"])


def _grammatical(rng: random.Random, depth: int = 0) -> str:
    """A text the grammar accepts, built from random items; most are legal or nearly so."""
    pick = rng.random()
    if depth > 3 or pick < 0.3:
        return rng.choice(["A", "B", "C", "W", "D", "rows", "k_2", "1", "2", "4", "{P}", "{S}", "{count}",
                           "{lower}"])
    if pick < 0.5:
        items = [_grammatical(rng, depth + 1) for _ in range(rng.randint(2, 3))]
        opener = rng.choice("([")
        return opener + ", ".join(items) + (")" if opener == "(" else "]")
    operand = _grammatical(rng, depth + 1)
    op = rng.choice([" / ", " % ", " = ", " # ", " #{0} ", " #{!} "])
    arg = rng.choice(["2", "4", "8", "16", "3", "{k}", "A", "B", "rows", "k_2", "(B / 2)", "(W / 256)",
                      "(A / (B))", "({P})", "(2)", "(A % 2)"])
    return operand + op + arg


def campaign(seed: int, count: int) -> Iterator[str]:
    """`count` texts: mutated seeds, token soup and extremes, reproducible from `seed`."""
    rng = random.Random(seed)
    for _ in range(count):
        kind = rng.random()
        if kind < 0.45:
            yield _mutate(rng, rng.choice(SEEDS))
        elif kind < 0.7:
            yield _grammatical(rng)
        elif kind < 0.85:
            yield "".join(rng.choice(_TOKENS) for _ in range(rng.randint(0, 25)))
        else:
            yield _extreme(rng)


def run(text: str) -> tuple[BaseException | None, float]:
    """Parse `text` (axes AXES, escapes ENV) and, when it parses, use it as a kernel does:
    size, first and last cells, factors, normal form, printing, hashing and re-parsing its
    printed form. Returns the exception raised (None when all went through) and seconds."""
    start = time.perf_counter()
    try:
        mapping = m(text, axes=AXES, **ENV)
        assert isinstance(mapping, Mapping)
        hash(mapping)
        shown = str(mapping)
        mapping.cell(0)
        mapping.cell(mapping.size - 1)
        mapping.factors()
        again = mapping.normalize()
        assert again.equivalent(mapping)
        try:
            reparsed = m(shown, axes=AXES)
        except MappingError as e:
            if e.category != "limit":  # a legal tree prints a legal text, perhaps too deep to parse
                raise
        else:
            assert reparsed.equivalent(mapping), shown
    except BaseException as e:  # noqa: BLE001 - the campaign classifies whatever ends it
        return e, time.perf_counter() - start
    return None, time.perf_counter() - start


def undocumented(error: BaseException | None) -> str | None:
    """Why an outcome is not a documented refusal: anything but a MappingError with a known
    category and its MAP- code (an overshoot is a documented outcome of cells and factors)."""
    if error is None:
        return None
    if not isinstance(error, MappingError):
        return f"{type(error).__name__}: {str(error)[:160]}"
    if error.category not in MAPPING_CATEGORIES or error.code != f"MAP-{error.category}":
        return f"MappingError with category {error.category!r} and code {error.code!r}"
    return None
