"""`affine_grid.grid_of`: the affine grid a computed index lies on, every cell checked
block by block, against the grid written out whole with numpy."""

from __future__ import annotations

import numpy as np

from backends.cpu.affine_grid import grid_of


def _reader(table: np.ndarray, dead: set[int] = frozenset()):
    def read(k: np.ndarray) -> np.ndarray | None:
        return None if dead & set(k.tolist()) else table[k]
    return read


def test_a_grid_is_found_and_every_cell_is_checked_across_blocks() -> None:
    extents = (3, 1, 5, 4)
    want = (11, (40, 0, 7, 2))
    grid = want[0] + sum(np.arange(n).reshape([-1 if a == b else 1 for b in range(4)]) * st
                         for a, (n, st) in enumerate(zip(extents, want[1])))
    table = grid.reshape(-1).astype(np.int64)
    for block in (1, 4, 7, 1 << 12):
        assert grid_of(_reader(table), extents, block) == want
        for cell in (0, 5, table.size - 1):  # a cell off the grid, the first one past a corner included
            bent = table.copy()
            bent[cell] += 1
            assert grid_of(_reader(bent), extents, block) is None, (block, cell)
        assert grid_of(_reader(table, {table.size - 2}), extents, block) is None  # a cell that reads nothing


def test_no_cells_is_no_grid() -> None:
    assert grid_of(_reader(np.zeros(0, np.int64)), (0, 3)) is None
