"""The integer contraction over the distinct pairs of its operands' rows
(visa/interp/fast/row_pairs.py): both operands broadcast by the Switch Engine, two batch
elements side by side, so the rows' pairs are two grids of (row block, column block); each
pair is multiplied once, the held switch streams are never written out, and the result is
the numpy oracle's, exactly. A `k`-first kernel's turned weights make such pairs too; their
sums go into the rows without a gather when the rows run through the grid in a transposed
order (`row_pairs.grid_axes`, checked once per pairs)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.drawn_kernels import pinned
from npu_opt.compile_api import compile_kernel
from visa import parse_visa
from visa.interp import contract, execute_inout, operands
from visa.interp.fast import lazy, row_pairs
from visa.interp.fast.repeated import Repeated

_DRAWN = pinned("row_pairs", "out[b,m,n] = a[b,m,k] * w[b,n,k]", "i8:i32", dict(b=2, m=16, n=32, k=64),
                dict(placement="4x2 of 8x16, 2 batch elements side by side, on 1/16 of the slices, a and w by switch",
                     trf="w", packet=64, pieces=1), "batched")
# `w[k,n]` turned on the device, stationary (16 live slices, 2 distinct blocks of `w`)
_TURNED = pinned("row_pairs_turned", "out[n,m] = a[m,k] * w[k,n]", "i8:i32", dict(m=64, n=64, k=64),
                 dict(placement="2x8 of 32x8, on 1/16 of the slices", trf="w", packet=64), "gemm", transpose="device")


def test_the_rows_pairs_are_grids_part_by_part() -> None:
    # 2 parts: stream classes {0, 1} x weight classes {10, 11, 12}, {20, 21} x {30, 31, 32}
    hs = np.array([0, 0, 0, 1, 1, 1, 20, 20, 20, 21, 21, 21])
    hw = np.array([10, 11, 12, 10, 11, 12, 30, 31, 32, 30, 31, 32])
    s_rows, w_rows, place = row_pairs.pair_grid(hs[::-1], hw[::-1])   # rows in any order
    assert s_rows.tolist() == [[0, 1], [20, 21]] and w_rows.tolist() == [[10, 11, 12], [30, 31, 32]]
    part, rest = np.divmod(place, 6)
    si, wi = np.divmod(rest, 3)
    assert np.array_equal(s_rows[part, si], hs[::-1]) and np.array_equal(w_rows[part, wi], hw[::-1])


def test_parts_of_other_shapes_or_sparse_pairs_are_refused() -> None:
    # parts of 2 x 2 and 1 x 2 pairs
    assert row_pairs.pair_grid(np.array([0, 0, 1, 1, 5, 5]), np.array([0, 1, 0, 1, 7, 8])) is None
    # one part of 4 x 4 pairs (a path 0-0-1-1-2-2-3-3), 7 rows use them: over half unused
    assert row_pairs.pair_grid(np.array([0, 0, 1, 1, 2, 2, 3]), np.array([0, 1, 1, 2, 2, 3, 3])) is None


def test_each_distinct_pair_is_multiplied_once_with_the_oracles_sums(monkeypatch: pytest.MonkeyPatch) -> None:
    found, written = [], []
    real_pairs, real_write = contract._pairs, Repeated.materialize
    monkeypatch.setattr(contract, "_pairs", lambda *a: found.append(real_pairs(*a)) or found[-1])
    monkeypatch.setattr(Repeated, "materialize", lambda self: written.append(self) or real_write(self))
    arrays = _DRAWN.inputs(np.random.default_rng(5))
    results, finals = execute_inout(parse_visa(compile_kernel(_DRAWN.kernel).text), [x.copy() for x in arrays])
    assert np.array_equal(np.asarray((results + finals)[-1]), _DRAWN.oracle(*arrays))
    assert found and all(f is not None for f in found)
    s_rows, w_rows, place = found[0]
    assert s_rows.size * w_rows.shape[1] == place.size   # every pair a row uses, each once
    assert not written


def test_the_rows_order_through_the_grid_is_found_as_a_transpose_of_it() -> None:
    # 1 part, stream classes {0, 1, 2}, weight classes {5, 6}: rows weight class first (the
    # turned `w` of a `k`-first kernel) run through the grid transposed (part, weight, stream)
    hs, hw = np.array([0, 1, 2, 0, 1, 2]), np.array([5, 5, 5, 6, 6, 6])
    assert row_pairs.grid_axes(row_pairs.pair_grid(hs, hw)) == (0, 2, 1)
    assert row_pairs.grid_axes(row_pairs.pair_grid(hw - 5, hs)) == (0, 1, 2)
    # rows in no order of the grid, or a grid some pairs of which no row uses: None
    assert row_pairs.grid_axes(row_pairs.pair_grid(hs[[1, 0, 2, 3, 4, 5]], hw)) is None
    assert row_pairs.grid_axes(row_pairs.pair_grid(np.array([0, 1, 0]), np.array([5, 5, 6]))) is None


def test_turned_weights_pairs_are_placed_without_a_gather_and_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`drawn_s1_4`'s form, small: `w[k,n]` turned on the device and stationary, its rows in
    the order (weight class, stream class). The rows' order is checked once over two runs
    (a contraction meets the same pairs every run), the matmul's sums are copied into the
    rows as they are (no gather of them by `place`), and the natural layout's index tables
    are built once per plan. Exact against numpy both runs."""
    monkeypatch.setattr(lazy, "LAZY_BYTES", 0)   # a small kernel's broadcast held lazily too
    monkeypatch.setattr(row_pairs, "_AXES", {})   # nothing checked by an earlier test's run
    checked, placed, patterns = [], [], []
    real_axes, real_placed, real_pattern = row_pairs._axes, contract._placed, operands._pattern
    monkeypatch.setattr(row_pairs, "_axes", lambda *a: checked.append(real_axes(*a)) or checked[-1])
    monkeypatch.setattr(contract, "_placed",
                        lambda acc, y, p: placed.append((y, real_placed(acc, y, p))) or placed[-1][1])
    monkeypatch.setattr(operands, "_pattern", lambda *a: patterns.append(1) or real_pattern(*a))
    arrays = _TURNED.inputs(np.random.default_rng(7))
    artifact = parse_visa(compile_kernel(_TURNED.kernel).text)
    runs = []
    for _ in range(2):
        results, finals = execute_inout(artifact, [x.copy() for x in arrays])
        assert np.array_equal(np.asarray((results + finals)[-1]), _TURNED.oracle(*arrays))
        runs.append(len(patterns))
    assert checked == [(0, 2, 1)]         # once, over both runs
    assert len(placed) == 2 and all(y is got[1] for y, got in placed)   # the sums as the matmul left them
    assert runs[0] > 0 and runs[1] == runs[0]   # no index table built again in the second run


