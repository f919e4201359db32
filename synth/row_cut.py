"""The whole-row cut of a `w by switch` block (docs/synth.md "w by switch"): where the block
has fewer groups of 8 rows than slices share it, each slice holds a run of neighbouring
whole rows of `w` instead of every group's piece of `k`, so its DMA moves rows (one run of
`rows x k` bytes in HBM) where the piece cut moved 32- or 64-byte pieces of `k`, each charged
a whole DMA request.

The TRF wants its lanes outermost in the stream's Time (TRF-4: lane `T % 8`, then the rows of
a lane, `T / 8 % g`), and a switch appends the slice digits it moves to Time. A slice holding
`h < 8` neighbouring rows has fetched the lowest digits of the lane (`T % h`), so the slice
digits must land on both sides of them: the lane's high digits (`T / h % (8 / h)`) outside,
the lane's rows (`T / 8 % g`) inside. That is BROADCAST01's frame, `out_time = [time1,
slice1, time0, slice0]`: slice1 the lane's high digits, time0 the `h` fetched rows, slice0
the lane's rows (ir/switch/README.md), every digit of the `sm` slices sharing the block
broadcast, so its ring is the `sm` slices side by side as BROADCAST1's is. With one row a
slice (`h = 1`) the digits are already in order and BROADCAST1 moves them; with fewer rows
than slices (`c < sm`) each slice holds a piece of one row's `k`, `sm / c` pieces a row, the
pieces' digit innermost. The switch costs what the piece cut's costs (`ring_size x Time x
flits` is the block's flits either way); only the DMA's requests change.

Not with `a` switched as well: its n factor is then innermost on the ring
(synth/stream_switch.py), and BROADCAST01 broadcasts its slice0 where that factor must stay.
`row_cut` decides the geometry; the other functions write kernel text from the names of
synth/gemm_text.py's `gemm_names`, as synth/onchip.py's do for the piece cut.
"""

from __future__ import annotations

from typing import Any

from tu_ops.target import Constants, rngd

__all__ = ["row_cut", "row_cut_fetch", "row_cut_held", "row_cut_names", "row_cut_text"]


def row_cut(g: Any, k: int, elem: int, const: Constants | None = None) -> tuple[int, int] | None:
    """How the `c` rows of a `w by switch` block of geometry `g` are cut over its `sm` slices
    as whole rows, as (rows, pieces): each slice holds `rows` neighbouring rows (`c / sm`),
    or, with fewer rows than slices, one row's piece of `k` (of a time block's chunk of it,
    `k / tb`) cut in `pieces` (`sm / c`) of whole 32-byte flits. None where the block has at
    least one group of 8 rows a slice (synth/onchip.py's cut moves whole rows already), with
    `a` switched too, or no cut fits."""
    const = const or rngd().constants
    groups = g.c // 8
    if not g.switch or g.a_switch or g.sk != 1 or groups >= g.sm or g.sm % groups:
        return None
    rows, pieces = max(1, g.c // g.sm), max(1, g.sm // g.c)
    chunk = k // g.tb
    if chunk % pieces or (chunk // pieces) * elem % const.FLIT_BYTES:
        return None
    return rows, pieces


def row_cut_names(v: dict[str, Any], k: int, elem: int) -> bool:
    """Add to `v` the whole-row cut of its `w by switch` block where `row_cut` applies
    (`cut_rows` rows a slice, `pieces` of `k` or of a time block's chunk, `kpiece` elements
    each, and the WSlice factors naming a slice's share, `piece_slice`); False where it does
    not."""
    geo, T, Kl = v["geo"], v["T"], v["Kl"]
    cut = row_cut(geo, k, elem)
    if cut is None:
        return False
    rows, pieces = cut
    chunk = k // geo.tb
    v["cut_rows"], v["pieces"], v["kpiece"] = rows, pieces, chunk // pieces
    lane_high = f"{T} / {rows} % {8 // rows}" if rows > 1 else f"{T} % 8"
    v["piece_slice"] = ", ".join([lane_high] + [f"{T} / 8 % {v['g']}"] * (v["g"] > 1)
                                 + [f"{Kl} / {chunk // pieces}"] * (pieces > 1))
    return True


def row_cut_text(v: dict[str, Any]) -> str:
    """What one slice holds of a block cut into whole rows (the WSlice comment)."""
    if v["pieces"] > 1:
        return f"a piece of {v['kpiece']} of {v['K']} of one of its rows"
    return f"{v['cut_rows']} neighbouring whole rows" if v["cut_rows"] > 1 else "one whole row"


def row_cut_held(v: dict[str, Any]) -> str:
    """The element mapping of a slice's share of a block cut into whole rows, in DM: its
    neighbouring rows with their `k` (a time block's chunk, `Kl`), or one row's piece of it."""
    rows = v["cut_rows"]
    return ", ".join([f"{v['N']} % {rows}"] * (rows > 1)
                     + [f"{v['K']} % {v['kpiece']}" if v["pieces"] > 1 else v["Kl"]])


def row_cut_fetch(v: dict[str, Any], pad: str) -> list[str]:
    """The fetch and switch of a TRF load from a block cut into whole rows: each slice fetches
    its rows, and the switch puts the lane's high digits outside them and the lane's rows
    inside (BROADCAST01; BROADCAST1 for one row a slice), so the TRF's lanes come first."""
    T, g, K, Kl, sm = v["T"], v["g"], v["K"], v["Kl"], v["geo"].sm
    rows, pieces = v["cut_rows"], v["pieces"]
    packet = f"{K} % {v['kpiece']}" if pieces > 1 else Kl
    after = f"{T} % 8, {T} / 8 % {g}" + (f", {Kl} / {v['kpiece']}" if pieces > 1 else "")
    if rows > 1:
        config = f"SwitchConfig.BROADCAST01(slice1={8 // rows}, slice0={sm * rows // 8}, time0={rows})"
        note = (f"{pad}# each slice's {rows} rows go around their sub-ring of {sm} slices into each of them, "
                f"between the lane's")
        note2 = f"{pad}# high digits (slice1) and its rows (slice0): the lanes come first, as the TRF takes them"
    else:
        config = f"SwitchConfig.BROADCAST1(slice1={sm}, slice0=1)"
        note = f"{pad}# each slice's {'piece of a row' if pieces > 1 else 'row'} goes around their sub-ring of {sm} " \
               "slices into each of them"
        note2 = None
    fetched = f"{T} % {rows}" if rows > 1 else "1"  # one row a slice: a single step
    return [f'{pad}.fetch(m("{fetched}"), m("{packet}"))',
            note, *([note2] if note2 else []),
            f'{pad}.switch(Slice, m("{after}"), {config})']
