"""The cpu backend's first run in a process (issue 61): what it finds once per kernel is
found without a pass over every copy a broadcast writes, and without numpy's one-off
imports."""

from __future__ import annotations

import ast
import ctypes
import mmap
import sys
from pathlib import Path

import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions, arena, compact, compact_moves, keys, layout, moves, moves_strided
from backends.cpu.distinct import distinct_values
from backends.cpu.moves_strided import StridedForm
from benchmarks.drawn_kernels import pinned
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
    for op in _dmas(example("gemm_i8", "gemm_i8_kernel"))[:1]:
        moves_strided.FORMS.clear()
        moves._PLANS.clear()        # a plan an earlier run kept (fast_moves=False) is read for the form instead
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


def test_a_form_writing_evenly_spaced_rows_is_cut_to_those_rows() -> None:
    writes = StridedForm((3, 8), (64, 1), (32, 4), 16 + 2, 0, False)  # rows 1, 5, 9 of rows of 16, cells 2 ... 9
    cut = compact.write_in_rows(writes, 16, 1, 4, 3)
    assert (cut.p0, cut.pstrides, cut.full) == (2, (16, 1), False)
    assert compact.write_in_rows(writes, 16, 1, 4, 2) is None       # row 9 is not among the rows kept
    assert compact.write_in_rows(writes, 16, 0, 4, 3) is None       # rows 0, 4, 8: row 1 is not one
    assert compact.write_in_rows(StridedForm((3, 12), (64, 1), (32, 4), 16 + 6, 0, False), 16, 1, 4, 3) is None  # past a row
    assert compact.write_in_rows(writes, 16, 1, 1, 9).p0 == 2       # consecutive rows: shifted only


def test_a_dma_into_a_fraction_of_the_slices_makes_its_live_rows_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The DMAs of a kernel on 1/64 of the slices give their live rows (a `Compact`), not a
    buffer of every slice; the result is numpy's, exactly."""
    d = pinned("quarter_batched", "out[b,n,m] = a[b,m,k] * w[b,n,k]", "i8:i32", {"b": 16, "k": 128, "m": 64, "n": 32},
               {"placement": "2x2 of 16x32, on 1/64 of the slices, a and w by switch", "trf": "a", "packet": 64,
                "pieces": 1}, "batched")
    made = []
    real = compact_moves._into_live_rows
    monkeypatch.setattr(compact_moves, "_into_live_rows", lambda *a: made.append(real(*a)) or made[-1])
    arrays = d.inputs(np.random.default_rng(8))
    want = d.oracle(*arrays)
    CpuBackend(CpuOptions(threads=1)).run(d.kernel, tuple(arrays))
    np.testing.assert_array_equal(arrays[-1], want)
    assert made and all(v is not None and 1 < len(v.base) < layout.n_rows(v.t) for v in made), made


def test_sparse_zeros_keep_only_the_written_pages_resident() -> None:
    """numpy advises huge pages for 4 MiB and more: rows of 32 KiB written every 128 KiB
    made every byte of an `np.zeros` buffer resident (2 MiB pages), 4x what was written."""
    def resident() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096
    before = resident()
    out = arena.sparse_zeros((512, 16384), np.dtype(np.uint16))  # 16 MiB
    out[:256:4] = 1                                               # 64 rows of 32 KiB: 2 MiB
    grown = resident() - before
    assert grown < 3 << 20, grown >> 20


def _resident_pages(a: np.ndarray) -> int:
    """How many whole pages of `a`'s memory are resident (`mincore`)."""
    page = mmap.PAGESIZE
    start = a.__array_interface__["data"][0]
    lo, hi = -(-start // page) * page, (start + a.nbytes) // page * page
    flags = (ctypes.c_ubyte * ((hi - lo) // page))()
    mincore = ctypes.CDLL(None, use_errno=True).mincore
    mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    assert mincore(lo, hi - lo, flags) == 0
    return sum(f & 1 for f in flags)


def test_sparse_zeros_on_memory_the_heap_used_before_make_only_the_written_pages_resident() -> None:
    """Below malloc's mmap threshold (raised by a large block freed) `np.zeros` takes heap
    memory used before and `calloc` clears all of it: drawn_s2_6's 1 MiB DM tensor of 8 live
    rows, made whole, was resident in full (issue 61, first-run memory)."""
    big = np.ones(8 << 20, np.uint8)
    del big                                  # a freed mmapped block: the threshold goes up to its size
    used = np.ones(1 << 20, np.uint8)
    del used                                 # heap memory, written, free again
    out = arena.sparse_zeros((256, 4096), np.dtype(np.uint8))  # 1 MiB
    out[::64] = 1                            # 4 rows of one page each
    assert _resident_pages(out) <= 8, _resident_pages(out)
    assert np.count_nonzero(out) == 4 * 4096 and not out[1:64].any()


def _cells_of(form: StridedForm | None) -> list[tuple[int, int]] | None:
    """Every (output position, input offset) pair a form names."""
    if form is None:
        return None
    grids = np.meshgrid(*[np.arange(e) for e in form.extents], indexing="ij")
    pos = form.p0 + sum(g * p for g, p in zip(grids, form.pstrides))
    off = form.v0 + sum(g * v for g, v in zip(grids, form.vstrides))
    return sorted(zip(np.asarray(pos).reshape(-1).tolist(), np.asarray(off).reshape(-1).tolist()))


def test_a_form_found_on_one_copy_names_every_cell_of_every_copy() -> None:
    """Random live cells, some digits adding to no key (broadcasts), read through an affine
    or a shuffled key table: the form names exactly the cells' (position, source) pairs,
    or is None exactly when the full check finds none."""
    rng = np.random.default_rng(0)
    spread = 0
    for _ in range(60):
        digits, weight, radix = [], 1, 1
        for n in [int(rng.choice([1, 2, 3, 4, 6])) for _ in range(rng.integers(1, 5))]:
            d = np.arange(n, dtype=np.int64)
            broadcast = rng.random() < 0.4
            digits.append((d * weight, np.zeros(n, np.int64) if broadcast else d * radix))
            spread += broadcast and n > 1
            radix *= 1 if broadcast else n
            weight *= n
        cells = keys._grid(tuple(reversed(digits)), int(rng.choice([1, 4, 1 << 14])))
        table = rng.permutation(radix) if rng.random() < 0.2 else np.arange(radix) * int(rng.choice([1, 2]))
        shape, strides = (1, 2 * radix), (2 * radix, 1)
        got = moves_strided.strided_form_cells(cells, table.__getitem__, cells.n, shape, strides)
        pos, key = cells.at(np.arange(cells.n))
        truth = sorted(zip(pos.tolist(), table[key].tolist()))
        full = moves_strided._form(moves_strided._cell_columns(cells, table.__getitem__, shape, strides),
                                   lambda p0: int(table[cells.at(np.zeros(1, np.int64))[1]][0]), True)
        assert (got is None) == (full is None)
        assert got is None or _cells_of(got) == truth
    assert spread > 15