def test_an_integer_contraction_reads_a_lazy_broadcasts_distinct_rows_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broadcast held lazily (`visa.interp.fast.lazy`) fed to an integer contraction: the
    feed stores each distinct row once (a sparse `Repeated`), not one copy per slice, and
    the distinct pairs read only those rows; nothing writes the copies out. Exact against
    numpy."""
    monkeypatch.setattr(lazy, "LAZY_BYTES", 0)   # a small kernel's broadcast held lazily too
    streams, written = [], []
    real_run, real_write = contract.run_contraction, Repeated.materialize

    def run(outer, reduce, time, stream, *rest):
        streams.append(stream)
        return real_run(outer, reduce, time, stream, *rest)

    monkeypatch.setattr(contract, "run_contraction", run)
    monkeypatch.setattr(Repeated, "materialize", lambda self: written.append(self) or real_write(self))
    arrays = _TURNED.inputs(np.random.default_rng(11))
    results, finals = execute_inout(parse_visa(compile_kernel(_TURNED.kernel).text), [x.copy() for x in arrays])
    assert np.array_equal(np.asarray((results + finals)[-1]), _TURNED.oracle(*arrays))
    assert len(streams) == 1 and isinstance(streams[0], Repeated)
    stream = streams[0]
    stored = stream.stored_rows()
    assert stored is not None and np.unique(stored).size < stream.shape[0]   # the distinct rows only
    assert not written
