"""What `npu-opt synth`'s GEMM space offers, and at what size its candidates are checked
(docs/synth.md "Contractions larger than the chip"). synth/tiling.py says where a tile can
sit; this module says which of those points the space keeps and how they are checked:

- the levers of a GEMM whose `k` must split (`split_levers`: the split placements, the loop
  order and the reuse of loaded blocks);
- whether a point fits the target's budgets (`offered`: the stationary rows in the TRF, the
  blocks `reuse="all"` holds in the DM, at most UNROLLED_TILES unrolled tiles; where the
  switches and the `pieces` and `pair` levers apply);
- whether the space's candidates run at full size on the cpu backend and in the
  interpreter (`runs_in_full`, at most CHECK_MACS products), and else the proxy sizes at
  which each one still tiles and splits `k` the same way (`proxy_sizes`, driver/synth.py).
"""

from __future__ import annotations

import re
from typing import Any

from synth.onchip import switch_piece
from synth.overlap import pieces_ok
from synth.pairs import pair_ok
from synth.thin import thin_ok
from synth.tiling import Geometry, geometry, split_placements
from tu_ops.target import rngd

__all__ = ["CHECK_MACS", "UNROLLED_TILES", "offered", "proxy_sizes", "runs_in_full", "split_levers"]

# A space whose contraction multiplies more than this many products is too slow to run on
# the cpu backend and in the interpreter: its candidates are checked at a proxy size.
CHECK_MACS = 1 << 30
# The most tiles a candidate whose tile loops cannot roll (`reuse="all"`) is offered with.
UNROLLED_TILES = 16


