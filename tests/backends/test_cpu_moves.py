"""The logical-index move of docs/machine/index.md on small level lists (backends/cpu/moves.py):
permutation, broadcast, padding and joint decoding of a ragged factor split over levels."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu.moves import logical_pad, move_plan
from ir.mapping import m

AX = {"A": 4, "B": 3, "C": 19, "D": 5}


def _plan(src: tuple[str, ...], dst: tuple[str, ...]):
    return move_plan(tuple(m(s, axes=AX) for s in src), tuple(m(d, axes=AX) for d in dst))


def test_transpose() -> None:
    plan = _plan(("A, B",), ("B, A",))
    src = np.arange(12).reshape(4, 3)
    np.testing.assert_array_equal(src.reshape(-1)[plan.index].reshape(3, 4), src.T)
    assert plan.live is None


def test_broadcast_repeats_along_missing_axes() -> None:
    plan = _plan(("A",), ("B", "A"))  # two levels: B is not in frag(input)
    np.testing.assert_array_equal(plan.index, np.tile(np.arange(4), 3))


def test_padding_is_not_live() -> None:
    plan = _plan(("D",), ("D # 8",))
    np.testing.assert_array_equal(plan.live, [True] * 5 + [False] * 3)
    np.testing.assert_array_equal(plan.index[:5], np.arange(5))


def test_split_levels_read_the_same_cells() -> None:
    plan = _plan(("A", "B"), ("A / 2", "B, A % 2"))
    src = np.arange(12).reshape(4, 3)
    out = src.reshape(-1)[plan.index].reshape(2, 3, 2)
    np.testing.assert_array_equal(out, src.reshape(2, 2, 3).transpose(0, 2, 1))


def test_ragged_factor_split_over_levels_decodes_jointly() -> None:
    """`C # 24 / 4` and `C # 24 % 4` (|C| = 19) on two levels: position 19 is padding
    (docs/mapping-language.md), not the coordinate C = 19."""
    levels = (m("C # 24 / 4", axes=AX), m("C # 24 % 4", axes=AX))
    np.testing.assert_array_equal(logical_pad(levels), [False] * 19 + [True] * 5)
    plan = move_plan((m("C", axes=AX),), levels)
    np.testing.assert_array_equal(plan.index[:19], np.arange(19))


def test_a_resized_digit_under_a_coarser_digit_keys_its_own_values() -> None:
    """`A / 2, A % 2 = 1` (the first value of each pair): the resized digit A[1:2) and the
    digit A[2:4) leave a gap in A's key digits; each destination cell still reads the source
    cell of its own A (A = 0 and A = 2), in either direction and beside another axis."""
    plan = _plan(("A, B",), ("A / 2, A % 2 = 1, B",))
    src = np.arange(12).reshape(4, 3)
    np.testing.assert_array_equal(src.reshape(-1)[plan.index].reshape(2, 3), src[::2])
    back = _plan(("A / 2, A % 2 = 1, B",), ("B, A / 2, A % 2 = 1",))
    np.testing.assert_array_equal(np.arange(6).reshape(2, 3).reshape(-1)[back.index].reshape(3, 2),
                                  np.arange(6).reshape(2, 3).T)


def test_a_three_of_four_digit_moves_onto_a_trimmed_packet() -> None:
    """The book's read_slicing time `E / 4, E % 4 = 3` (|E| = 16: the first 3 of each 4) with a
    packet `G # 32` trimmed to `G`: every live cell keeps its value (it was an IndexError, a
    key past the key space: the digits E[1:3) and E[4:16) leave a gap)."""
    ax = {"E": 16, "F": 8, "G": 8}
    src = tuple(m(s, axes=ax) for s in ("E / 4, E % 4 = 3, F", "G # 32"))
    dst = tuple(m(s, axes=ax) for s in ("E / 4, E % 4 = 3, F", "G"))
    plan = move_plan(src, dst)
    cells = np.arange(12 * 8 * 32).reshape(12 * 8, 32)[:, :8]
    np.testing.assert_array_equal(np.arange(12 * 8 * 32)[plan.index].reshape(12 * 8, 8), cells)


@pytest.mark.parametrize("n_rows, live", [(6, (0, 1, 3)), (7, (1, 2, 3)), (9, (2, 3, 3)), (4, (3, 1, 1))])
def test_a_strided_copy_over_some_rows_zeroes_every_other_row(n_rows, live):
    """`apply_form` writes the live rows whole and zeroes only the others (no zeroed
    buffer first): a transposition of 2 x 3 cells, against numpy."""
    from backends.cpu.moves_strided import StridedForm, apply_form

    r0, step, count = live
    picked = np.zeros(n_rows, bool)
    picked[r0:r0 + step * (count - 1) + 1:step] = True
    rows = np.random.default_rng(n_rows).integers(1, 100, (n_rows, 6)).astype(np.int16)
    rows[~picked] = 0  # padding rows of an input hold zero
    transposed = StridedForm((2, 3), (3, 1), (2, 4), 0, 0, True)
    got = apply_form(rows, transposed, 6, live)
    want = np.zeros_like(rows)
    want[picked] = rows[picked].reshape(-1, 3, 2).transpose(0, 2, 1).reshape(-1, 6)
    assert np.array_equal(got, want)
