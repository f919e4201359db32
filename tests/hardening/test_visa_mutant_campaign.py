"""A VISA mutant campaign over every shipped example (issue 28): seeded token-level edits of
the examples' artifacts. Each mutant must be either refused by `verify_text` with a coded
error (an `NpuOptError` whose code is not ICE), or verify and then run in the interpreter
to the end: verify refuses what the interpreter cannot run (item 15), and nothing raises
an uncoded exception. A bounded run is in the default suite; 10^4 mutants under `-m slow`.

The edits (`edits`): a token replaced by another of its kind (`tests.visa.mutation`: a `%n`
reference, a dtype, an enum word, an integer, a quoted mapping of the same artifact), a
`key=value` field deleted, and two tokens of one kind swapped.
"""

from __future__ import annotations

import collections
import functools
import random
import re
import time

import numpy as np
import pytest

from ir.errors import NpuOptError
from npu_opt.compile_api import compile_kernel
from tests.kernel_files import example, example_names
from tests.visa.mutation import _record_spans, inputs_for, mutants
from visa.interp import execute
from visa.verify import verify_text

_FIELD = re.compile(r" [a-z_]+=(?:%\d+|\"[^\"\n]*\"|-?\d+|[A-Za-z0-9_]+)(?=[ \n])")


@functools.cache
def artifact(name: str) -> str:
    outcome = compile_kernel(example(name))
    assert outcome.status == "ok", outcome.diagnostics
    return outcome.text


def _kind(token: str) -> str:
    return "ref" if token.startswith("%") else "str" if token.startswith('"') else \
        "int" if token.lstrip("-").isdigit() else "word"


def edits(text: str, rng: random.Random, n: int) -> list[str]:
    """`n` seeded one-edit mutants of `text` (record lines only), each different from it."""
    spans = _record_spans(text)
    fields = [(line_start + a, line_start + b) for line_start, line in _record_lines(text)
              for a, b in ((m.start(), m.end()) for m in _FIELD.finditer(line.split(" ; loc ")[0]))]
    by_kind = collections.defaultdict(list)
    for span in spans:
        by_kind[_kind(span[2])].append(span)
    out: list[str] = []
    while len(out) < n:
        choice = rng.random()
        if choice < 0.6:
            out.extend(mutants(text, rng, 1))
            continue
        if choice < 0.8 and fields:
            a, b = rng.choice(fields)
            mutant = text[:a] + text[b:]
        else:
            pool = by_kind[rng.choice(sorted(by_kind))]
            (a0, a1, ta), (b0, b1, tb) = sorted(rng.sample(pool, 2)) if len(pool) > 1 else (pool[0], pool[0])
            mutant = text[:a0] + tb + text[a1:b0] + ta + text[b1:] if a1 <= b0 else text
        if mutant != text:
            out.append(mutant)
    return out


def _record_lines(text: str) -> list[tuple[int, str]]:
    lines, offset = [], 0
    for line in text.splitlines(keepends=True):
        body = line.lstrip()
        if body.startswith("%") and " = " in body:
            lines.append((offset, line))
        offset += len(line)
    return lines


def outcome(mutant: str, arrays: list[np.ndarray]) -> str:
    """`refused` (a coded verify error), `ran`, or what went wrong."""
    try:
        checked = verify_text(mutant)
    except NpuOptError as e:
        return "refused" if e.code and e.code != "ICE" else f"verify ICE: {e}"
    except Exception as e:  # noqa: BLE001 - the campaign looks for exactly these
        return f"verify raised {type(e).__name__}: {e}"
    try:
        execute(checked, arrays, as_tuple=False)
    except NpuOptError as e:
        return f"verified, then the interpreter refused it [{e.code}]: {e}"
    except Exception as e:  # noqa: BLE001
        return f"verified, then the interpreter raised {type(e).__name__}: {e}"
    return "ran"


def campaign(per_example: int, seed: int) -> tuple[collections.Counter, list[str], float]:
    counts: collections.Counter = collections.Counter()
    bad: list[str] = []
    slowest = 0.0
    for name in example_names():
        text = artifact(name)
        arrays = inputs_for(text)
        for mutant in edits(text, random.Random(f"{seed}:{name}"), per_example):
            start = time.process_time()
            what = outcome(mutant, arrays)
            slowest = max(slowest, time.process_time() - start)
            counts["refused" if what == "refused" else "ran" if what == "ran" else "bad"] += 1
            if what not in ("refused", "ran"):
                diff = "\n".join(f"  - {a.strip()[:200]}\n  + {b.strip()[:200]}"
                                 for a, b in zip(text.splitlines(), mutant.splitlines()) if a != b)
                bad.append(f"{name}: {what[:400]}\n{diff}")
    return counts, bad, slowest


def test_every_example_verifies_and_runs():
    for name in example_names():
        text = artifact(name)
        assert outcome(text, inputs_for(text)) == "ran", name


def test_the_edits_are_seeded_and_real():
    text = artifact("gemv_kernel")
    first = edits(text, random.Random(3), 30)
    assert first == edits(text, random.Random(3), 30)
    assert all(m != text for m in first)
    assert len({m for m in first}) > 20


def test_bounded_campaign():
    counts, bad, slowest = campaign(15, seed=28)
    assert not bad, "\n\n".join(bad[:5])
    assert sum(counts.values()) == 15 * len(example_names())
    assert counts["refused"] > counts["ran"]  # the edits are real: most change the meaning
    assert slowest < 5


@pytest.mark.slow
def test_ten_thousand_mutants():
    per = -(-10_000 // len(example_names()))
    counts, bad, slowest = campaign(per, seed=2828)
    print(f"\nmutants: {dict(counts)}; bad: {len(bad)}; slowest {slowest:.2f} s")
    assert not bad, "\n\n".join(bad[:5])
    assert sum(counts.values()) >= 10_000
