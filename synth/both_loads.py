"""The TRF loaded by both contexts (docs/synth.md "w by switch"): a `w by switch` block
whose broadcast into the TRF outlasts the streamed operand's DMA, loaded as two halves of
`k` at once, the sub context one and the main context the other.

A `w by switch` TRF load costs the block's flits through the Switch Engine (`ring_size x
Time x flits`, tu_ops/switch.py) on one context: a slice holding 512 rows of 128 `i8` (64 KB,
`256x1 of 2x512`) loads for 290 + 2,048 cycles while the streamed `a` moves in 1,512, so
the contraction waits for the TRF (the two-chip 1024 x 512 x 128 GEMM: 15,844 cycles). TRF
loads run in any context (`to_trf`), and the TRF holds the whole block, so the block is
loaded as two tensors, each its rows with half of `k`: the sub context switches the first
half while the main context switches the second (each `ring x Time x flits / 2`), and the
main context then contracts each half against the matching half of the streamed rows, the
first's sums waiting in the VRF for the second to add them on the Vector Engine (as `k`
in time blocks does, synth/time_blocks.py), which commits. The DMAs are the whole-`k`
placement's: `w` moved once, `a` in one DMA, its halves tiles of it in DM. Two programs of
half the contraction follow the last load instead of one (a start-up more) where the TRF
waited longer: the two-chip GEMM 15,844 -> 15,308 cycles (1.137 of its roofline; its best
whole-`k` kernel, `128x2 of 4x256, w by switch`, 15,530 copies `a` to two slices).

`both_placements` gives the twins (", TRF loaded by main and sub") of the space's `w by
switch` placements where this applies (`both_ok`); the space appends them after every other
placement, so the others keep their indices. `both_stationary` and `both_tile` write the
kernel text from the names of synth/gemm_text.py's `gemm_names`.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

from synth.onchip import switch_fetch, switch_held, switch_piece
from synth.row_cut import row_cut
from synth.tiling import Geometry
from tu_ops.target import Constants, rngd

__all__ = ["both_ok", "both_placements", "both_stationary", "both_tile", "lone_switch"]

HALVES = 2  # the contexts that load the TRF at once: main and sub


def both_ok(spec: Any, g: Geometry, m: int, n: int, const: Constants | None = None) -> bool:
    """Whether `g` (of `spec`'s m x n result) may load its TRF on both contexts: `w by switch`
    alone on one cluster with `k` whole on a slice and not cut over the slices that share the
    block (each holds whole rows of every `k`), one tile, no batch, epilogue or device
    transpose (the text covers the plain GEMM); each half of `k` whole 32-byte flits and whole
    64-byte packets (both packet values), one accumulator of the block's sums in the VRF; and
    a block of at least half the TRF, whose load (1,024 or more cycles) can outlast a DMA."""
    const = const or rngd().constants
    elem = 1 if spec.dtype_in == "i8" else 2
    k = spec.padded[spec.contracted]
    if not lone_switch(spec, g, m, n):
        return False
    cut = row_cut(g, k, elem, const)
    pieces = cut[1] if cut is not None else (switch_piece(g, k, elem, const) or (0, 0))[1]
    half = k // HALVES * elem
    return (pieces == 1 and k % HALVES == 0 and half % 64 == 0 and g.r * g.c * 4 <= const.VRF_BYTES
            and 2 * g.c * k * elem >= const.TRF_BYTES)


def lone_switch(spec: Any, g: Geometry, m: int, n: int) -> bool:
    """Whether `g` is a `w by switch` placement alone (not `a by switch`, nor this module's
    twin; one cluster, `k` neither over slices nor in time blocks, no batch on the slices)
    whose one tile is `spec`'s whole m x n result, and `spec` a plain GEMM (no batch, epilogue
    or device transpose): what `both_ok` and synth/trf_double.py's `double_placements` start
    from."""
    return (g.switch and not g.a_switch and not g.halves and (g.sk, g.tb, g.sb, g.clusters) == (1, 1, 1, 1)
            and spec.batch is None and spec.epilogue is None and not spec.device_transposed
            and (g.tm, g.tn) == (m, n))


def both_placements(spec: Any, m: int, n: int, placements: list[Geometry]) -> list[Geometry]:
    """The twins of `placements` that load their TRF on both contexts (`both_ok`)."""
    return [attrs.evolve(g, halves=True) for g in placements if both_ok(spec, g, m, n)]


def _half(v: dict[str, Any]) -> str:
    """The `k` of one half, as a mapping term."""
    return f"{v['K']} % {v['size'][v['spec'].contracted] // HALVES}"


def both_stationary(v: dict[str, Any]) -> list[str]:
    """`stationary(block)`: the TRF tensors of the block's halves of `k`, the first loaded by the
    sub context, the second by the main context (before its contractions, so the two run at once)."""
    K, T, g, flit = v["K"], v["T"], v["g"], v["flit"]
    half, chunk = _half(v), v["size"][v["spec"].contracted] // HALVES
    rows = switch_held(v)[:-len(v["Kl"])]  # the slice's share of the block, its `k` (Kl) last
    pad = " " * 16
    return ["    def stationary(block):",
            f"        # trf={v['p']['trf']!r}, loaded by main and sub: the block's {v['rt']} rows per slice go to the "
            f"TRF (8 lanes x {g} rows",
            f"        # each) as {HALVES} tensors of half of {K} each, the sub context switching the first half while "
            "the main",
            "        # context switches the second; the contraction reads each against its half of the stream",
            f"        return [((ctx.sub, ctx.main)[t].begin(block.view().tile(m(\"{K} / {chunk}\"), 1, "
            f"m(\"{rows}1 # {HALVES}, {half}\"), t))",
            *switch_fetch(v | {"Kl": half}, pad),
            f'{pad}.collect(m("{T} % 8, {T} / 8 % {g}, {half} / {flit}"), m("{K} % {flit}"))',
            f'{pad}.to_trf(m("{T} % 8"), m("{T} / 8 % {g}, {half}")))',
            f"                for t in range({HALVES})]",
            ""]


def both_tile(v: dict[str, Any], dst: list[str], work: Callable[[str], list[str]]) -> list[str]:
    """`tile(streamed, trf, i, j)`: each half of `k` contracted on the main context against its
    TRF tensor, the first half's sums kept in the VRF and added by the second, which commits
    (and rounds a `bf16` result once); then the store. `work(Kl)` is the contraction's steps
    on a half (gemm_text.py's `contraction_chain`), `dst` the tile of the result's write view."""
    S, T, K, rs, rt, g, packet = (v[x] for x in ("S", "T", "K", "rs", "rt", "g", "packet"))
    half, chunk = _half(v), v["size"][v["spec"].contracted] // HALVES
    f32 = v["dout"] != "i32"
    add = "vector_clip(ClipBinaryOpF32.ADD, acc)" if f32 else "vector_fxp(FxpBinaryOp.ADD_FXP, acc)"
    cast = [f'.cast(bf16, m("{T} % 8 # 16"))  # f32 sums rounded to bf16 once, at the end'] \
        if v["dout"] == "bf16" else []
    pad = " " * 20
    return ["    def tile(streamed, trf, i, j):",
            f"        # packet={packet}: each contraction step multiplies {packet} elements of {K} "
            f"({packet * (1 if v['din'] == 'i8' else 2)} bytes, OUTER-3); the time loop sums the rest;",
            f"        # each half of {K} against its TRF tensor, the first half's sums waiting in the VRF",
            "        acc = None",
            f"        for t in range({HALVES}):",
            f"            part = (ctx.main.begin(streamed.view().tile(m(\"{K} / {chunk}\"), 1, "
            f"m(\"{S} % {rs}, 1 # {HALVES}, {half}\"), t))",
            *[line.replace("(trf,", "(trf[t],") for line in work(half)],
            f"{pad}.vector_init()",
            f"{pad}.vector_intra_slice_tag(TagMode.ZERO))",
            "            if acc is not None:",
            f"                part = part.{add}  # + the first half's sums",
            "            part = part.vector_final()",
            f"            if t < {HALVES - 1}:",
            f'                acc = part.to_vrf(m("{S} % {rs}, {T} / 8 % {g}, {T} % 8"))',
            "        result = part",
            *[f"        result = result{call}" for call in cast],
            f'        result = result.commit_trim(m("{T} % 8")).commit(m("{S} % {rs}, {T} % {rt}"))',
            *([f"        dst = ({v['spec'].result[0]}.view_mut()",
               *[f"               {call})" if k == len(dst) - 1 else f"               {call}"
                 for k, call in enumerate(dst)]] if dst else [f"        dst = {v['spec'].result[0]}.view_mut()"]),
            "        result.view().to_hbm_view(ctx.tdma, dst)",
            ""]
