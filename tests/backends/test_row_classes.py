"""The row classes a DMA records (`backends.cpu.row_classes`) are sound: on every DMA of
every example, rows of one class hold the same bytes, and the broadcast DMAs of the GEMM
examples do record their copies (so the contraction's row split needs no data)."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu import layout, moves, row_classes
from ir.ops import ToDm, ToHbm
from tests.kernel_files import example, example_names


def _dmas(name):
    traced = example(name).trace("rngd").kernel
    return [op for op in traced.ops if isinstance(op, (ToDm, ToHbm))]


def _filled(t, rng):
    buf = np.zeros(layout.shape_of(t), layout.storage_dtype(t.dtype))
    rows = layout.rows_view(buf, t)
    rows[...] = rng.integers(1, 100, rows.shape).astype(buf.dtype)
    return buf


@pytest.mark.parametrize("name", example_names())
def test_rows_of_one_class_hold_the_same_bytes(name):
    rng = np.random.default_rng(2)
    for op in _dmas(name):
        out = moves.move_global(_filled(op.src.type, rng), op.src.type, op.result.type)
        n_rows = layout.n_rows(op.result.type)
        rows = out.reshape(n_rows, -1)
        classes = row_classes.classes_of(rows)
        if classes is None:
            continue
        assert classes.shape == (n_rows,)
        for c in np.unique(classes):
            members = rows[classes == c]
            assert (members == members[:1]).all(), (name, op.text(), int(c))
        for r in np.flatnonzero(classes == -1):
            assert not rows[r].any()


def test_the_gemm_broadcasts_are_recorded():
    rng = np.random.default_rng(3)
    found = 0
    for op in _dmas("gemm_i8_kernel"):
        if not isinstance(op, ToDm):
            continue
        out = moves.move_global(_filled(op.src.type, rng), op.src.type, op.result.type)
        classes = row_classes.classes_of(out.reshape(layout.n_rows(op.result.type), -1))
        assert classes is not None
        live = classes[classes >= 0]
        assert 1 < np.unique(live).size < live.size  # copies, and more than one distinct row
        found += 1
    assert found == 2


def test_a_view_or_a_foreign_array_has_no_classes():
    assert row_classes.classes_of(np.zeros((4, 8), np.int8)) is None
