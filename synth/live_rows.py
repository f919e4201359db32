"""The store of a result padded along `m` inside the kernel, cut to the rows the user's result
holds (issue 54's efficiency goal; docs/synth.md "Supported contractions").

A result whose rows are padded (300 -> 320) computes the padding rows on the slices that hold
them, and `Contraction.unpad` cuts them from the host array. Storing them costs the DMA Engine
their bytes: on the padded 300 x 200 x 100 `i8` GEMM's `64x2 of 5x128`, 20 rows of 1,024 bytes,
80 of its store's 1,280 requests. Where the padding rows fill whole slices (the real rows a
multiple of the rows a slice holds), the store reads only the slices of real rows
(`slice_tile` of the result's Slice factor along `m`) and writes only the real rows of the
result's host array (a write view whose padding rows are `#{!}`: left alone, as
`Contraction.unpad` drops them).

What it needs, and why each: no epilogue (below), one tile (the store's view is the whole result, cut once), no
batch, one chip and one cluster (the `m` factor is one term of Slice), `k` whole on a slice
(no inter-slice reduce over the Slice mapping), no time blocks, pieces, pairs or TRF halves
(their stores are written elsewhere: synth/time_blocks.py, overlap.py, pairs.py,
both_loads.py). The padding along `n` stays stored: a row of results ending inside a 256-byte
HBM unit is a partial write (synth/spec.py pads the columns for that reason). No epilogue:
its padding rows are `f(0 + b)`, not zero, and synth's check compares the whole host array
with the oracle; without one the rows left alone keep the zeros `Contraction`'s zeroed result
array holds, which are the oracle's (the user's result never includes them: `unpad`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["live_given", "live_cut", "live_rows", "live_store"]


def live_given(spec: Any, mi: str) -> int:
    """The half of `live_rows` the contraction alone decides: the user's rows along `m` (index
    `mi`) when a store may be cut to them (one chip, no batch, no epilogue), else 0."""
    ok = spec.chips == 1 and spec.batch is None and spec.epilogue is None
    return spec.kernel_sizes[mi] if ok else 0


def live_cut(given: int, geo: Any, whole: bool, mt: int, nt: int, pieces_n: int, pair: bool) -> int:
    """The half of `live_rows` a candidate decides: `given` (from `live_given`) when its placement
    `geo` holds them in whole slices of its one tile (`mt` x `nt` tiles; `whole`: the padded `m`
    is a multiple of the tile, not padded to it inside the kernel) and no piece, pair, cluster,
    slice split of `k`, time block or TRF half writes the store elsewhere; else 0 (as when
    `given` is 0)."""
    ok = (whole and mt == nt == 1 and geo.clusters == 1 and geo.sk == 1 and geo.tb == 1
          and not geo.halves and pieces_n == 1 and not pair and given < geo.tm and given % geo.r == 0)
    return given if ok else 0


def live_rows(v: dict[str, Any]) -> int:
    """The result rows candidate `v` (synth/gemm_text.py `gemm_names`) stores when they are
    fewer than its tile's, or 0: the whole tile is stored (the module docstring)."""
    return live_cut(live_given(v["spec"], v["mi"]), v["geo"], bool(v["i_step"]), v["mt"], v["nt"], v["pieces_n"],
                    v["pair"])


def live_store(v: dict[str, Any], result: str) -> list[str]:
    """The store lines of candidate `v` with `live_rows(v)` rows: the slices holding them, into
    the real rows of the result's host array."""
    spec, geo, M, N, K = v["spec"], v["geo"], v["M"], v["N"], v["K"]
    rows = live_rows(v)
    (rn, ridx), factor = spec.result, f"{M} % {geo.tm} / {geo.r}"
    slices = geo.slice_map(M, N, K, v["size"][spec.contracted])
    cut = ", ".join(f"{factor} = {rows // geo.r} # {geo.sm}" if t == factor else t for t in slices.split(", "))
    terms = ", ".join(f"{M} = {rows} #{{!}} {geo.tm}" if i == v["mi"] else i.upper() for i in ridx)
    return [f"        # only the {rows} rows the result holds leave for HBM: the {rows // geo.r} slices holding "
            f"them, not the padding's {geo.sm - rows // geo.r}",
            f'        dst = {rn}.view_mut().tile(m("{M}"), {rows}, m("{terms}"), 0)',
            f'        ({result}.view().slice_tile(m("{factor}"), {rows // geo.r}, m("{cut}"), 0)',
            "         .to_hbm_view(ctx.tdma, dst))"]
