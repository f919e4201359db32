"""How the bf16 BLAS contraction (`backends.cpu.contract_blas`) makes its rows' products from
their operand classes, and where each product lands in the result: found once per layout.

A contraction's spatial rows each pair an A class with a W class (`contract_jit.stored_rows`);
which pairs occur, how they group into matmuls and where each result cell's value sits in
the products depend on the layout alone, not on the data. `route` finds them at a
contraction's first run (`np.unique`, the grouping, a take index) and keeps them per
result-cell array `dest` and classes, so a kernel run again only multiplies and takes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import numpy as np

from backends.cpu import arena, contract_jit, moves_strided
from backends.cpu.lru import ByObject, Lru
from backends.cpu.distinct import distinct_values

__all__ = ["Grouping", "Route", "grouped_spread", "grouping", "pairing", "placed", "route", "spread", "spread_placed", "whole_placed"]

_SOURCES: ByObject[tuple[int, np.ndarray | None]] = ByObject()
"""`_source_cells` per result-cell array `dest` of a plan."""


@attrs.frozen(eq=False)
class Route:
    """How `contract_blas.contract` makes the rows' products from the classes (`route`): `kind` one
    matmul of every A class against every W class ("whole"), one per set of classes met
    ("grouped", `grouping`), or one per spatial row ("rows"); `index`, when not None, the
    flat position in the products of every result cell (rows, cells) of each row, not kept
    when that take is a strided read (`runs`; then `cells` alone says its shape)."""

    kind: str
    grouping: "Grouping | None"
    index: np.ndarray | None
    blocks: tuple[int, ...] = ()  # "whole": the products as (N', DA, I, DW, J)
    runs: tuple[int, tuple[int, ...], tuple[int, ...]] | None = None  # the take as a strided read (`_runs`)
    cells: tuple[int, ...] | None = None  # the take's shape (rows, cells): None when there is none

    @property
    def taken(self) -> bool:
        """Whether the result cells are one take of the products (`index` or `runs`)."""
        return self.cells is not None


_ROUTES: ByObject[Lru] = ByObject()
"""Per result-cell array `dest` of a plan, the `Route` of each pairing of classes met."""

_INDEX_MAX = 1 << 18
"""Result cells up to which `route` keeps the one-take index (int32: 1 MiB at most; a
larger result's two passes cost little next to its matmul)."""


def route(ca: np.ndarray, cw: np.ndarray, da: int, dw: int, dims: tuple[int, int, int], dest: np.ndarray,
          cells: int) -> Route:
    """The `Route` of rows of A classes `ca` (of `da`) and W classes `cw` (of `dw`), acc
    blocks (N', I, J) = `dims`, placed by `dest` (`placed`): found the first time (the
    pairs, the grouping, the take index, all from the classes alone) and kept per `dest`."""
    routes = _ROUTES.get(dest)
    if routes is None:
        routes = _ROUTES.put(dest, Lru(8))
    key = (da, dw, dims, cells, ca.tobytes(), cw.tobytes())
    found = routes.get(key)
    if found is not None:
        return found
    nn, ni, nj = dims
    kind, groups = pairing(ca, cw, da, dw)
    if kind == "whole":
        shape = (nn, da * ni, dw * nj)
    elif groups is not None:
        c, width = groups.own_of.shape[1], groups.sets.shape[1]
        kept, side = (ni, nj) if groups.by_a else (nj, ni)
        shape = (len(groups.sets), nn, c * kept, width * side)
    else:
        shape = (len(ca), nn, ni, nj)
    found = Route(kind, groups, None, (nn, da, ni, dw, nj))
    source = _sources(dest, cells)
    if source[0] == cells and source[1] is not None and len(ca) * cells <= _INDEX_MAX and math.prod(shape) < 2 ** 31:
        at = spread(np.arange(math.prod(shape), dtype=np.int32).reshape(shape), found, ca, cw)
        index = np.take(at.reshape(len(ca), -1), source[1], axis=1)
        runs = _runs(index)  # a strided read: the index is not kept (1 MiB on drawn_s2_3: issue 61)
        found = attrs.evolve(found, index=None if runs is not None else index, runs=runs, cells=index.shape)
    return routes.put(key, found)


_PAIRINGS = Lru(64)
"""`pairing` by its arguments: a kernel's contractions meet the same classes on every run."""


def pairing(ca: np.ndarray, cw: np.ndarray, da: int, dw: int) -> tuple[str, "Grouping | None"]:
    """(`Route.kind`, its `Grouping` when "grouped") of rows of A classes `ca` (of `da`) and W
    classes `cw` (of `dw`), from the classes alone: every A class against every W class when
    the rows meet at least half the pairs, else by the grouping when there is one, else a
    product per row. Apart from `route`, which also finds where the products land, so that a
    contraction can choose its form before it knows whether BLAS may compute it."""
    key = (da, dw, ca.tobytes(), cw.tobytes())
    found = _PAIRINGS.get(key)
    if found is None:
        if da * dw <= 2 * distinct_values(ca * dw + cw).size:
            found = "whole", None
        else:
            groups = grouping(ca, cw, da, dw)
            found = ("rows", None) if groups is None else ("grouped", groups)
        _PAIRINGS.put(key, found)
    return found


_MIN_RUN = 16
"""Cells of one run from which the take is made a strided copy (`_runs`)."""


def _runs(index: np.ndarray) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """(first, shape, element strides) of the take `index` as a strided read of the products,
    when it is one (a grid of digits, each of one stride, none negative) whose innermost digit
    reads runs of at least `_MIN_RUN` consecutive cells: the drawn kernels' blocks of a
    result row each a block of the products, copied run by run (a take reads an index per
    cell); None otherwise."""
    flat = index.reshape(-1)
    dims = moves_strided._dims((flat,)) if flat.size else None
    if not dims or dims[0][1][0] != 1 or dims[0][0] < _MIN_RUN or any(step[0] < 0 for _, step in dims):
        return None
    return int(flat[0]), tuple(n for n, _ in reversed(dims)), tuple(step[0] for _, step in reversed(dims))


def spread(products: np.ndarray, how: Route, ca: np.ndarray, cw: np.ndarray) -> np.ndarray:
    """acc (rows, N', I, J) of each row's (A class, W class) pair from the products `how` makes."""
    if how.kind == "whole":
        return products.reshape(how.blocks)[:, ca, :, cw, :]
    if how.kind == "grouped":
        return grouped_spread(products, how.grouping)
    return products


@attrs.frozen(eq=False)
class Grouping:
    """The rows' (A class, W class) pairs grouped by the side of fewer classes (`by_a`: A's):
    `sets` (S, width) the other side's classes each set of groups meets, `own_of` (S, c)
    the own side's classes of each set's groups, in order; each row's set (`row_set`), its
    group's rank among the set's (`row_rank`) and its slot among the classes met (`row_slot`)."""

    by_a: bool
    sets: np.ndarray
    own_of: np.ndarray
    row_set: np.ndarray
    row_rank: np.ndarray
    row_slot: np.ndarray


def grouping(ca: np.ndarray, cw: np.ndarray, da: int, dw: int) -> Grouping | None:
    """The `Grouping` of rows of A classes `ca` (of `da`) and W classes `cw` (of `dw`), or
    None when the classes meet different numbers of classes, or one each (then one product
    per row)."""
    by_a = da <= dw
    own, other = (ca, cw) if by_a else (cw, ca)
    n_other = dw if by_a else da
    pairs, inverse = np.unique(own * n_other + other, return_inverse=True)
    groups, counts = np.unique(pairs // n_other, return_counts=True)
    width = int(counts[0])
    if (counts != width).any() or width == 1:
        return None
    met = (pairs % n_other).reshape(len(groups), width)  # the other side's classes each group meets
    seen: dict[bytes, int] = {}  # the groups meeting the same classes (np.unique by rows: 0.1 ms)
    member = np.fromiter((seen.setdefault(row.tobytes(), len(seen)) for row in met), np.intp, len(met))
    sets = met[np.unique(member, return_index=True)[1]]
    per = np.bincount(member)
    if (per != per[0]).any():  # sets shared unevenly: each group on its own
        sets, member, per = met, np.arange(len(groups)), np.ones(len(groups), np.int64)
    c = int(per[0])
    order = np.argsort(member, kind="stable")
    rank = np.empty(len(groups), np.intp)
    rank[order] = np.arange(len(groups)) % c
    at = inverse.reshape(-1) // width  # each row's group and its slot among the classes met
    return Grouping(by_a, sets, groups[order].reshape(len(sets), c), member[at], rank[at], inverse.reshape(-1) % width)


def grouped_spread(out: np.ndarray, groups: Grouping) -> np.ndarray:
    """acc (rows, N', I, J) of the grouped products `out` (`contract_blas._grouped_products`):
    each row's own pair's block."""
    (n_sets, width), c = groups.sets.shape, groups.own_of.shape[1]
    nn = out.shape[1]
    blocks = out.reshape(n_sets, nn, c, out.shape[2] // c, width, out.shape[3] // width)
    picked = blocks[groups.row_set, :, groups.row_rank, :, groups.row_slot, :]
    return picked if groups.by_a else picked.swapaxes(-1, -2)  # (rows, N', I, J)


def placed(acc: np.ndarray, dest: np.ndarray, cells: int) -> np.ndarray:
    """(rows, cells): `contract_jit.place` of acc (rows, N', I, J) moved to (rows, I, J, N'),
    a -0 BLAS left made the chip's +0. When `dest` is a permutation of the cells, one take
    straight from acc's own order (the move, the broadcast over Z and the placing in one
    pass; the index found once per `dest`). A strided view read in place of the take when
    the permutation is affine measured slower: its inner runs are a lane's 8-16 cells."""
    found = _sources(dest, cells)
    if found[0] != cells or found[1] is None:
        out = contract_jit.place(np.moveaxis(acc, 1, 3), dest, cells)
    else:
        out = np.take(acc.reshape(acc.shape[0], -1), found[1], axis=1)
    np.add(out, np.float32(0), out=out)
    return out


_SPREAD_BLOCK = 1 << 20
"""Bytes of result rows `spread_placed` spreads and places at once."""

_PRODUCT_BLOCK = 1 << 18
"""Bytes of products `whole_placed` makes at once (at least one A class's): a block, not the
product of every pair, beside the result (issue 61, first-run memory: drawn_s1_3's blocks were
two 1 MiB ones alive at once on a 3.25 MiB kernel)."""


def spread_placed(products: np.ndarray, how: Route, ca: np.ndarray, cw: np.ndarray, dest: np.ndarray,
                  cells: int) -> np.ndarray:
    """`placed(spread(products, how, ca, cw), dest, cells)`; a "whole" route's spread a block
    of rows at a time when the placing is one take: no copy of every row's products beside
    the products and the result (issue 61, first-run memory: 4 MiB on drawn_s1_3)."""
    found = _sources(dest, cells)
    if how.kind != "whole" or found[0] != cells or found[1] is None:
        return placed(spread(products, how, ca, cw), dest, cells)
    out = np.empty((len(ca), cells), np.float32)
    step = max(1, _SPREAD_BLOCK // (4 * cells))
    for lo in range(0, len(ca), step):
        part = spread(products, how, ca[lo:lo + step], cw[lo:lo + step])
        np.take(part.reshape(part.shape[0], -1), found[1], axis=1, out=out[lo:lo + step], mode="clip")
    np.add(out, np.float32(0), out=out)  # a -0 BLAS left made the chip's +0, as `placed`
    return out


def whole_placed(matmul: Callable[[np.ndarray, np.ndarray, np.ndarray], object], left: np.ndarray, right: np.ndarray, ca: np.ndarray, cw: np.ndarray,
                 dest: np.ndarray, cells: int) -> np.ndarray | None:
    """The result cells (rows, cells) of a "whole" route (`left` (N', DA I, K) every A class,
    `right` (N', K, DW J) every W class), its products made a block of A classes at a time
    (`matmul(left_block, right, out)`, into one buffer of `_PRODUCT_BLOCK` bytes written again
    by each block) and each row's block placed from them at once: the
    products of every pair never live beside the result (issue 61, first-run memory: 4 MiB
    on drawn_s1_3). Every pair's products are exact (`contract_blas`: no sum rounds), so a
    block's matmul gives the same bits as the whole one. None when the placing is not one
    take (`_source_cells`)."""
    found = _sources(dest, cells)
    if found[0] != cells or found[1] is None:
        return None
    nn, width = left.shape[0], right.shape[-1]
    ni, nj = dest.shape[0], dest.shape[1]
    da = left.shape[1] // ni
    n, cell = np.divmod(found[1].astype(np.intp), ni * nj)  # each result cell's (n, i, j) in a pair's block
    i, j = np.divmod(cell, nj)
    step = max(1, _PRODUCT_BLOCK // (4 * nn * ni * width))
    out = arena.empty((len(ca), cells), np.float32)  # the run's scratch (a cast may write over it in place)
    by_class = np.argsort(ca, kind="stable")
    starts = np.searchsorted(ca[by_class], np.arange(0, da + step, step))
    products = np.empty(nn * min(step, da) * ni * width, np.float32)  # each block's, in the same memory
    for b, lo in enumerate(range(0, da, step)):
        hi = min(da, lo + step)
        flat = products[:nn * (hi - lo) * ni * width]
        matmul(left[:, lo * ni:hi * ni], right, flat.reshape(nn, (hi - lo) * ni, width))  # (N', (hi - lo) I, DW J)
        base = n * ((hi - lo) * ni * width) + i * width + j  # cell (n, i, j) of the pair (lo, 0)
        at = np.empty_like(base)
        for r in by_class[starts[b]:starts[b + 1]]:
            np.add(base, (int(ca[r]) - lo) * ni * width + int(cw[r]) * nj, out=at)
            np.take(flat, at, out=out[r], mode="clip")
    np.add(out, np.float32(0), out=out)  # a -0 BLAS left made the chip's +0, as `placed`
    return out


def _sources(dest: np.ndarray, cells: int) -> tuple[int, np.ndarray | None]:
    """`_source_cells(dest, cells)`, found once per `dest` (`_SOURCES`)."""
    found = _SOURCES.get(dest)
    return found if found is not None else _SOURCES.put(dest, _source_cells(dest, cells))


def _source_cells(dest: np.ndarray, cells: int) -> tuple[int, np.ndarray | None]:
    """(cells, the offset in an (N', I, J) block of the value each result cell receives), or
    (cells, None) when `dest` (I, J, N', Z) is not a permutation of the cells."""
    inverse = contract_jit.inverse_cells(dest, cells)
    if inverse is None:
        return cells, None
    ni, nj, nn, nz = dest.shape
    i, j, n = np.unravel_index(inverse // nz, (ni, nj, nn))
    return cells, (n * ni + i) * nj + j
