"""The bias of a `w by switch` candidate moved from HBM once per column block and broadcast into
the slices' Vector Register Files by the Switch Engine (docs/synth.md "Epilogues", issue 54's
efficiency goal), instead of one DMA copy per slice of the block's column.

Each slice adds the bias values of its `c` result columns: `c / 8` flits of 4-byte values
(an `i32` or `f32` bias). With a copy per slice, a tile of `sm` slices along `m` moves the
block's `4c` bytes `sm` times (the 512 x 512 x 128 epilogue of bench_synth.py: 128 KB, 512
DMA cycles). Here the `c / 8` flits are spread over `c / 8` neighbouring slices of the
column's `sm`, one flit each (`BSlice`: the flit index on the inner digits of the `m` factor
of Slice; its outer `sm * 8 / c` digits, if any, a `1 # n` padding digit: those slices hold
nothing), and the VRF load's stream goes through the switch: each slice fetches its one flit,
the switch moves the flit digit into Time, so every slice collects the block's `c / 8` flits
in order (the bias's `N % c` element order). With no padding digit that is BROADCAST1 over
the `c / 8` slices; with one, CUSTOM_BROADCAST over all `sm` (the ring holding every slice
that reads those flits: the switch drops the padding digit, which SWITCH-10 allows for
padding alone, and fills the `m` factor's slots of Slice with copies, a tile SWITCH-11
refuses when that factor is padded, as it refuses `w`'s own switch there). A slice holds a whole flit because collect pads each packet of the stream to
one (COLLECT-3: its packet is the stream's first flit): a bias spread over all `sm` slices
would hold `4c / sm` bytes a slice, 16 on that epilogue, and each would reach the VRF as a
flit half padding. The DMA hands one packet, one 32-byte request, to each of the `c / 8`
slices only, not `c / 64` requests to every slice: 64 DMA cycles on that epilogue (256 when
every slice along `m` held a copy of its flit). The switch charges `ring_size x Time x flits`
(`sm` cycles for the one-flit stream, 128 there instead of 32) to the VRF load on main,
which runs under `a`'s DMA; it leaves out what loading CUSTOM_BROADCAST's snoop bitmap
costs the DMA engine and the sub context (docs/machine/switch.md), which BROADCAST1 does not
need.

`bias_ring` says where it applies: a bias, `w by switch` alone (the Slice mapping puts the
`m` factor innermost, synth/tiling.py `switch_slices`), one cluster, the columns not padded
inside the kernel (the flit digits are digits of `N`) and at least as many slices along `m`
as the block has flits of bias.
"""

from __future__ import annotations

from typing import Any

__all__ = ["bias_ring", "bias_slice", "bias_span"]


def bias_ring(v: dict[str, Any]) -> int:
    """The switch ring of candidate `v`'s bias (synth/gemm_text.py `gemm_names`): the flits of a
    column block's bias, or 0 when the bias moves by DMA copies (the module docstring)."""
    spec, geo = v["spec"], v["geo"]
    if spec.epilogue is None or spec.epilogue.bias is None:
        return 0
    flits = v["c"] // 8
    ok = geo.switch and not geo.a_switch and geo.clusters == 1 and "#" not in v["N"] and geo.sm % flits == 0
    return flits if ok else 0


def bias_slice(v: dict[str, Any]) -> str:
    """BSlice, the Slice mapping of the bias in DM: Slice's, with the `m` factor's inner digits
    the flit of the bias a slice holds and its outer digits (if any) padding: the first of
    each `ring` slices' groups holds the flits, the others nothing (the module docstring)."""
    geo, N, ring = v["geo"], v["N"], v["bias_ring"]
    rows = ", ".join([f"1 # {geo.sm // ring}"] * (geo.sm > ring) + [f"{N} / 8 % {ring}"])
    return geo.switch_slices(rows, f"{N} % {geo.tn} / {geo.c}", (v["bi"] or "").upper())


def bias_span(v: dict[str, Any]) -> int:
    """The ring of the bias's VRF load: the `m` factor's `sm` slices, of which the first `ring`
    hold the block's flits (`bias_slice`), or 0 when the bias moves by DMA copies."""
    return v["geo"].sm if v["bias_ring"] else 0
