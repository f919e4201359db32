"""Moves inside the chip that `npu-opt synth`'s GEMM candidates make instead of more HBM
traffic or a host copy (docs/synth.md): the Switch Engine broadcast of the stationary `w`
(a `w by switch` placement: each block moves from HBM once, spread over the slices that
share it, and the switch streams the whole block into each one's TRF; a block with fewer
groups of 8 rows than slices is cut into whole rows by synth/row_cut.py), and the Transpose
Engine's transposing load of an operand stored with the contracted index first
(`--transpose device`). `switch_ok` and `switch_piece` decide the geometry; the other
functions write kernel lines from the names of synth/gemm_text.py's `gemm_names`.
"""

from __future__ import annotations

from typing import Any

from ir.dtypes import DType
from synth.row_cut import row_cut_fetch, row_cut_held, row_cut_names, row_cut_text
from synth.tiling import Geometry
from tu_ops.target import Constants, rngd

__all__ = ["device_transpose", "switch_cut_text", "switch_fetch", "switch_held", "switch_names", "switch_ok",
           "switch_piece", "switch_w_block"]


def switch_ok(g: Geometry, k: int, elem: int, const: Constants | None = None) -> bool:
    """Whether the stationary `w` of geometry `g` may be spread over its `sm` slices and
    broadcast by the Switch Engine: `k` whole on a slice or in time blocks (a `k` split over
    slices puts its chunks on the innermost slice factor the broadcast needs), more than one
    slice along m, and the block (of each time block's chunk of `k`) cut into `sm` pieces
    (`switch_piece`)."""
    return g.sk == 1 and g.sm > 1 and switch_piece(g, k, elem, const) is not None


