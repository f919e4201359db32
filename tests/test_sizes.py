"""Size limits of the source packages: modules under 400 lines, functions under 60.

A module holds one thing and is named for it; a function does one step. Both limits
count physical lines (a function from its `def` line to its last line, decorators
excluded). An entry of an allow-list below must say why it stays; the test also fails
when an entry no longer needs its exemption, so the lists only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests import source_tree

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ir", "tu_ops", "visa", "backends", "npu_opt", "synth", "driver")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60

# "path" -> why the module may stay over MAX_MODULE_LINES.
MODULE_ALLOW: dict[str, str] = {}

# "path:qualified.name" -> why the function may stay over MAX_FUNCTION_LINES.
FUNCTION_ALLOW: dict[str, str] = {}


def _sources() -> list[Path]:
    files = [p for pkg in PACKAGES for p in source_tree.paths(pkg)]
    assert len(files) > 100, f"found only {len(files)} source files under {PACKAGES}"
    return files


def _functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function, nested ones and methods included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
            yield from _functions(node, prefix + node.name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")
        else:
            yield from _functions(node, prefix)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_modules_stay_under_the_line_limit() -> None:
    long = {}
    for path in _sources():
        n = len(source_tree.text(path).splitlines())
        if n > MAX_MODULE_LINES:
            long[_rel(path)] = n
    assert sorted(set(long) - set(MODULE_ALLOW)) == [], f"modules over {MAX_MODULE_LINES} lines: {long}"
    assert sorted(set(MODULE_ALLOW) - set(long)) == [], "allow-list entries that are no longer needed"


def test_functions_stay_under_the_line_limit() -> None:
    long = {}
    for path in _sources():
        for name, node in _functions(source_tree.tree(path)):
            n = node.end_lineno - node.lineno + 1
            if n > MAX_FUNCTION_LINES:
                long[f"{_rel(path)}:{name}"] = n
    assert sorted(set(long) - set(FUNCTION_ALLOW)) == [], f"functions over {MAX_FUNCTION_LINES} lines: {long}"
    assert sorted(set(FUNCTION_ALLOW) - set(long)) == [], "allow-list entries that are no longer needed"


def test_the_limits_see_a_long_function() -> None:
    """The counter itself: a 61-line function is long, a 60-line one is not."""
    src = "class C:\n    def f(self):\n" + "        x = 1\n" * 59 + "\ndef g():\n" + "    y = 2\n" * 59
    got = {name: node.end_lineno - node.lineno + 1 for name, node in _functions(ast.parse(src))}
    assert got == {"C.f": 60, "g": 60}
    src2 = "def h():\n    def inner():\n" + "        z = 3\n" * 60
    got2 = {name: node.end_lineno - node.lineno + 1 for name, node in _functions(ast.parse(src2))}
    assert got2 == {"h": 62, "h.inner": 61}
