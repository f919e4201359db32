"""The tile loops of `npu-opt synth`'s candidates: the loops that walk a GEMM's tiles of the
result and call the tile synth/gemm_text.py writes (the `order` and `reuse` levers), and the
`for` line a GEMV's passes share with them (synth/gemv.py). A loop is rolled with `ctx.loop`
(traced once, docs/loops.md) where it can be, else a Python `for` that traces every tile.
`v` is the dictionary of names and numbers of gemm_text.py's `gemm_names`.
"""

from __future__ import annotations

from typing import Any

from synth.overlap import bias_first, one_tile_pieces
from synth.pairs import pair_loops
from synth.trf_double import double_loops

__all__ = ["loop_header", "tile_loops"]


def loop_header(var: str, n: int, rolled: bool) -> str:
    """A tile loop's `for` line: a rolled `ctx.loop` (traced once, docs/loops.md) or a Python
    `for` (unrolled, every tile traced on its own)."""
    return f"for {var} in {'ctx.loop' if rolled else 'range'}({n}):"


def tile_loops(v: dict[str, Any]) -> list[str]:
    """The tile loop: its order and which loaded blocks it keeps (`reuse`).

    Both tile loops are rolled (`ctx.loop`, a loop of one tile excepted): the result's tile
    takes its two runtime starts from them (docs/loops.md), so a candidate is traced, checked
    and written once whatever the result's size (the batch loop stays a Python `for`: its
    tile of the result would be a third start). `reuse="all"` keeps both loops Python
    `for`s: its blocks are Python lists indexed by the tile numbers, which a loop index (not
    a Python int) cannot index."""
    mt, nt, order, reuse, s_dm, t_dm = v["mt"], v["nt"], v["order"], v["reuse"], v["s_dm"], v["t_dm"]
    if v["geo"].double:
        return double_loops(v)
    if mt * nt == 1 and (v["pieces_n"] > 1 or bias_first(v)):
        return one_tile_pieces(v)
    if v["pair"]:
        return pair_loops(v)
    if mt * nt == 1:
        first, then = ("w", "a") if t_dm == "w_dm" else ("a", "w")
        return ["    # one tile: load both operands once (the stationary one first: its TRF load runs while the other",
                "    # moves) and contract",
                f"    {first}_dm = {first}_block(0)",
                f"    {then}_dm = {then}_block(0)",
                f"    tile({s_dm}, stationary({t_dm}), 0, 0)"]
    outer_n, inner_n = (mt, nt) if order == "ij" else (nt, mt)
    o_name, i_name = ("i", "j") if order == "ij" else ("j", "i")
    body = [f"    # order={order!r}: the outer loop walks {'row' if order == 'ij' else 'column'} blocks; "
            f"reuse={reuse!r}: " + {"all": "every block is loaded once, before the loops",
                                    "outer": "the outer loop's block is loaded once per outer step",
                                    "none": "both blocks are loaded for every tile"}[reuse]]
    if reuse == "all":
        w = v["stationary_w"]
        return body + [f"    a_all = [a_block(i) for i in range({mt})]",
                       f"    w_all = [w_block(j) for j in range({nt})]",
                       f"    trf_all = [stationary(blk) for blk in {'w_all' if w else 'a_all'}]",
                       f"    {loop_header(o_name, outer_n, False)}",
                       f"        {loop_header(i_name, inner_n, False)}",
                       f"            tile({'a_all[i]' if w else 'w_all[j]'}, trf_all[{'j' if w else 'i'}], i, j)"]
    body.append("    # both loops are rolled (traced once): the result's tile takes its two runtime starts from them")
    o_load, o_var = ("a_block(i)", "a_dm") if order == "ij" else ("w_block(j)", "w_dm")
    i_load, i_var = ("w_block(j)", "w_dm") if order == "ij" else ("a_block(i)", "a_dm")
    o_is_trf = o_var == t_dm
    body += [f"    {loop_header(o_name, outer_n, outer_n > 1)}"]
    if reuse == "outer":
        body.append(f"        {o_var} = {o_load}")
        if o_is_trf:
            body.append(f"        trf = stationary({o_var})")
    body.append(f"        {loop_header(i_name, inner_n, inner_n > 1)}")
    if reuse == "none":
        body.append(f"            {o_var} = {o_load}")
    body.append(f"            {i_var} = {i_load}")
    if reuse == "none" or not o_is_trf:
        body.append(f"            trf = stationary({t_dm})")
    body.append(f"            tile({s_dm}, trf, i, j)")
    return body
