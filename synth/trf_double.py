"""Two tiles' blocks of `w` in the TRF at once (docs/synth.md "Why the 512 x 512 GEMMs stay
above 1.15"): a `w by switch` GEMM whose result is one row of tiles along `n`, each slice's
block of a tile at most half the TRF, so the next tile's block loads while this one contracts.

A result that fills the chip in one tile with `w by switch` (`64x4 of 8x128`, i8 512^3) copies
`a` to the `sn` = 4 slices of its tile row: 4,096 DMA cycles for `a`'s 256 KB. Two slices a row
(`128x2`) halve that, but a slice then computes 256 columns, whose rows of `w` with all of `k`
overflow the TRF. Cut into tiles of fewer columns (`128x2 of 4x64`: four tiles of 128 columns),
each block is a quarter of the TRF; the kernel:

- moves `w` in two DMAs (each slice its share of every tile's block; a tile's block is a tile
  of its half in DM): the first half of the tiles' blocks, then `a`'s row block once (each row
  to 2 slices), then the other half, so the first tile contracts while that half moves (with
  all of `w` in one DMA before `a`, the DMA context waited 802 cycles for that contraction);
- loads tile `j + 1`'s block into the TRF before tile `j` contracts, the loads alternating
  between the sub and the main context (two blocks are live at once, in different TRF rows,
  tu_ops/trf_place.py), so a load runs beside the previous contraction or the other load;
- stores tile `j`'s result after tile `j + 1`'s contraction is issued (both results live in
  DM at once, so the next contraction never waits for the store).

The loops are Python `for`s (at most DOUBLE_TILES tiles, traced each). i8 512^3: 13,716 ->
12,970 (`w` in one DMA) -> 12,668 cycles. `double_placements` appends these placements after
every other one, so the others keep their indices; they add no `order`/`reuse`/`pair` levers
to the space, and where another placement brings those levers, offer.offered offers these only
at each lever's first value (their loop ignores the levers, so the other values would only
repeat the kernel).

With `k` in time blocks (`chunk_double_placements`: a block with all of `k` overflows the TRF,
as bf16 512 x 512 x 384's 128 columns of `k` = 384 do) the TRF's unit is one tile's chunk of
`k`: all of `w` in one DMA (`whole_w`), `a` a DMA a chunk, the units tile by tile, each unit's
successor loaded before it contracts, a chunk's sums kept in the VRF for the tile's next
chunk (`chunk_tile`), a tile stored once its last chunk is in; with three chunks a tile or
more, the second tile's first chunk second (`_chunk_loops`). bf16 512 x 512 x 384: 17,276 ->
15,770 cycles (`a` copied to 2 slices instead of 4) -> 15,548 (that order).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.dtypes import DType
from synth.both_loads import lone_switch
from synth.onchip import switch_fetch, switch_held, switch_ok, switch_piece
from synth.row_cut import row_cut
from synth.tiling import Geometry
from tu_ops.target import Constants, rngd

__all__ = ["DOUBLE_TILES", "chunk_double_placements", "chunk_tile", "double_loops", "double_placements", "whole_w"]

DOUBLE_TILES = 4  # the most tiles along n a double-buffered candidate is offered with
REQUEST = 256  # bytes of a whole HBM write (the `hbm align_bytes` rate, tu_ops/dma_cost.py)


def double_placements(spec: Any, m: int, n: int, placements: list[Geometry],
                      const: Constants | None = None) -> list[Geometry]:
    """For each `w by switch` placement alone (synth/both_loads.py `lone_switch`: one cluster,
    `k` whole on every slice; and all the slices) whose tile is the whole result, the
    placements with twice the slices along `m` and 2 or DOUBLE_TILES tiles along `n` whose
    blocks (each at least a quarter of the TRF) fit the TRF two at a time, whose block the
    Switch Engine can spread (`switch_ok`) and whose rows of results are whole 256-byte DMA
    requests (a row of 128 bytes is a partial write: i8 512^3's `64x4 of 8x32` models
    80,830); no batch, epilogue, device transpose or split over chips. Where 2 tiles' blocks
    overflow the TRF two at a time, their twin with `k` in 2 time blocks (`chunk_twin`): i8
    512^3's `128x2 of 4x128, k in 2 time blocks, w by switch, TRF double-buffered`."""
    const = const or rngd().constants
    if spec.chips != 1:
        return []
    elem, out_bytes = (DType(d).bits // 8 for d in (spec.dtype_in, spec.result_dtype))
    k = spec.padded[spec.contracted]
    out: list[Geometry] = []
    chunked: list[Geometry] = []   # after the others, which keep their indices
    for g in placements:
        if not lone_switch(spec, g, m, n) or g.double or g.idle != 1 or g.r % 2 or g.sn % 2:
            continue
        for tiles in (2, DOUBLE_TILES):
            c = n // (g.sn // 2 * tiles)
            block = c * k * elem
            twin = Geometry(g.r // 2, c, g.sm * 2, g.sn // 2, switch=True, double=True)
            if 4 * block >= const.TRF_BYTES and 2 * block <= const.TRF_BYTES and c * out_bytes >= REQUEST \
                    and switch_ok(twin, k, elem, const) and twin not in out:
                out.append(twin)
            elif tiles == 2 and 2 * block > const.TRF_BYTES:
                twin = chunk_twin(attrs.evolve(g, tb=2), n, k, elem, out_bytes, const)
                if twin is not None and twin not in chunked:
                    chunked.append(twin)
    return out + chunked


def chunk_twin(g: Geometry, n: int, k: int, elem: int, out_bytes: int, const: Constants) -> Geometry | None:
    """The double-buffered twin of `g` (`k` in `g.tb` time blocks) with twice the slices along
    `m` and 2 tiles along `n`, or None: each unit (a tile's chunk) a quarter of the TRF or
    more and two fitting it, a tile's 4-byte partial sums in the VRF (VRF-1: 2048^2 x 128's
    `128x2 of 16x512` would hold 32 KB), rows of results whole 256-byte writes, the block spread
    by the Switch Engine as whole rows of `w` a slice."""
    c = n // (g.sn // 2 * 2)
    unit = c * (k // g.tb) * elem
    twin = Geometry(g.r // 2, c, g.sm * 2, g.sn // 2, tb=g.tb, switch=True, double=True)
    if 4 * unit >= const.TRF_BYTES and 2 * unit <= const.TRF_BYTES and c * out_bytes >= REQUEST \
            and twin.r * c * 4 <= const.VRF_BYTES \
            and switch_ok(twin, k, elem, const) and _whole_rows(twin, k, elem, const):
        return twin
    return None


def chunk_double_placements(spec: Any, m: int, n: int, placements: list[Geometry],
                            const: Constants | None = None) -> list[Geometry]:
    """The double-buffered twins of the `w by switch` placements whose `k` runs in time
    blocks (`k in TB time blocks, w by switch`: a slice's block of all of `k` overflows its
    TRF): one tile that is the whole result on all the slices, one cluster. The twin has twice
    the slices along `m` (`a` copied to half as many slices) and 2 tiles along `n`; a TRF unit
    is one tile's block of one chunk of `k`, and two units (each at least a quarter of the
    TRF) fit it at once (bf16 512 x 512 x 384: `64x4 of 8x128, k in 3 time blocks, w by
    switch` gives `128x2 of 4x128, k in 3 time blocks, w by switch, TRF double-buffered`,
    units of 128 rows x 128 of `k`, 32 KB). Rows of results whole 256-byte writes; the same
    exclusions as `double_placements`."""
    const = const or rngd().constants
    if spec.chips != 1 or spec.batch is not None or spec.epilogue is not None or spec.device_transposed:
        return []
    elem, out_bytes = (DType(d).bits // 8 for d in (spec.dtype_in, spec.result_dtype))
    k = spec.padded[spec.contracted]
    out: list[Geometry] = []
    for g in placements:
        if not (g.switch and g.tb > 1 and not g.a_switch and not g.halves and not g.double
                and (g.sk, g.sb, g.clusters, g.idle) == (1, 1, 1, 1) and (g.tm, g.tn) == (m, n)
                and g.r % 2 == 0 and g.sn % 2 == 0):
            continue
        twin = chunk_twin(g, n, k, elem, out_bytes, const)
        if twin is not None and twin not in out:
            out.append(twin)
    return out


def _whole_rows(g: Geometry, k: int, elem: int, const: Constants) -> bool:
    """Whether each slice holds whole rows of `w` (all of `k`) of a `w by switch` block of `g`
    (synth/row_cut.py, or groups of 8 rows with no piece of `k`): `w` then moves in one DMA and
    the units are tiles of it in DM."""
    cut = row_cut(g, k, elem, const)
    return (cut[1] if cut is not None else (switch_piece(g, k, elem, const) or (0, 0))[1]) == 1


def whole_w(v: dict[str, Any]) -> list[str]:
    """`w_all()` of a double-buffered candidate with `k` in time blocks: all of `w` in ONE DMA,
    each of the `sm` slices sharing a tile's block holding its rows (all of `k`) of every
    tile's block; the units (a tile's chunk of `k`) are tiles of it in DM, `[j][t]`."""
    tb, nt, N, K, Kl, din, wn = v["geo"].tb, v["nt"], v["N"], v["K"], v["Kl"], v["din"], v["wn"]
    rows = switch_held(v)[:-len(Kl)]
    chunk = v["size"][v["spec"].contracted] // tb
    return ["    def w_all():",
            f"        # all of {wn} in one DMA: each of the {v['geo'].sm} slices sharing a tile's block holds its rows of "
            "every tile's",
            f"        # block with all of {K}; a unit (one tile's chunk of {K}) is a tile of it in DM",
            f'        whole = {wn}.view().to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, WSlice, m("{N} / {v["tn"]}, '
            f'{rows}{K}")])',
            f'        return [[whole.view().tile(m("{N} / {v["tn"]}"), 1, m("1 # {nt}, {rows}{K}"), j)',
            f'                 .tile(m("{K} / {chunk}"), 1, m("1 # {nt}, {rows}1 # {tb}, {Kl}"), t) for t in range({tb})]',
            f"                for j in range({nt})]",
            ""]


def chunk_tile(v: dict[str, Any], dst: list[str], work: list[str]) -> list[str]:
    """The TRF load of one unit (a tile's chunk of `w`, `stationary`), its contraction, the
    earlier chunks' sums added from the VRF (`contract`), and a tile's store (`store`), of a
    double-buffered candidate with `k` in time blocks; `work` is the contraction's steps
    (gemm_text.py's `contraction_chain`) and `dst` the tile of the result's write view."""
    T, K, Kl, g, flit = v["T"], v["K"], v["Kl"], v["g"], v["flit"]
    add = ("vector_fxp(FxpBinaryOp.ADD_FXP, acc)" if v["dout"] == "i32" else
           "vector_clip(ClipBinaryOpF32.ADD, acc)")
    rn = v["spec"].result[0]
    return ["    def stationary(chunk, on=None):",
            f"        # one tile's chunk of {v['wn']} into the TRF ({v['rt']} rows per slice, 8 lanes x {g} rows each)",
            "        return ((on or ctx.sub).begin(chunk.view())",
            *switch_fetch(v),
            f'                .collect(m("{T} % 8, {T} / 8 % {g}, {Kl} / {flit}"), m("{K} % {flit}"))',
            f'                .to_trf(m("{T} % 8"), m("{T} / 8 % {g}, {Kl}")))',
            "",
            "    def contract(streamed, trf, acc):",
            f"        # packet={v['packet']}: one chunk of {K} against one TRF unit; the earlier chunks' sums wait "
            "in the VRF",
            "        part = (ctx.main.begin(streamed.view())",
            *work,
            "                .vector_init()",
            "                .vector_intra_slice_tag(TagMode.ZERO))",
            "        if acc is not None:",
            f"            part = part.{add}  # + the earlier chunks' sums",
            "        return part.vector_final()",
            "",
            "    def store(result, i, j):",
            f"        dst = ({rn}.view_mut()",
            *[f"               {call})" if k == len(dst) - 1 else f"               {call}" for k, call in enumerate(dst)],
            "        result.view().to_hbm_view(ctx.tdma, dst)",
            ""]


def _chunk_loops(v: dict[str, Any]) -> list[str]:
    """The loop of a double-buffered candidate with `k` in time blocks: all of `w` in one DMA,
    then `a`'s chunks (one DMA each); the units (a tile's chunk) one tile after another, each
    unit's successor loaded into the TRF before it contracts, on sub but for every fourth unit
    from the second (main: a load beside a contraction takes about two contractions, so sub
    runs three loads while main contracts, and main, in order, would hold a contraction
    behind a load; measured: i8 512^3 12,470 against 12,840 with the last on main too); a
    tile's result stored as soon as its last chunk is contracted.

    With three chunks a tile or more, the second tile's first chunk comes second (its own
    accumulator in the VRF) and the loads alternate between main and sub, from main: main
    would otherwise idle while `a`'s second chunk moves, and the first tile's last chunk is
    loaded after a contraction either way (the TRF holds two units). With two chunks that
    unit would be the first tile's last, which the first order preloads beside `a`'s DMA:
    i8 512^3 14,666 against 12,470. bf16 512 x 512 x 384: 15,770 -> 15,548 (the best of the
    32 assignments of loads to contexts in either order; tile by tile, 15,770 was the best)."""
    nt, tb, S, T, rs, rt, g = v["nt"], v["geo"].tb, v["S"], v["T"], v["rs"], v["rt"], v["g"]
    cast = f'.cast(bf16, m("{T} % 8 # 16"))' if v["dout"] == "bf16" else ""
    if tb < 3:
        units, on, acc, held = (f"[(j, t) for j in range({nt}) for t in range({tb})]",
                                "ctx.main if (u + 1) % 4 == 1 else ctx.sub", "None", "acc")
        lines = ["    # chunk of k, and the next unit's chunk loads into the TRF while this one contracts (on sub, every",
                 "    # fourth from the second on main); each tile's result is stored once its last chunk is contracted"]
    else:
        units, on, acc, held = (f"[(0, 0), (1, 0)] + [(j, t) for j in range({nt}) for t in range(1, {tb})]",
                                "(ctx.main, ctx.sub)[u % 2]", "{}", "acc[j]")
        lines = ["    # chunk of k, and the next unit's chunk loads into the TRF while this one contracts (main and sub in",
                 "    # turn); the second tile's first chunk comes second, while a's second chunk moves; each tile's",
                 "    # result is stored once its last chunk is contracted"]
    get = "acc" if tb < 3 else "acc.get(j)"
    return ["    # TRF double-buffered, k in time blocks: all of w in one DMA, then a's chunks; a unit is one tile's",
            *lines,
            "    blocks = w_all()",
            f"    {v['s_dm']} = a_block(0)",
            f"    units = {units}",
            "    trfs = [stationary(blocks[0][0])]",
            f"    acc = {acc}",
            "    for u, (j, t) in enumerate(units):",
            "        if u + 1 < len(units):",
            f"            on = {on}",
            "            trfs.append(stationary(blocks[units[u + 1][0]][units[u + 1][1]], on))",
            f"        part = contract({v['s_dm']}[t], trfs[u], {get})",
            f"        if t < {tb - 1}:",
            f'            {held} = part.to_vrf(m("{S} % {rs}, {T} / 8 % {g}, {T} % 8"))',
            "        else:",
            f'            store(part{cast}.commit_trim(m("{T} % 8")).commit(m("{S} % {rs}, {T} % {rt}")), 0, j)',
            *(["            acc = None"] if tb < 3 else [])]


def double_loops(v: dict[str, Any]) -> list[str]:
    """The kernel's tile loop: `w` in two DMAs (the first half of the tiles' blocks, then `a`
    once, then the other half), the TRF loads one tile ahead on alternating contexts, each
    result stored one tile late."""
    if v["geo"].tb > 1:
        return _chunk_loops(v)
    nt, wn, din, N, tn = v["nt"], v["wn"], v["din"], v["N"], v["tn"]
    held = switch_held(v)
    half, span = nt // 2, v["tn"] * (nt // 2)   # tiles a half, its rows of w
    if half == 1:
        moves = ["    halves = [w_block(0)]", f"    {v['s_dm']} = a_block(0)", "    halves.append(w_block(1))",
                 "    blocks = halves"]
    else:
        # w's view tiled into its two halves along n (gemm_text.chain's form: the tiled index `1 # 2, N % span`)
        terms = ", ".join(f"1 # 2, {N} % {span}" if i == v["ni"] else i.upper() for i in v["widx"])
        rows = f'.tile(m("{N} / {span}"), 1, m("{terms}"), h)'
        moves = ["    def w_half(h):",
                 f"        # half h of {wn}'s tiles ({span} rows) in one DMA: each slice its share of every block",
                 f"        rows = {wn}.view(){rows}",
                 f'        return rows.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, WSlice, m("{N} % {span} / {tn}, '
                 f'{held}")])',
                 "",
                 "    halves = [w_half(0)]",
                 f"    {v['s_dm']} = a_block(0)",
                 "    halves.append(w_half(1))",
                 f'    blocks = [halves[j // {half}].view().tile(m("{N} % {span} / {tn}"), 1, m("1 # {half}, {held}"), '
                 f"j % {half}) for j in range({nt})]"]
    return ["    # TRF double-buffered: w moves in two DMAs (each slice its share of every tile's block), the first",
            "    # half of the tiles' blocks before a's rows and the other half after them, so the first tiles contract",
            "    # while it moves; tile j + 1's block loads into the TRF while tile j contracts (the loads alternate",
            "    # between the sub and the main context); each result is stored after the next tile's contraction",
            *moves,
            "    trfs = [stationary(blocks[0])]",
            "    results = []",
            f"    for j in range({nt}):",
            f"        if j + 1 < {nt}:",
            "            trfs.append(stationary(blocks[j + 1], (ctx.sub, ctx.main)[(j + 1) % 2]))",
            f"        results.append(tile({v['s_dm']}, trfs[j], 0, j))",
            "        if j > 0:",
            "            store(results[j - 1], 0, j - 1)",
            f"    store(results[{nt} - 1], 0, {nt - 1})"]
