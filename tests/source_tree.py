"""The source packages' modules, read and parsed once per test process.

Several tests scan every module of the tree (sizes, complexity, layers, function-level
imports, articles, typed boundaries, codes, ...); each parse of the ~500 files costs ~2.5
CPU-s, and each test used to pay its own. `tree(path)` parses a module of the packages once
and hands every later caller the same `ast.Module`: callers only read it (ast.walk,
visitors), they never change a node. A file outside the packages (a test's own probe in a
temporary directory) is parsed afresh on every call.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("npu_opt", "synth", "driver", "ir", "tu_ops", "visa", "backends")
"""The seven source packages, in the order the scans list them."""


@functools.cache
def paths(package: str) -> tuple[Path, ...]:
    """Every module of `package`, sorted."""
    return tuple(sorted((ROOT / package).rglob("*.py")))


def text(path: Path) -> str:
    """The module's source (cached for the packages' modules)."""
    return _cached(path)[0] if _in_packages(path) else path.read_text(encoding="utf-8")


def tree(path: Path) -> ast.Module:
    """The module's syntax tree, shared by every caller for the packages' modules: read it,
    never change it."""
    if _in_packages(path):
        return _cached(path)[1]
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _in_packages(path: Path) -> bool:
    return path.is_relative_to(ROOT) and path.relative_to(ROOT).parts[0] in PACKAGES


@functools.cache
def _cached(path: Path) -> tuple[str, ast.Module]:
    source = path.read_text(encoding="utf-8")
    return source, ast.parse(source, filename=str(path))
