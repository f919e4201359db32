"""The tiling levers of `npu-opt synth` (docs/synth.md "Contractions larger than the chip"):
where a GEMM's tile sits on the chip, how its `k` splits across slices, and how its
operands and result move between HBM and DM. synth/space.py writes the kernels;
this module decides their geometry from the target's constants (synth/offer.py which of
its points the space keeps, and at what size they are checked).

A GEMM tile is one pass of the contraction: every slice of a cluster computes an `R x C`
block of results (R * C <= the accumulator's cells), `SM x SN` slices along `m` and `n`
make the tile. When the stationary operand's rows with their whole `k` do not fit one
slice's TRF, or the two operands' blocks do not fit its DM, `k` is split across `SK`
slices (the innermost slice factor): each slice multiplies a `k / SK` chunk and the
inter-slice reducer adds the `SK` partial sums (rule VE-INTER-3 wants the reduced factor
innermost), so `SM * SN * SK` slices make the tile. `SK` is the smallest power of two
whose chunk fits the TRF (TRF_BYTES) and the DM (DM_SLICE_BYTES) and divides `k` in whole
packets; a block whose chunk cannot fit even across every slice gets none.
A tile may also span both clusters (CLUSTER_SIZES), doubling its rows.

The placement string names all of it: "SMxSN of RxC" (one cluster, `k` whole), plus
", k over SK slices" and ", 2 clusters" when they apply.

Operands and the result are tiled through DM by the tile loops of synth/tile_loops.py: each tile
loads its row blocks (`k / SK` of them per slice) and stores its result through a tile of
the output's write view; the `reuse` lever keeps loaded blocks across tiles.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from ir.dtypes import DType
from tu_ops.target import Constants, rngd

__all__ = ["ALIGN_BYTES", "Geometry", "blocks", "exact_tiles", "frontier", "geometry", "needs_split", "pad_ok",
           "result_placements",
           "slice_counts", "split_placements"]

# The HBM's aligned access, in bytes (tu_ops/targets/rngd.schedule.toml [hbm] align_bytes; a test
# pins the two equal): a row of results narrower, or not a multiple of it, ends in a partial write.
ALIGN_BYTES = 256
BLOCKS = ((32, 32), (8, 128))  # a slice's rows x columns of the result

_PLACEMENT = re.compile(r"(\d+)x(\d+) of (\d+)x(\d+)(?:, k over (\d+) slices)?(?:, k in (\d+) time blocks)?"
                        r"(?:, (2) clusters)?(?:, (\d+) batch elements side by side)?(?:, on 1/(\d+) of the slices)?"
                        r"(?:, (a and w|a|w) by switch)?(, TRF loaded by main and sub)?(, TRF double-buffered)?$")


@attrs.frozen
class Geometry:
    """One GEMM candidate's tile: `r x c` results a slice, `sm x sn` slices along m and n,
    `sk` slices sharing k, `clusters` clusters stacked along m, `tb` time blocks of k, `sb`
    batch elements side by side on their own slices (a batched GEMM; the slice grid is
    `sb x sm x sn`); a result smaller than a tile of every slice leaves all but 1/`idle` of
    the slices idle. `switch`: w's blocks are broadcast by the Switch Engine (`w by switch`,
    synth/onchip.py); `a_switch`: a's blocks are (`a by switch`, synth/stream_switch.py)."""

    r: int
    c: int
    sm: int
    sn: int
    sk: int = 1
    clusters: int = 1
    tb: int = 1
    idle: int = 1
    sb: int = 1
    switch: bool = False
    a_switch: bool = False
    halves: bool = False  # the TRF loaded in halves of k by main and sub at once (synth/both_loads.py)
    double: bool = False  # two tiles' blocks in the TRF at once, tiles along n (synth/trf_double.py)

    @property
    def tm(self) -> int:
        """The tile's rows (m)."""
        return self.r * self.sm * self.clusters

    @property
    def tn(self) -> int:
        """The tile's columns (n)."""
        return self.c * self.sn

    def label(self) -> str:
        extras = ((self.sk, f", k over {self.sk} slices"), (self.tb, f", k in {self.tb} time blocks"),
                  (self.clusters, f", {self.clusters} clusters"), (self.sb, f", {self.sb} batch elements side by side"),
                  (self.idle, f", on 1/{self.idle} of the slices"))
        who = " and ".join(["a"] * self.a_switch + ["w"] * self.switch)
        return (f"{self.sm}x{self.sn} of {self.r}x{self.c}" + "".join(text for n, text in extras if n > 1)
                + (f", {who} by switch" if who else "") + (", TRF loaded by main and sub" if self.halves else "")
                + (", TRF double-buffered" if self.double else ""))

    def notes(self, K: str, k_local: str) -> list[str]:
        """The kernel file's comments on the clusters and the `k` split."""
        lines = []
        if self.clusters > 1:
            lines.append(f"# the tile's {self.tm} rows span both clusters, {self.tm // self.clusters} rows each")
        if self.sk > 1:
            lines += [f"# {K} is split across {self.sk} slices ({self.sm * self.sn} x {self.sk} slices): {k_local} is "
                      "one slice's chunk, the smallest that fits",
                      "# its TRF and DM; the inter-slice reducer adds the chunks' partial sums."]
        if self.tb > 1:
            lines += [f"# {K} is cut into {self.tb} time blocks of {k_local}, the smallest that fits a slice's TRF and "
                      "DM; the", "# blocks' partial sums are added on the Vector Engine, through the VRF."]
        return lines

    def cluster_map(self, M: str) -> str:
        """The DM tensors' Cluster mapping."""
        return f"{M} % {self.tm} / {self.tm // self.clusters}" if self.clusters > 1 else "1 # 2"

    def slice_map(self, M: str, N: str, K: str, kdim: int, B: str = "") -> str:
        """The DM tensors' Slice mapping: the batch (`B`, when it spans slices), m, n, then the k
        chunks innermost."""
        rows, cols = f"{M} % {self.tm // self.clusters} / {self.r}", f"{N} % {self.tn} / {self.c}"
        if self.switch or self.a_switch:  # the slices sharing a switched block side by side on the ring
            return self.switch_slices(rows, cols, B)
        parts = [f"{B} % {self.sb}"] * (self.sb > 1) + [rows, cols]
        if self.sk > 1:
            parts.append(f"{K} / {kdim // self.sk}")
        if self.idle > 1:  # the slices the result leaves idle: padding after the busy ones
            parts.append(f"1 # {self.idle}")
        return ", ".join(parts)

    def switch_slices(self, rows: str, cols: str, B: str = "") -> str:
        """The Slice mapping of a switched geometry: the batch, the idle slices' padding, then
        the m factor `rows` and the n factor `cols`, the one whose slices share the switched
        operand's block innermost: `rows` for `w by switch` (`rows` is the m factor for the
        result and `a`, the piece of `k` for `w`'s spread block), `cols` once `a` is switched
        (`cols` the n factor for the result and `w`, the piece of `k` for `a`'s)."""
        inner = [rows, cols] if self.a_switch else [cols, rows]
        return ", ".join([f"{B} % {self.sb}"] * (self.sb > 1) + [f"1 # {self.idle}"] * (self.idle > 1) + inner)

    def k_local(self, K: str, kdim: int) -> str:
        """The `k` a slice holds at once: all of it, or its chunk."""
        return f"{K} % {kdim // (self.sk * self.tb)}" if self.sk * self.tb > 1 else K

    def reduced_slices(self, M: str, N: str) -> str:
        """The slices after the inter-slice reduce: the chunk factor becomes a dummy."""
        return f"{M} % {self.tm // self.clusters} / {self.r}, {N} % {self.tn} / {self.c}, 1 # {self.sk}"


