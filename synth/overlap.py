"""The `pieces` lever of `npu-opt synth`'s GEMM candidates (docs/synth.md): a tile's streamed
row block moves, is contracted and is stored in `P` pieces, so the DMA of one piece overlaps
the contraction of another, as the reference's double-buffering kernels split their work
between the two contexts (tests/visa/schedule/double_buffering.py).

With one piece a tile runs its steps one after another: the streamed operand's DMA, the
contraction, the DMA of the results to HBM; the schedule model overlaps nothing of that
chain (docs/tuning.md). With `P` pieces each slice's `R` rows of the streamed operand `a`
arrive as `P` DMAs of `R / P` rows each (every row keeps its whole `k`: the packets stay
whole rows), the contraction of piece `p` runs on the main context while piece `p + 1`
moves, and the results of piece `p` leave for HBM while piece `p + 1` is contracted (each
result row keeps its `C` values: the store's packets stay as long). The DMA context then
runs the loads and stores back to back and the contractions hide under them; what it costs
is one DMA start-up per extra command (500 cycles in rngd's rates), so the search weighs it
against the hidden contraction (`P` is 1 or 2, `PIECES`).

The pieces split the streamed operand's rows per slice, never the stationary one's (its TRF
load runs once a tile, under the first piece's DMA) nor `k`. This module decides where the
lever applies (`pieces_ok`) and writes the kernel lines that differ: the piece tiles of the
HBM views (`piece_tile`), the row-block load (`a_pieces`) and the tile's contractions and
stores (`tile_pieces`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["PIECES", "a_pieces", "bias_first", "one_tile_pieces", "piece_tile", "pieces_ok", "tile_pieces"]

# The lever's values, one piece (no overlap) first: ties go to the earlier, simpler kernel.
# Four pieces hide no more than two where two hide the whole contraction and start three
# more DMAs: on the 512^3 i8 GEMM's winner 16,740 cycles against 14,740 (one piece: 16,078),
# and every value doubles the candidates the lever applies to.
PIECES = [1, 2]


def pieces_ok(g: Any, pieces: int, stationary_w: bool, rows: int, a_transposed: bool) -> bool:
    """Whether geometry `g` may stream its row blocks in `pieces` pieces: `w` stationary (the
    pieces cut `a`'s rows), at least two of a slice's rows per piece, `a` not transposed on
    the device (its load is a program of its own), not moved `a by switch`
    (synth/stream_switch.py moves `a` by its own rule) and the kernel's `rows` of `m` whole
    slices' rows: a result padded along `m` inside the kernel (`M # 512`, 320 rows of 32 a
    slice) cuts the views' own rows into pieces, the padding slices get none (piece_tile); of
    64 rows a slice, 320 rows end inside a slice's rows, and no tile of the view cuts them
    into whole pieces. With `k` in time blocks (synth/time_blocks.py: the last chunk in
    pieces, the earlier ones cut in DM) the result is not padded along `m` at all (the DM
    tiles cut a slice's own rows). Not a double-buffered placement (synth/trf_double.py: its
    own loop, one piece)."""
    if pieces == 1:
        return True
    return (not g.double and stationary_w and g.r % pieces == 0 and g.r // pieces >= 2 and rows % (g.r if g.tb == 1 else g.tm) == 0
            and not a_transposed and not g.a_switch)


def piece_tile(terms: list[str], at: int, X: str, r: int, pieces: int, write: bool = False) -> str:
    """The `.tile(...)` that takes piece `p` of a view whose element terms are `terms` (the
    `m` index's term at `at` ends in `X % TM`, the tile's rows): of each slice's `r` rows,
    the `r / pieces` rows of piece `p`."""
    rows = r // pieces
    X = X.split(" #")[0]  # a result padded inside the kernel (`M # 512`): the view's own rows, whole slices of them
    mark = "#{!}" if write else "#"
    head, tm = terms[at].rsplit(", ", 1) if ", " in terms[at] else ("", terms[at])
    cut = f"{tm} / {r}, 1 {mark} {pieces}, {X} % {rows}"
    picked = terms[:at] + [f"{head}, {cut}" if head else cut] + terms[at + 1:]
    return f'.tile(m("{X} % {r} / {rows}"), 1, m("{", ".join(picked)}"), p)'


def a_pieces(v: dict[str, Any], rows_chain: str, piece: str) -> list[str]:
    """The body of `a_block(i)` with `pieces` pieces: a list of the pieces' DM tensors, each its
    own DMA of `r / pieces` of every slice's rows. `rows_chain` picks the row block from the
    HBM view, `piece` (piece_tile) one piece of it."""
    an, M, Kl, din, r, n = v["an"], v["M"], v["Kl"], v["din"], v["r"], v["pieces_n"]
    return [f"        # row block i of {an} ({v['tm']} rows) in {n} pieces (pieces={n}), {r // n} of each slice's "
            f"{r} rows each into",
            "        # its DM: a piece's contraction runs while the next piece moves",
            f"        rows = {an}.view(){rows_chain}",
            f"        return [rows{piece}",
            f'                .to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{M} % {r // n}, {Kl}")])',
            f"                for p in range({n})]"]


def tile_pieces(v: dict[str, Any], chain: list[str], store: list[str]) -> list[str]:
    """The tile's work with `pieces` pieces: `chain` (the lines of one contraction, from its
    `.fetch` to its `.commit`, indented for the list below) contracts every piece in turn on
    the main context, then `store` (the lines that store `result`, `p` its piece) stores each:
    the stores follow the last piece's load on the DMA context and run beside the later
    pieces' contractions."""
    n = v["pieces_n"]
    return ([f"        # pieces={n}: piece p is contracted once it is in DM (while piece p + 1 moves) and its "
             "results leave",
             "        # for HBM while the next piece is contracted",
             "        results = [(ctx.main.begin(part.view())"]
            + chain[:-1] + [chain[-1] + ")", "                   for part in streamed]",
                            "        for p, result in enumerate(results):"]
            + ["    " + line for line in store])


