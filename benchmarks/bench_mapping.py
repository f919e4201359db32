"""Mapping-language speed: parse (cold, cached) and .cell on a 2**30-position mapping.

Each number is printed next to a baseline measured in the same run, and as a ratio:
- parse baseline: `json.loads` of a 20-item list (the cost floor of reading that much text);
- cell baseline: decoding the same position with hand-written divmod arithmetic.
Run: python benchmarks/bench_mapping.py
"""

from __future__ import annotations

import json
import timeit

from ir.mapping import m
from ir.mapping.api import _cached
from ir.mapping.syntax import syntax_tree as _syntax_tree

AXES = {f"X{i}": 2 for i in range(20)}
TEXT = ", ".join(f"X{i}" for i in range(20))
BIG = {"A": 2**15, "B": 2**15}
BIG_TEXT = "A / 64, B / 256, A % 64, B % 256"


def best(fn, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def clear_caches() -> None:
    _cached.cache_clear()
    _syntax_tree.cache_clear()


def main() -> None:
    def cold():
        clear_caches()
        m(TEXT, axes=AXES)

    cold_t = best(cold, 50)
    cached_t = best(lambda: m(TEXT, axes=AXES), 2000)
    json_text = json.dumps([f"X{i}" for i in range(20)])
    base_parse = best(lambda: json.loads(json_text), 20000)

    big = m(BIG_TEXT, axes=BIG)
    assert big.size == 2**30
    p = 2**30 - 12345

    def by_hand():
        a_hi, rest = divmod(p, 2**21)
        b_hi, rest = divmod(rest, 2**14)
        a_lo, b_lo = divmod(rest, 256)
        return {"A": a_hi * 64 + a_lo, "B": b_hi * 256 + b_lo}

    assert big.cell(p) == by_hand()
    cell_t = best(lambda: big.cell(p), 2000)
    base_cell = best(by_hand, 20000)

    rows = [
        ("parse 20-term expression, cold", cold_t, base_parse),
        ("parse 20-term expression, cached", cached_t, base_parse),
        (".cell on a 2**30-position mapping", cell_t, base_cell),
    ]
    print(f"{'benchmark':40} {'time':>12} {'baseline':>12} {'ratio':>8}")
    for name, t, base in rows:
        print(f"{name:40} {t * 1e6:10.1f}us {base * 1e6:10.2f}us {t / base:8.1f}")


if __name__ == "__main__":
    main()
