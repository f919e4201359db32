"""`inter_slice_reduce` lays each (chip, cluster) ring out over the input Slice
(`visa.interp.switch._ring`): when a group's rows are every slice of the ring in order the
ring is those rows themselves (no zeroed copy), otherwise a copy with zeros in the slices
the program does not run. Both give the rows at their slices and zeros elsewhere."""

from __future__ import annotations

import numpy as np

from visa.interp.switch import _ring


def _values(rows: int) -> np.ndarray:
    return np.arange(rows * 3 * 2, dtype=np.uint32).reshape(rows, 3, 2) + 1


def test_every_slice_in_order_is_a_view_of_the_rows():
    values = _values(12)   # two groups of 6 rows: rows 6..11 are the second ring's slices 0..5
    group = (np.arange(6, 12), np.arange(6), True)
    ring = _ring(values, group, 6)
    assert np.shares_memory(ring, values)
    assert np.array_equal(ring, values[6:12])


def test_part_of_the_slices_is_a_copy_with_zeros_between():
    values = _values(4)
    group = (np.arange(4), np.array([1, 2, 5, 7]), False)
    ring = _ring(values, group, 8)
    assert not np.shares_memory(ring, values)
    want = np.zeros((8, 3, 2), np.uint32)
    want[[1, 2, 5, 7]] = values
    assert np.array_equal(ring, want)


def test_consecutive_slices_not_from_zero_are_a_copy():
    values = _values(3)
    ring = _ring(values, (np.arange(3), np.array([1, 2, 3]), True), 4)
    assert np.array_equal(ring[0], np.zeros((3, 2), np.uint32)) and np.array_equal(ring[1:], values)


def test_a_ring_without_rows_is_zeros():
    assert not _ring(_values(2), None, 5).any()