def bias_first(v: dict[str, Any]) -> bool:
    """Whether a kernel of one tile in one piece moves its bias as one in pieces does
    (`one_tile_pieces`): `w` stationary, a bias, no time blocks, TRF halves or `k` over slices
    (their tiles are written elsewhere). Loaded at the tile, after `a`'s block and the TRF
    load were issued, the bias's DM took that of `w`'s block, free once the TRF load was
    issued, so its DMA waited for the TRF load, and the contraction for the bias: the
    512 x 512 x 128 epilogue's `128x2 of 4x256, w by switch` one piece ran 7,474 cycles, with
    the bias moved between `w` and `a` 6,850 (6,658 since the bias lands on fewer slices,
    synth/bias_switch.py)."""
    ep, geo = v["spec"].epilogue, v["geo"]
    return (v["mt"] * v["nt"] == 1 and v["pieces_n"] == 1 and ep is not None and ep.bias is not None
            and v["t_dm"] == "w_dm" and geo.tb == 1 and not geo.halves and geo.sk == 1 and not geo.double)


def one_tile_pieces(v: dict[str, Any]) -> list[str]:
    """The calls of a kernel of one tile with its row block in pieces: every DMA before it
    (`w`'s block, the bias, the pieces, in that order on the DMA context), then the TRF load
    (on sub) and the bias's VRF load (on main, beside it: on sub it waited for the TRF load and
    the first piece's contraction for it), then the tile. The DMAs go first so that none of their DM tensors
    reuses the DM of `w`'s block while the TRF load still reads it (the allocation gives a new
    tensor the lowest free address; a tensor is free after its last reader is issued, and the
    DMA would wait for that reader); the TRF load runs under the pieces' DMAs."""
    ep = v["spec"].epilogue
    bias = ep.bias[0] if ep is not None and ep.bias is not None else None
    what = "its row block in pieces" if v["pieces_n"] > 1 else "its row block in one piece"
    rows = "the pieces" if v["pieces_n"] > 1 else "the row block"
    return ["    # one tile, " + what + ": the DMAs first (w's block, " + ("the bias, " if bias else "")
            + rows + "), then the TRF",
            "    # load" + (" and the bias's VRF load" if bias else "") + f" (under {rows}' DMA" + "s" * (v["pieces_n"] > 1)
            + ") and the tile",
            "    w_dm = w_block(0)",
            *([f"    {bias}_dm = {bias}_dm_block(0)"] if bias else []),
            "    a_dm = a_block(0)",
            "    trf = stationary(w_dm)",
            *([f"    {bias}_blocks[0] = {bias}_vrf_load({bias}_dm)"] if bias else []),
            "    tile(a_dm, trf, 0, 0)"]