def offered(spec: Any, point: dict[str, Any]) -> bool:
    """Whether the space offers `point`: a `w by switch` or `a by switch` placement keeps `w`
    in the TRF, and so does one streaming `a` in `pieces` (where _pieces_offered allows them,
    never with `a by switch`, whose `a` moves by its own rule); `pair` (two tiles a rolled
    loop body, synth/pairs.py) only with one piece a tile and where pair_ok allows it; a
    double-buffered placement (synth/trf_double.py) only with each of `order`, `reuse` and `pair`
    at its first value (its loop ignores them); its blocks fit a slice (the stationary operand's rows,
    `trf`, with their `k` in the TRF, TRF_BYTES, else rule TRF-2; with `reuse="all"` every row
    block of both operands and a block of results at once in the DM, DM_SLICE_BYTES, else
    MEM-3 or MEM-4), and a `reuse="all"` kernel, whose tile loops stay unrolled, has at most
    UNROLLED_TILES tiles (so no candidate's trace grows with the result)."""
    if spec.form == "gemv":
        return True
    g = geometry(point["placement"])
    mi, ni = (i for i in spec.result[1] if i != spec.batch)
    size, elem = spec.padded, 1 if spec.dtype_in == "i8" else 2
    kl = size[spec.contracted] // (g.sk * g.tb)
    w_rows = point.get("trf") not in {name for name, idx in spec.operands if mi in idx}
    if not thin_ok(g, w_rows, rngd().constants):  # a thin block (synth/thin.py) streams a, w in the lanes
        return False
    if (g.switch or g.a_switch) and not w_rows:  # the switches are written for `w` stationary, `a` streamed
        return False
    if g.double and (point.get("order", "ij") != "ij" or point.get("reuse", "outer") != "outer" or point.get("pair")):
        return False  # a double-buffered kernel runs its own loop (synth/trf_double.py): these levers would repeat it
    if point.get("pieces", 1) > 1 and not (w_rows and not g.halves and not g.double and _pieces_offered(spec, g, point["pieces"])):
        return False  # pieces of the streamed a (synth/overlap.py), with w stationary, its TRF loaded by one context
    if (g.c if w_rows else g.r) * kl * elem > rngd().constants.TRF_BYTES:
        return False
    mt, nt = max(1, size[mi] // g.tm), max(1, size[ni] // g.tn)
    bias = spec.epilogue is not None and spec.epilogue.bias is not None
    if point.get("pair") and not pair_ok(g, mt, nt, point.get("order", "ij"), point.get("reuse", "outer"),
                                         point.get("pieces", 1), bias):
        return False  # two tiles a rolled loop body (synth/pairs.py), with one piece a tile
    if point.get("reuse") != "all":
        return True
    if mt * nt > UNROLLED_TILES:
        return False
    # k in time blocks keeps every chunk of a's blocks in DM and w's blocks in HBM
    held = (mt * g.r * kl * g.tb if g.tb > 1 else (mt * g.r + nt * g.c) * kl) * elem
    return held + g.r * g.c * 4 <= rngd().constants.DM_SLICE_BYTES


def _pieces_offered(spec: Any, g: Geometry, pieces: int) -> bool:
    """Whether geometry `g` of `spec` may stream its row blocks of `a` in `pieces` pieces
    (synth/overlap.py pieces_ok, with `w` stationary)."""
    mi = next(i for i in spec.result[1] if i != spec.batch)
    a = next(name for name, idx in spec.operands if mi in idx)
    return pieces_ok(g, pieces, True, spec.padded[mi], a in spec.device_transposed)


def proxy_sizes(spec: Any, point: dict[str, Any]) -> dict[str, int]:
    """Sizes at which the candidate `point` still tiles (two tiles along m and n where the full
    size has them, plus any rows the full size has past its last whole tile) and splits `k`
    the same way, small enough to run on the cpu backend and in the interpreter: `k` becomes
    one 64-element chunk per slice and time block (a GEMV keeps two passes of 256 rows)."""
    size, sizes = spec.padded, dict(spec.sizes)
    if spec.form == "gemv":  # R rows per slice need two blocks of R rows, k over SK slices a 64-element chunk each
        mi = spec.result[1][0]
        found = re.match(r"(\d+) rows per slice(?:, k over (\d+) slices)?", str(point.get("layout", "")))
        r, sk = (int(found.group(1)), int(found.group(2) or 1)) if found else (1, 1)
        sizes[mi] = min(size[mi], max(512, 2 * r) + size[mi] % 256)
        sizes[spec.contracted] = min(size[spec.contracted], max(256, 64 * sk))
        return sizes
    g = geometry(point["placement"])
    mi, ni = (i for i in spec.result[1] if i != spec.batch)
    sizes[mi] = min(size[mi], 2 * g.tm + size[mi] % g.tm)
    sizes[ni] = min(size[ni], 2 * g.tn + size[ni] % g.tn)
    # an `a by switch` block is cut into `sn` pieces of `k` of whole 32-byte flits (synth/stream_switch.py),
    # w's (with it) into at most `sm`
    elem = 1 if spec.dtype_in == "i8" else 2
    shared = max(g.sn, g.sm * g.switch) if g.a_switch else 1
    # a `w by switch` block's k (each time block's chunk) is cut into `pieces` of whole flits (synth/onchip.py)
    pieces = switch_piece(g, size[spec.contracted], elem)[1] if g.switch else 1
    # the TRF loaded in halves of k (synth/both_loads.py): each half whole 64-byte packets
    kmin = max(64 * g.sk * g.tb, shared * 32 // elem, g.tb * pieces * 32 // elem, 128 // elem * g.halves)
    sizes[spec.contracted] = min(size[spec.contracted], kmin)
    if spec.batch is not None:  # two steps of the batch (of `sb` elements each when it spans slices)
        sizes[spec.batch] = min(sizes[spec.batch], 2 * g.sb)
    if spec.merged:  # the merged rows as the user's indices: one of each leading part, the rows in the last
        rows = sizes.pop(mi)
        sizes.update({i: 1 for i in spec.merged[:-1]}, **{spec.merged[-1]: rows})
    return sizes


def split_levers(spec: Any, m: int, n: int, packets: list[int], wn: str,
                 whole: list[str] | None = None) -> dict[str, list[Any]]:
    """The levers of a GEMM whose `k` must split: the placements of the blocks that hold `k`
    whole (`whole`: they compete), then the split placements, with `w` (named `wn`) in the TRF,
    the packet, and for more than one tile the loop order and the reuse of loaded blocks.
    `reuse="none"` (both blocks loaded for every tile) moves more bytes than "outer" and no
    fewer steps, so it is not generated; nor is `trf="a"`, whose committed N x M blocks
    store to HBM transposed (docs/synth.md)."""
    whole = whole or []
    placements = whole + [p for p in split_placements(spec, m, n) if p not in whole]
    levers: dict[str, list[Any]] = {"placement": placements, "trf": [wn], "packet": packets}
    tiles = max((m // geometry(p).tm) * (n // geometry(p).tn) for p in placements) if placements else 1
    if tiles > 1:
        levers |= {"order": ["ij", "ji"], "reuse": ["outer", "all"]}
    return levers


def runs_in_full(spec: Any) -> bool:
    """Can the candidates of `spec` run on the cpu backend and in the interpreter at full
    size (at most CHECK_MACS products)?"""
    products = 1
    for n in spec.padded.values():
        products *= n
    return products <= CHECK_MACS


