"""Cyclomatic complexity of the source packages: every function at most 15.

The measure is McCabe's, as the `mccabe` package computes it for flake8's C901: one, plus
one for each `if`, `elif` and loop, plus for a `try` one per `except` clause and one more.
A nested function counts one, and its own branches, inside the function that holds it;
boolean operators, conditional expressions and comprehensions do not count.

A function over the limit fails unless ALLOW records it with its complexity now. The list
only shrinks: an entry fails when its function got more complex, went away, came under the
limit (delete the entry), or got simpler while still over it (write the new number).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import mccabe

from tests import source_tree

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("npu_opt", "synth", "driver", "ir", "tu_ops", "visa", "backends")
MAX_COMPLEXITY = 15

# "path:qualified.name" -> its complexity when it was listed (lower it as it improves).
ALLOW: dict[str, int] = {
}


def complexities(source: str | ast.Module, path: str) -> dict[str, int]:
    """"path:name" -> McCabe complexity of each function (and module-level branch) in
    `source` (its text or its parsed tree); a method's name is `Class.method`, a nested
    function's is folded into its holder."""
    tree = compile(source, path, "exec", ast.PyCF_ONLY_AST) if isinstance(source, str) else source
    visitor = mccabe.PathGraphingAstVisitor()
    visitor.preorder(tree, visitor)
    return {f"{path}:{graph.entity}": graph.complexity() for graph in visitor.graphs.values()}


@functools.cache
def measured() -> dict[str, int]:
    """The complexity of everything in the packages, keyed "path:name" (measured once per
    process, on the shared parse of tests/source_tree.py: both tests below read it)."""
    out: dict[str, int] = {}
    counts = {}
    for pkg in PACKAGES:
        files = source_tree.paths(pkg)
        counts[pkg] = len(files)
        for path in files:
            out.update(complexities(source_tree.tree(path), path.relative_to(ROOT).as_posix()))
    assert all(n > 3 for n in counts.values()), f"too few source files found: {counts}"
    return out


def over_limit(found: dict[str, int], allow: dict[str, int]) -> list[str]:
    """Functions over MAX_COMPLEXITY that `allow` does not list."""
    return sorted(f"{key} ({n})" for key, n in found.items() if n > MAX_COMPLEXITY and key not in allow)


def stale_entries(found: dict[str, int], allow: dict[str, int]) -> list[str]:
    """Why each entry of `allow` no longer holds (empty when each records its function's
    complexity now, over the limit)."""
    out = []
    for key, listed in sorted(allow.items()):
        now = found.get(key)
        if now is None:
            out.append(f"{key}: no such function any more: delete the entry")
        elif now <= MAX_COMPLEXITY:
            out.append(f"{key}: now {now}, within the limit: delete the entry")
        elif now > listed:
            out.append(f"{key}: got more complex ({listed} -> {now}): simplify it, do not raise the entry")
        elif now < listed:
            out.append(f"{key}: now {now} (listed {listed}): lower the entry to {now}")
    return out


def test_no_function_is_more_complex_than_the_limit() -> None:
    bad = over_limit(measured(), ALLOW)
    assert bad == [], (f"functions with cyclomatic complexity over {MAX_COMPLEXITY} "
                       f"(split them into named steps or a table): {bad}")


def test_the_allow_list_only_shrinks() -> None:
    assert stale_entries(measured(), ALLOW) == []


def _branches(n: int, name: str = "f") -> str:
    return f"def {name}(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n" for i in range(n)) + "    return -1\n"


def test_the_measure_counts_branches() -> None:
    """15 `if`s make 16; a method is named by its class; `and`/`or` and a loop's `else` do
    not count; a nested function counts 1 + its branches in its holder, a `try` with one
    `except` counts 2."""
    src = (_branches(14, "ok") + _branches(15, "big")
           + "class C:\n    def m(self, x):\n        for i in x:\n            if i and x or i:\n"
             "                return i\n        else:\n            return 0\n"
           + "def outer(x):\n    def inner(y):\n        if y:\n            return 1\n        return 2\n"
             "    try:\n        return inner(x)\n    except ValueError:\n        return 3\n")
    got = complexities(src, "m.py")
    assert got == {"m.py:ok": 15, "m.py:big": 16, "m.py:C.m": 3, "m.py:outer": 5}
    assert over_limit(got, {}) == ["m.py:big (16)"]
    assert over_limit(got, {"m.py:big": 16}) == []


def test_a_stale_entry_is_reported() -> None:
    found = {"a.py:f": 18, "a.py:g": 12}
    assert stale_entries(found, {"a.py:f": 18}) == []
    assert stale_entries(found, {"a.py:f": 17}) == [
        "a.py:f: got more complex (17 -> 18): simplify it, do not raise the entry"]
    assert stale_entries(found, {"a.py:f": 20}) == ["a.py:f: now 18 (listed 20): lower the entry to 18"]
    assert stale_entries(found, {"a.py:g": 16}) == ["a.py:g: now 12, within the limit: delete the entry"]
    assert stale_entries(found, {"a.py:h": 16}) == ["a.py:h: no such function any more: delete the entry"]
