"""The `pair` lever of `npu-opt synth`'s GEMM candidates (docs/synth.md): a rolled tile loop
whose body holds two tiles, as the reference's double-buffering kernels roll their loop over
pairs of weight groups (tests/visa/schedule/double_buffering.py, `software_pipelined`).

The schedule model runs a rolled loop's body once per iteration and overlaps nothing of one
iteration with the next (visa/schedule/loops.py), so a loop of one tile a body runs every
tile's load, contraction and store one after another. Inside one body the steps are
list-scheduled like any others: with two tiles a body, the second tile's loads move on the DMA
context while the first tile is staged and contracted, and the first tile's store moves while
the second is contracted. The body issues, in this order: both tiles' loads, the first tile's
TRF load and contraction, the second's, then both stores. The stores come last so that the
second tile's results do not take the DM the first tile's results free once their store is
issued (a new tensor takes the lowest free address, and its commit would wait for that store).

The paired loop is the inner tile loop, or the outer one when the inner loop has a single
tile (then the body holds two outer steps whole). An odd count runs its last tile after the
paired loop, as one tile. This module decides where the lever applies (`pair_ok`) and writes
the tile loops of a paired kernel (`pair_loops`); synth/gemm_text.py splits the tile's
contraction (`tile`, returning its results) from its store (`store`) for it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PAIRS", "pair_ok", "pair_loops"]

# The lever's values, one tile a body (no overlap) first: ties go to the earlier, simpler kernel.
PAIRS = [False, True]


def paired_trips(mt: int, nt: int, order: str) -> int:
    """The trips of the loop a pair would roll over two tiles a body: the inner tile loop, or
    the outer one when the inner loop has one tile."""
    outer_n, inner_n = (mt, nt) if order == "ij" else (nt, mt)
    return inner_n if inner_n > 1 else outer_n


def pair_ok(g: Any, mt: int, nt: int, order: str, reuse: str, pieces: int, bias: bool) -> bool:
    """Whether geometry `g` with `mt x nt` tiles walked in `order` may roll two tiles a body:
    rolled tile loops (`reuse` "outer" or "none"; "all" keeps Python `for`s, whose tiles the
    model already overlaps), a paired loop of at least two tiles, one piece a tile (`pieces`
    overlap inside a tile what a pair overlaps across two, for two more DMA start-ups a
    tile), `k` not in time blocks (its tile is synth/time_blocks.py's) and no bias (its VRF
    load is kept per column block in a Python dict at the block's first tile)."""
    return (reuse in ("outer", "none") and paired_trips(mt, nt, order) >= 2 and pieces == 1 and g.tb == 1
            and not bias)


def pair_loops(v: dict[str, Any]) -> list[str]:
    """The tile loops of a kernel with two tiles a body (the module docstring); `v` is
    synth/gemm_text.py's `gemm_names`."""
    mt, nt, order, reuse, s_dm, t_dm = v["mt"], v["nt"], v["order"], v["reuse"], v["s_dm"], v["t_dm"]
    outer_n, inner_n = (mt, nt) if order == "ij" else (nt, mt)
    o_name, i_name = ("i", "j") if order == "ij" else ("j", "i")
    o_load, o_var = ("a_block", "a_dm") if order == "ij" else ("w_block", "w_dm")
    i_load, i_var = ("w_block", "w_dm") if order == "ij" else ("a_block", "a_dm")
    inner = inner_n > 1                       # the paired loop: the inner one, else the outer
    whole = not inner or reuse == "none"      # the outer block is loaded with each tile
    keep_trf = not whole and o_var == t_dm    # the TRF holds the outer block, loaded once per outer step

    def tile(o_idx: str, i_idx: str, n: str) -> tuple[list[str], list[str], list[str]]:
        """One tile's loads, its TRF load and contraction, its store (`n` names its variables)."""
        name = {i_var: i_var + n, o_var: o_var + n if whole else o_var}
        at = {o_name: o_idx, i_name: i_idx}
        loads = ([f"{o_var}{n} = {o_load}({o_idx})"] if whole else []) + [f"{i_var}{n} = {i_load}({i_idx})"]
        trf = "trf" if keep_trf else f"trf{n}"
        work = ([] if keep_trf else [f"{trf} = stationary({name[t_dm]})"]) \
            + [f"result{n} = tile({name[s_dm]}, {trf}, {at['i']}, {at['j']})"]
        return loads, work, [f"store(result{n}, {at['i']}, {at['j']})"]

    p_name, p_n = (i_name, inner_n) if inner else (o_name, outer_n)
    pp = p_name * 2
    first, second = (f"2 * {pp}", f"2 * {pp} + 1") if p_n // 2 > 1 else ("0", "1")
    fixed = o_name if inner else "0"          # the other loop's index (or the single inner tile's)
    pair = [tile(fixed, first, "0"), tile(fixed, second, "1")] if inner else \
        [tile(first, fixed, "0"), tile(second, fixed, "1")]
    pad = "        " if inner else "    "
    header = [f"{pad}# pair=True: two tiles a body, the {p_name} loop over pairs of tiles: the second tile's "
              "loads move while",
              f"{pad}# the first is contracted, the first's store while the second is; both stores last"]
    body = header + [f"{pad}for {pp} in ctx.loop({p_n // 2}):"] * (p_n // 2 > 1)
    inside = pad + "    " if p_n // 2 > 1 else pad
    for part in range(3):
        body += [inside + line for t in pair for line in t[part]]
    if p_n % 2:
        tail = tile(fixed, str(p_n - 1), "") if inner else tile(str(p_n - 1), fixed, "")
        body += [f"{pad}# the last of an odd count of tiles, alone"] + [pad + line for part in tail for line in part]
    lines = [f"    # order={order!r}: the outer loop walks {'row' if order == 'ij' else 'column'} blocks; "
             f"reuse={reuse!r}: " + {"outer": "the outer loop's block is loaded once per outer step",
                                     "none": "both blocks are loaded for every tile"}[reuse]]
    if not inner:
        return lines + body
    lines.append(f"    for {o_name} in {'ctx.loop' if outer_n > 1 else 'range'}({outer_n}):")
    if not whole:
        lines.append(f"        {o_var} = {o_load}({o_name})")
        if keep_trf:
            lines.append(f"        trf = stationary({o_var})")
    return lines + body