def geometry(placement: str) -> Geometry:
    """The geometry a placement string names (the module docstring)."""
    match = _PLACEMENT.match(placement)
    if match is None:
        raise ValueError(f"not a synth placement: {placement!r}")
    sm, sn, r, c = (int(match.group(i)) for i in range(1, 5))
    return Geometry(r, c, sm, sn, int(match.group(5) or 1), int(match.group(7) or 1), int(match.group(6) or 1),
                    int(match.group(9) or 1), int(match.group(8) or 1), "w" in (match.group(10) or ""),
                    "a" in (match.group(10) or ""), bool(match.group(11)), bool(match.group(12)))


def pad_ok(spec: Any) -> bool:
    """Whether a result smaller than a tile may be padded to it inside the kernel: on one chip
    (a multi-chip split keeps its own padding per chip)."""
    return spec.chips == 1


def _twos(limit: int) -> list[int]:
    """The powers of two up to `limit`."""
    return [2 ** e for e in range(max(limit, 1).bit_length())]


def blocks(spec: Any, const: Constants | None = None, thin: bool = False,
           rows: list[int] | None = None) -> list[tuple[int, int]]:
    """A slice's blocks of results (rows, columns) the machine's limits allow for `spec`, its `k`
    whole: powers of two of at least one lane group (the stationary operand's rows fill the
    TRF's lanes) along each axis, no larger than the power of two that covers the result;
    the columns' rows of `w` (stationary by default) with their whole `k` fit the TRF; both
    operands' rows and the block's results fit the DM; a row of results is a whole number
    of flits and at most one DMA packet. `thin`: the blocks of fewer rows than a lane group
    instead (synth/thin.py); `rows`: the blocks of these rows instead (synth/odd_rows.py)."""
    const = const or _constants()
    elem, out = (DType(d).bits // 8 for d in (spec.dtype_in, spec.result_dtype))
    lanes = max(const.LANES)
    k = spec.padded[spec.contracted]
    m, n = (spec.padded[i] for i in spec.result[1] if i != spec.batch)
    up = [_twos(1 << (x - 1).bit_length()) for x in (m, n)]  # to the power of two that covers the result
    return [(r, c) for r in (up[0] if rows is None else rows) for c in up[1]
            if (rows is not None or (r < lanes if thin else r >= lanes)) and c >= lanes
            and c * k * elem <= const.TRF_BYTES
            and (r + c) * k * elem + r * c * out <= const.DM_SLICE_BYTES
            and c * out % const.FLIT_BYTES == 0 and c * out <= const.DMA_MAX_PACKET]


def slice_counts(slices: int, const: Constants | None = None) -> list[int]:
    """The slice counts a tile may use, most first: the target's slice sizes (SLICE_SIZES),
    scaled to the `slices` the kernel has."""
    const = const or _constants()
    top = max(const.SLICE_SIZES)
    return sorted({slices * s // top for s in const.SLICE_SIZES if slices * s % top == 0}, reverse=True)


def exact_tiles(shapes: list[tuple[int, int]], m: int, n: int, slices: int) -> list[Geometry]:
    """Each block of `shapes` on each slice count of `slice_counts` whose squarest grid tiles the
    m x n result exactly."""
    found = []
    for r, c in shapes:
        for count in slice_counts(slices):
            grid = _grid(r, c, m, n, count)
            if grid is not None:
                found.append(Geometry(r, c, *grid, idle=slices // count))
    return found


def _grid(r: int, c: int, m: int, n: int, count: int) -> tuple[int, int] | None:
    """The squarest grid (sm, sn) of `count` slices whose tile of r x c blocks covers the m x n result
    exactly, or None."""
    fits = [(sm, count // sm) for sm in _twos(count) if count % sm == 0
            and m % (r * sm) == 0 and n % (c * (count // sm)) == 0]
    return min(fits, key=lambda g: (abs(r * g[0] - c * g[1]), g[0])) if fits else None


def frontier(found: list[Geometry]) -> list[Geometry]:
    """`found` without the placements another one dominates: the same slices busy with a block
    at least as large along both axes (its tiles cover the result in fewer passes)."""
    def beats(a: Geometry, b: Geometry) -> bool:
        return a != b and a.sm * a.sn == b.sm * b.sn and a.r >= b.r and a.c >= b.c
    return [g for g in found if not any(beats(h, g) for h in found)]


def result_placements(m: int, n: int, slices: int, pad: bool = False,
                      shapes: list[tuple[int, int]] | None = None) -> list[Geometry]:
    """The tiles of the m x n result: for each slice count of `slice_counts` and each block of
    `shapes` (none: 32 x 32 and 8 x 128 on all the slices, for the rules to refuse), the
    squarest grid whose tile covers the result
    exactly, keeping per slice count the largest blocks (`frontier`): a tile on all the
    slices, or on fewer slices with taller blocks. When no tile of every slice covers the
    result (a result smaller than one, or not a multiple of one), also each block's busiest
    grid on fewer slices, the rest idle. With `pad`, also the smallest tile of each block
    that covers a result smaller than itself in one pass, the result padded to it inside the
    kernel (even where exact tiles exist: 320 rows are five passes of 64-row tiles, or one
    pass of ten 32-row blocks on slices of a 512-row tile)."""
    # no block fits: the default blocks on all the slices
    found = exact_tiles(shapes, m, n, slices) if shapes else \
        [Geometry(r, c, *grid) for r, c in BLOCKS if (grid := _grid(r, c, m, n, slices)) is not None]
    shapes = shapes or list(BLOCKS)
    padded: list[Geometry] = []
    placements = sorted(frontier(found), key=lambda g: (g.idle, -g.r * g.c, g.r, g.c))
    busiest = []
    for r, c in shapes if not any(g.idle == 1 for g in placements) else ():
        # no tile of every slice covers it: each block's busiest grid on fewer slices
        grids = [(count, _grid(r, c, m, n, count)) for count in _twos(slices)[::-1]]
        count, grid = next(((count, g) for count, g in grids if g is not None), (0, None))
        if grid is not None and Geometry(r, c, *grid, idle=slices // count) not in placements:
            busiest.append(Geometry(r, c, *grid, idle=slices // count))
    placements += frontier(busiest)
    twos = _twos(slices)
    # the result padded to one tile, of blocks that hold only results, only padding, or the
    # whole padded axis (a DMA whose destination splits a padded axis between blocks is DMA-4,
    # kd-padded-dma)
    for r, c in [(r, c) for r, c in shapes if (m % r == 0 or r >= m) and (n % c == 0 or c >= n)] if pad else ():
        sm, sn = next((t for t in twos if r * t >= m), 0), next((t for t in twos if c * t >= n), 0)
        one = Geometry(r, c, sm, sn, idle=slices // (sm * sn)) if sm and sn and sm * sn <= slices else None
        if one is not None and (m % one.tm or n % one.tn) and one not in placements:
            padded.append(one)
    placements += frontier(padded)
    # none at all (an axis not a multiple of a block): the squarest, which the mapping rules refuse with their ID
    return placements or [Geometry(32, 32, 1 << (slices.bit_length() // 2), slices >> (slices.bit_length() // 2))]


def _constants() -> Constants:
    return rngd().constants


def _split(rows_trf: int, rows_dm: int, k: int, elem: int, packet: int, slices: int, const: Constants) -> int | None:
    """The smallest power-of-two split of `k` whose chunk fits the TRF and the DM and holds
    whole packets, or None."""
    sk = 1
    while sk <= slices:
        chunk = k // sk
        if k % sk == 0 and chunk % packet == 0 and rows_trf * chunk * elem <= const.TRF_BYTES \
                and rows_dm * chunk * elem <= const.DM_SLICE_BYTES:
            return sk
        sk *= 2
    return None


def needs_split(spec: Any) -> bool:
    """Does some block's stationary operand need `k` split to fit a slice (TRF or DM)?"""
    const = _constants()
    elem = 1 if spec.dtype_in == "i8" else 2
    k = spec.padded[spec.contracted]
    return any(r * k * elem > const.TRF_BYTES or c * k * elem > const.TRF_BYTES
               or (r + c) * k * elem > const.DM_SLICE_BYTES for r, c in BLOCKS)


def _grids(slices: int, r: int, c: int, m: int, n: int, clusters: int, keep: int) -> list[tuple[int, int]]:
    """The `keep` slice grids (sm, sn) of `slices` slices whose tiles cover the result, the
    squarest tiles first (they load the fewest operand bytes per result)."""
    fits = [(s, slices // s) for s in (2 ** e for e in range(slices.bit_length()))
            if slices % s == 0 and m % (r * s * clusters) == 0 and n % (c * (slices // s)) == 0]
    fits.sort(key=lambda g: (abs((r * g[0] * clusters) - (c * g[1])) / max(r * g[0] * clusters, c * g[1]), g[0]))
    return sorted(fits[:keep])


def _more_splits(sk: int, k: int, packet: int, slices: int) -> list[int]:
    """`sk`, then each larger power-of-two split of `k` into whole packets, up to every slice:
    the splits a block may take when the result is too small for `slices // sk` slices."""
    out = [sk]
    while out[-1] * 2 <= slices and k % (out[-1] * 2) == 0 and (k // (out[-1] * 2)) % packet == 0:
        out.append(out[-1] * 2)
    return out


def _whole_requests(tb: int, k: int, elem: int, packet: int) -> int | None:
    """When a chunk of `k / tb` elements is not whole DMA requests (`ALIGN_BYTES`), the
    smallest larger count of time blocks (not only powers of two) whose chunk is, up to twice
    `tb`; else None. A chunk's row of `a` moves as its own DMA, each packet charged whole
    256-byte requests (tu_ops/dma_cost.py): bf16 `k` = 384 in 2 blocks moves 384-byte rows
    charged 512 bytes, in 3 blocks 256-byte rows charged 256."""
    if (k // tb) * elem % ALIGN_BYTES == 0:
        return None
    return next((t for t in range(tb + 1, 2 * tb + 1)
                 if k % t == 0 and (k // t) % packet == 0 and (k // t) * elem % ALIGN_BYTES == 0), None)


def split_placements(spec: Any, m: int, n: int, grids: int = 1) -> list[str]:
    """The placements of a space whose `k` must split (the stationary operand is `w`): per
    block its `k` split (the smallest that fits a slice, or a larger one when the result is too
    small to fill the other slices), each cluster count that fits, and the `grids` squarest
    slice grid(s); in time blocks also the fewest blocks of whole DMA requests
    (`_whole_requests`) when the smallest split's are not."""
    const = _constants()
    slices = max(const.SLICE_SIZES)
    elem = 1 if spec.dtype_in == "i8" else 2
    packet = max(const.OUTER_PACKET_BYTES) // elem
    k = spec.padded[spec.contracted]
    out = []
    for r, c in BLOCKS:
        sk = _split(c, r + c, k, elem, packet, slices, const)
        if sk is None:
            continue
        for clusters in sorted(const.CLUSTER_SIZES, reverse=True):
            for split in _more_splits(sk, k, packet, slices):  # a result smaller than the tile: k over more slices
                found = _grids(slices // split, r, c, m, n, clusters, grids)
                out += [Geometry(r, c, sm, sn, split, clusters).label() for sm, sn in found]
                if found:
                    break
        if 2 * r * c * 4 > const.VRF_BYTES:  # time blocks keep two accumulators of 4-byte sums in the VRF
            continue
        for tb in (sk, _whole_requests(sk, k, elem, packet)):
            for clusters in sorted(const.CLUSTER_SIZES, reverse=True) if tb else ():
                for sm, sn in _grids(slices, r, c, m, n, clusters, grids):
                    out.append(Geometry(r, c, sm, sn, 1, clusters, tb).label())
    return out
