"""The cpu backend on a kernel whose level mappings pad an axis inside the kernel and split it
over two levels: the keys of its moves, by factors and by the mapping's cells, and the results
equal the VISA interpreter's and numpy's."""

from __future__ import annotations

import numpy as np

from backends import get_backend
from backends.cpu import keys
from ir.mapping import m
from ir.mapping import ops as mops
from ir.mapping.cells import Index
from ir.mapping.nodes import pair_all
from tests.backends import kernels_padded_tile

AX = {"M": 96, "N": 96, "K": 64}


def test_a_padded_tile_gemm_equals_numpy_on_cpu_and_visa() -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, (96, 64), dtype=np.int8)
    w = rng.integers(-128, 128, (96, 64), dtype=np.int8)
    want = (a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32)
    for backend in ("cpu", "visa"):
        out = np.zeros((96, 96), np.int32)
        get_backend(backend).run(kernels_padded_tile.padded_tile_gemm, (a, w, out))
        assert np.array_equal(out, want), backend


def test_keys_of_padded_levels_by_factors_and_by_cells_agree_with_the_cells() -> None:
    # these levels had no factor form until the structural factoring took compound chains apart
    # (rssblock); both the factor path and the cells path the backend falls back to must still
    # give every position its cell's key
    levels = (m("M # 128 % 128 / 8, N # 128 % 128 / 128, 1 # 16", axes=AX), m("N # 128 % 128, K", axes=AX))
    joint = pair_all(list(levels))
    assert joint.factors() is not None
    space = keys.key_space(mops.frag(pair_all([m("N, K", axes=AX)])))
    by_factors = keys.logical_keys(levels, space)
    by_cells = keys._cell_keys(levels, space, keys._positions(levels))
    for got_keys, got_pad in (by_factors, by_cells):
        for p in range(0, joint.size, 997):  # every 997th position, one cell at a time
            cell = joint.cell(p)
            assert got_pad[p] == (not isinstance(cell, Index))
            if isinstance(cell, Index):  # the key: each fragment's digit of its axis, mixed radix
                want = sum((cell.get(f.axis) // f.lo) % f.extent * r for f, r in zip(space.frags, space.radix))
                assert got_keys[p] == want
