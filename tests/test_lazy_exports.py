"""The lazily imported public names of `npu_opt`, `tu_ops` and `visa` (ir/lazy_exports.py).

Each package lists its names as real imports twice: under `if TYPE_CHECKING:` for type
checkers, and in the loaders of its `_EXPORTS` for run time. These tests hold the loaders
to Python's own parse of the block (`ast`), check that every listed name resolves to the
object its module defines, that `__all__` promises nothing the block does not list, and
that a first use imports only the name's module.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import types
from pathlib import Path

import pytest

from ir.lazy_exports import LazyExports

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("npu_opt", "tu_ops", "visa")
# Public names a package computes or imports itself rather than listing under TYPE_CHECKING.
COMPUTED = {"npu_opt": {"testing"}, "tu_ops": {"OP_CLASSES"}, "visa": set()}


def _parsed_table(package: str) -> dict[str, str]:
    """The TYPE_CHECKING block of `package/__init__.py` as Python parses it."""
    tree = ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8"))
    table = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.level == 0, ast.dump(stmt)
                for alias in stmt.names:
                    assert alias.asname is None
                    table[alias.name] = stmt.module
    return table


@pytest.mark.parametrize("package", PACKAGES)
def test_the_runtime_table_is_the_type_checking_block(package):
    loaders = importlib.import_module(package)._EXPORTS.loaders
    parsed = _parsed_table(package)
    assert len(parsed) >= 10
    assert sorted(loaders) == sorted(parsed)
    for name, module in parsed.items():  # each loader imports from the one module the block names
        assert {n: m for n, m in parsed.items() if n in loaders[name].__code__.co_varnames} == {
            n: module for n in loaders[name].__code__.co_varnames}, name


@pytest.mark.parametrize("package", PACKAGES)
def test_every_listed_name_is_its_modules_object(package):
    pkg = importlib.import_module(package)
    for name, module in _parsed_table(package).items():
        assert getattr(pkg, name) is getattr(importlib.import_module(module), name), name


@pytest.mark.parametrize("package", PACKAGES)
def test_all_promises_only_listed_names(package):
    pkg = importlib.import_module(package)
    assert sorted(set(pkg.__all__) - set(pkg._EXPORTS.loaders) - COMPUTED[package]) == []
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
        pkg.NoSuchName  # noqa: B018


def test_npu_opt_run_and_device_stay_functions_after_their_modules_are_imported():
    probe = ("import npu_opt, npu_opt.run, npu_opt.device, types; "
             "print(isinstance(npu_opt.run, types.FunctionType), type(npu_opt.device).__name__)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "function"]


def test_a_first_use_imports_only_the_names_module():
    probe = ("import sys, tu_ops; tu_ops.get_target; "
             "print(' '.join(sorted(m for m in sys.modules if m.startswith('tu_ops'))))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert "tu_ops.target" in loaded
    assert not loaded & {"tu_ops.base", "tu_ops.contract", "tu_ops.feed", "tu_ops.vector", "tu_ops.lower"}


def test_a_name_two_loaders_bring_is_refused(monkeypatch):
    exports = LazyExports()

    @exports.loader
    def _first():
        from os.path import join
        return locals()

    def _second():
        from posixpath import join
        return locals()

    with pytest.raises(ValueError, match="join is loaded by both _first and _second"):
        exports.loader(_second)
    monkeypatch.setitem(sys.modules, "lazyfake", types.ModuleType("lazyfake"))
    assert exports.get("lazyfake", "join") is sys.modules["lazyfake"].join is __import__("os").path.join
