"""The cpu backend's first run in a process (issue 61): what it finds once per kernel is
found without a pass over every copy a broadcast writes, and without numpy's one-off
imports."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

from backends.cpu import layout, moves, moves_strided
from backends.cpu.distinct import distinct_values
from ir.ops import ToDm
from tests.backends.examples import example

CPU = Path(__file__).resolve().parents[2] / "backends" / "cpu"


def _dmas(kernel):
    return [op for op in kernel.trace("rngd").kernel.ops if isinstance(op, ToDm)]


def test_a_broadcast_dma_checks_one_copy_of_its_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    """gemm_i8's operands are each copied to 16 slices (`M / 32, N / 32`): the DMA's strided
    form is checked on one copy's cells and the copy digit added with input stride 0; the
    DMA it gives equals the index gather's, bit for bit."""
    checked: list[int] = []
    forms: list[moves_strided.StridedForm] = []
    affine, form_of = moves_strided._affine, moves_strided._form
    monkeypatch.setattr(moves_strided, "_affine",
                        lambda cols, lo, hi, dims: checked.append(hi - lo) or affine(cols, lo, hi, dims))
    monkeypatch.setattr(moves_strided, "_form", lambda *a: forms.append(form_of(*a)) or forms[-1])
    rng = np.random.default_rng(5)
    for op in _dmas(example("gemm_i8", "gemm_i8_kernel")):
        moves_strided.FORMS.clear()
        checked.clear()
        src = rng.integers(-128, 128, layout.shape_of(op.src.type), dtype=np.int8)
        got = moves.move_global(src, op.src.type, op.result.type, copies=False)
        assert forms[-1] is not None and 0 in forms[-1].vstrides, forms    # a broadcast digit, input stride 0
        copy = src.size                                                     # one copy's cells
        assert got.size >= 16 * copy and sum(checked) <= 4 * copy, (sum(checked), copy)  # not 16 copies' cells
        np.testing.assert_array_equal(got, moves.move_global(src, op.src.type, op.result.type, fast=False))


def test_distinct_values_are_np_unique() -> None:
    rng = np.random.default_rng(3)
    for a in (np.zeros(0, np.int64), np.array([7]), rng.integers(-5, 5, 100), rng.integers(0, 1 << 40, (30, 7))):
        np.testing.assert_array_equal(distinct_values(a), np.unique(a))


def _plain_set_calls(tree: ast.AST) -> list[int]:
    """Lines of `np.unique` calls with no `return_*` argument and of `np.union1d`,
    `np.intersect1d`, `np.setdiff1d`, `np.setxor1d` (numpy 2 imports `numpy.ma` at the first)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            plain = name == "unique" and not any((k.arg or "").startswith("return_") or k.arg == "axis"
                                                 for k in node.keywords)
            if plain or name in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
                lines.append(node.lineno)
    return lines


def test_the_backend_calls_no_set_routine_that_imports_numpy_ma() -> None:
    """numpy 2's `np.unique(a)` asks `np.ma.is_masked(a)`: the process's first such call
    imports `numpy.ma`, ~30 ms of a 100 ms first run."""
    found = {p.name: lines for p in sorted(CPU.glob("*.py")) if (lines := _plain_set_calls(ast.parse(p.read_text())))}
    assert not found, found


def test_np_unique_imports_numpy_ma(monkeypatch: pytest.MonkeyPatch) -> None:
    """Why the check above exists: with `numpy.ma` not yet imported, `np.unique(a)` imports
    it and `distinct_values(a)` does not (if numpy stops doing so, the check may go)."""
    for name in [n for n in sys.modules if n == "numpy.ma" or n.startswith("numpy.ma.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(np, "ma", raising=False)
    distinct_values(np.arange(5))
    assert "numpy.ma" not in sys.modules
    np.unique(np.arange(5))
    assert "numpy.ma" in sys.modules