def switch_piece(g: Geometry, k: int, elem: int, const: Constants | None = None) -> tuple[int, int] | None:
    """How a `switch` block of w (`c` rows; `k` whole, or with `k` in `tb` time blocks each
    block's chunk of `k / tb`: the chunk stands for `k` below) is cut over its `sm` slices, as
    (groups, pieces): the block's `c / 8` groups of 8 rows (one per lane) go to `groups`
    slices, each slice holding every `groups`-th group, and `k` to `pieces` slices, each
    holding a piece of `k / pieces` (`groups * pieces == sm`). The rows are cut first (the
    DMA's packets stay whole rows of `k`), `k` only when the block has fewer groups than
    slices; a piece of `k` is whole 32-byte flits (the switch moves 8-byte words,
    SWITCH-18, and collect cuts the pieces into flits). None: no cut fits."""
    const = const or rngd().constants
    k //= g.tb
    rows = g.c // 8
    groups = g.sm if rows % g.sm == 0 else rows if g.sm % rows == 0 else 0
    if not groups:
        return None
    pieces = g.sm // groups
    if k % pieces or (k // pieces) * elem % const.FLIT_BYTES:
        return None
    return groups, pieces


def switch_names(v: dict[str, Any], k: int, elem: int) -> None:
    """Add to `v` how its `w by switch` block is cut (`groups` of 8 rows and `pieces` of `k`,
    or of a time block's chunk of it, `kpiece` elements each) and the WSlice factors that
    name a slice's piece."""
    geo, Kl = v["geo"], v["Kl"]
    groups, pieces = switch_piece(geo, k, elem)
    T = v["N"] if v["stationary_w"] else v["M"]
    chunk = k // geo.tb  # with `k` in time blocks, each block's chunk is cut (`Kl` is `K % chunk`)
    v["groups"], v["pieces"], v["kpiece"] = groups, pieces, chunk // pieces
    v["piece_slice"] = ", ".join([f"{T} / 8 % {groups}"] * (groups > 1) + [f"{Kl} / {chunk // pieces}"] * (pieces > 1))
    # fewer groups than slices: whole rows a slice where they can be (synth/row_cut.py), not pieces of every group
    v["cut_rows"] = 0
    row_cut_names(v, k, elem)


def switch_cut_text(v: dict[str, Any]) -> str:
    """What one slice holds of a `w by switch` block (the WSlice comment)."""
    if v["cut_rows"]:
        return row_cut_text(v)
    geo = v["geo"]
    return " and ".join([f"1/{geo.sm} of its groups of 8 rows"] * (v["groups"] == geo.sm)
                        + [f"one of its {v['groups']} groups of 8 rows"] * (1 < v["groups"] < geo.sm)
                        + [f"a piece of {v['kpiece']} of {v['K']}"] * (v["pieces"] > 1))


def device_transpose(v: dict[str, Any], name: str, X: str, rows: int, var: str, stored: str) -> list[str]:
    """The row block of operand `name` stored with `k` first (`b[k,n]`, read as stored: the
    DMA moves each slice's `k` rows of its `rows` values), transposed by the Transpose Engine
    into the kernel's layout, `rows` rows of `k` (`k` innermost, as the fetches read it):
    each packet carries 16 (or 8) values of a `k` row, the engine turns 8 `i8` (4 `bf16`) rows
    of `k` into one packet of each column, and commit writes them in place. `stored` is the
    `.tile(...)` chain that picks the block from the HBM view."""
    K, din, flit = v["K"], v["din"], v["flit"]
    cols = 16 if rows % 16 == 0 else 8
    krows = 8 // (DType(din).bits // 8)
    packet = f"{X} % {cols}" + (f" # {flit}" if cols < flit else "")
    groups = f"{X} % {rows} / {cols}, " if rows > cols else ""  # packets of `cols` values across the block
    return [f"        # block {var} of {name} ({rows} of its {X.split()[0]} per slice) read as stored, {K} first: "
            f"the Transpose Engine",
            f"        # turns each slice's {K} x {rows} block into {rows} rows of {K} ({K} innermost, as the fetches "
            "read it)",
            f'        stored = {name}.view(){stored}',
            f'        held = stored.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{K}, {X} % {rows}")])',
            "        return (ctx.main.begin(held.view())",
            f'                .fetch(m("{groups}{K}"), m("{X} % {cols}"))',
            f'                .collect(m("{groups}{K}"), m("{packet}"))',
            f'                .transpose(m("{groups}{K} / {krows}, {X} % {cols}"), m("{K} % {krows} # {flit}"))',
            f'                .commit_trim(m("{K} % {krows}"))',
            f'                .commit(m("{X} % {rows}, {K}")))']


def switch_w_block(v: dict[str, Any], rows_chain: str) -> list[str]:
    """A `w by switch` block of w: moved from HBM once, each of the slices sharing it holding
    one piece (WSlice): its groups of 8 rows, with their `k` or a piece of it. `rows_chain`
    picks the block from the HBM view."""
    wn, sm = v["wn"], v["geo"].sm
    return [f"        # row block j of {wn} ({v['tn']} rows) moved once: each of the {sm} slices sharing a block "
            "holds one piece",
            f'        rows = {wn}.view(){rows_chain}',
            f'        return rows.to_dm(ctx.tdma, DmTensor[{v["din"]}, Chip, Cluster, WSlice, m("{switch_held(v)}")])']


def switch_held(v: dict[str, Any]) -> str:
    """The element mapping of a slice's piece of a `w by switch` block in DM: its groups of 8
    rows, with their `k` (a time block's chunk, `Kl`) or a piece of it (or its whole rows,
    synth/row_cut.py)."""
    if v["cut_rows"]:
        return row_cut_held(v)
    N, g = v["N"], v["g"]
    return ", ".join([f"{N} % 8"] + [f"{N} / {8 * v['groups']} % {g // v['groups']}"] * (g > v["groups"])
                     + [f"{v['K']} % {v['kpiece']}" if v["pieces"] > 1 else v["Kl"]])


def switch_fetch(v: dict[str, Any], pad: str = " " * 16) -> list[str]:
    """The fetch and switch of a `w by switch` TRF load: each slice fetches its piece, the
    Switch Engine moves the piece's slice factors into the innermost Time (BROADCAST1 over the
    `sm` slices side by side on the ring), so every slice streams the whole block. `pad`
    indents the lines. A block cut into whole rows: synth/row_cut.py's."""
    if v["cut_rows"]:
        return row_cut_fetch(v, pad)
    T, g, K, Kl, sm, groups = v["T"], v["g"], v["K"], v["Kl"], v["geo"].sm, v["groups"]
    fetched = ", ".join([f"{T} % 8"] + [f"{T} / {8 * groups} % {g // groups}"] * (g > groups))
    packet = f"{K} % {v['kpiece']}" if v["pieces"] > 1 else Kl
    after = f"{T} % 8, {T} / 8 % {g}" + (f", {Kl} / {v['kpiece']}" if v["pieces"] > 1 else "")
    # with `a` switched too, the n factor is innermost (synth/stream_switch.py): the sub-ring is every
    # slice of the tile and the pieces go to the slices of their column, `sn` apart
    sn = v["geo"].sn if v["geo"].a_switch else 1
    ring = (f"sub-ring of {sm * sn} slices into the {sm} of their column" if sn > 1
            else f"sub-ring of {sm} slices into each of them")
    return [f'{pad}.fetch(m("{fetched}"), m("{packet}"))',
            f"{pad}# the {sm} pieces go around their {ring}",
            f'{pad}.switch(Slice, m("{after}"), SwitchConfig.BROADCAST1(slice1={sm}, slice0={sn}))']
