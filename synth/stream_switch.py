"""The `a by switch` placements of `npu-opt synth` (docs/synth.md): the streamed operand `a`
shared by the slices of a tile's row, moved from HBM once and broadcast on chip.

With DMA copies each block of `a` (a slice's `r` rows with their whole `k`) reaches each of
the `sn` slices of its row of the tile as its own copy. Here the block is cut into `sn`
pieces of `k` (whole 32-byte flits each), one per slice (`ASlice` puts the piece where
`Slice` has the n factor), and the contraction's stream fetches the pieces through the
Switch Engine, `BROADCAST1(slice1=sn, slice0=1)`: each slice streams the whole block past
its TRF. The n factor is the innermost slice factor of these placements (`Slice` is the m
factor, then the n factor), so the sub-ring is the `sn` slices side by side and the switch
costs what the plain fetch costs (`ring_size x Time x flits` = the block's flits per pass).

With `w by switch` as well (`a and w by switch`), w's block is cut over its `sm` slices as
synth/onchip.py cuts it, but those slices are now the outer factor of the ring: its
broadcast is `BROADCAST1(slice1=sm, slice0=sn)` over sub-rings of `sm x sn` slices, `sn`
times what fetching the block from a slice's own DM costs. Its TRF load runs on the sub
context while `a` moves, so it pays where `a`'s copies cost more than that: the search
ranks them. `stream_ok` and `stream_piece` decide the geometry; the other functions write
kernel lines from the names of synth/gemm_text.py's `gemm_names`.
"""

from __future__ import annotations

from typing import Any

import attrs

from synth.onchip import switch_ok
from tu_ops.target import Constants, rngd

__all__ = ["stream_a_block", "stream_fetch", "stream_mapping", "stream_names", "stream_ok", "stream_piece",
           "with_stream_switch"]


def stream_piece(g: Any, k: int, elem: int, const: Constants | None = None) -> int | None:
    """The piece of `k` each of the `sn` slices sharing a block of `a` holds (elements): `k`
    cut into `sn` pieces of whole 32-byte flits (collect cuts the switched stream into flits;
    a piece under a flit would be charged a whole one), or None."""
    const = const or rngd().constants
    if k % g.sn or (k // g.sn) * elem % const.FLIT_BYTES:
        return None
    return k // g.sn


def stream_ok(g: Any, k: int, elem: int, const: Constants | None = None) -> bool:
    """Whether `a` of geometry `g` may be spread over the `sn` slices of its row and broadcast:
    `k` whole on a slice and in one block (a split `k`'s chunks take the innermost slice
    factor; time blocks stream chunks of their own), more than one slice along n, and `k`
    cut into `sn` whole-flit pieces."""
    return g.sk == 1 and g.tb == 1 and g.sn > 1 and stream_piece(g, k, elem, const) is not None


def with_stream_switch(placements: list[Any], m: int, n: int, k: int, elem: int) -> list[Any]:
    """`placements` followed by the `a by switch` twin of each distinct base placement (its
    `w by switch` twin's base too) where `stream_ok`, and its `a and w by switch` twin where
    w's block can also be cut over its `sm` slices (`switch_ok`); the `a by switch` twin then
    only where it moves fewer bytes than the `w by switch` one. Not a result padded along n
    inside the kernel: the switch's copies land on the n factor of the stream's Slice, and a
    padded factor cannot take them (SWITCH-11); for both, nor along m (onchip's reason)."""
    twins, seen = [], set()
    for g in placements:
        base = attrs.evolve(g, switch=False, a_switch=False)
        if base in seen or n % base.tn or not stream_ok(base, k, elem):
            continue
        seen.add(base)
        w_too = m % base.tm == 0 and switch_ok(base, k, elem)
        # alone (w copied to its `sm` slices), only where that moves fewer bytes than `w by switch`
        # (a copied to its `sn`): in the model it cannot win otherwise, and would only cost a compile
        if not w_too or base.sm * base.tn < base.sn * base.tm:
            twins.append(attrs.evolve(base, a_switch=True))
        if w_too:
            twins.append(attrs.evolve(base, a_switch=True, switch=True))
    return placements + [t for t in twins if t not in placements]


def stream_names(v: dict[str, Any], k: int, elem: int) -> None:
    """Add to `v` the piece of `k` each slice holds of a switched block of `a` (`akpiece`)."""
    v["akpiece"] = stream_piece(v["geo"], k, elem)


def stream_mapping(v: dict[str, Any]) -> list[str]:
    """The kernel file's `ASlice` mapping and the comment on it."""
    geo, M, K, an = v["geo"], v["M"], v["K"], v["an"]
    aslice = geo.switch_slices(f"{M} % {geo.tm // geo.clusters} / {geo.r}", f"{K} / {v['akpiece']}",
                               (v["bi"] or "").upper())
    return [f"# a by switch: each block of {an} moves from HBM once, spread over the {geo.sn} slices that share it "
            f"(a piece of {v['akpiece']}",
            f"# of {K} each; ASlice puts the piece where Slice has {v['N']}); the contraction's stream fetches the "
            "pieces through the",
            f"# Switch Engine around their sub-ring of {geo.sn} slices, instead of one DMA copy per slice",
            f'ASlice = m("{aslice}")']


def stream_a_block(v: dict[str, Any], rows_chain: str) -> list[str]:
    """An `a by switch` block of `a`: moved from HBM once, each of the `sn` slices sharing it
    holding one piece of `k` of its rows (ASlice). `rows_chain` picks the block from the HBM
    view."""
    an, M, K, r = v["an"], v["M"], v["K"], v["r"]
    return [f"        # row block i of {an} ({v['tm']} rows) moved once: each of the {v['geo'].sn} slices sharing a "
            f"block holds its {r} rows' piece of {K}",
            f"        rows = {an}.view(){rows_chain}",
            f'        return rows.to_dm(ctx.tdma, DmTensor[{v["din"]}, Chip, Cluster, ASlice, '
            f'm("{M} % {r}, {K} % {v["akpiece"]}")])']


def stream_fetch(v: dict[str, Any], pad: str) -> list[str]:
    """The stream's fetch and switch of an `a by switch` contraction: each slice fetches its
    piece for every row of the block and every group of TRF rows, and the Switch Engine moves
    the piece's slice factor into the innermost Time (BROADCAST1 over the `sn` slices side by
    side on the ring), so every slice streams the whole block."""
    S, T, K, rs, g, sn, kp = v["S"], v["T"], v["K"], v["rs"], v["g"], v["geo"].sn, v["akpiece"]
    return [f'{pad}.fetch(m("{S} % {rs}, {T} / 8 % {g}"), m("{K} % {kp}"))',
            f"{pad}# the {sn} pieces of the block go around their sub-ring of {sn} slices into each of them",
            f'{pad}.switch(Slice, m("{S} % {rs}, {T} / 8 % {g}, {K} / {kp}"), '
            f"SwitchConfig.BROADCAST1(slice1={sn}, slice0=1))"]
