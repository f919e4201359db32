"""The kernel text of a GEMM candidate whose `k` runs in time blocks (a placement ending
"k in TB time blocks", synth/tiling.py `split_placements`): `k` is cut into `TB` chunks, the
smallest that fits a slice's TRF and DM, and one slice contracts them one after another,
where a `k over SK slices` placement would spread them over slices. Each row block of `a` is
the list of its chunks in DM; `w`'s chunks stay in HBM until the tile moves each into DM and
the TRF just before its contraction; with `w by switch` every chunk moves into DM up front,
once, cut over the slices that share it (each holds a small share), and the Switch Engine
broadcasts each into their TRFs just before its contraction (synth/onchip.py).
A chunk's partial sums wait in the VRF for the next
chunk to add them on the Vector Engine; the last chunk commits the tile.
`v` is the dictionary of names and numbers of synth/gemm_text.py's `gemm_names`.
"""

from __future__ import annotations

from typing import Any

from synth.onchip import switch_fetch, switch_held

__all__ = ["a_piece_chunks", "time_block_loads", "time_block_tile"]


def time_block_loads(v: dict[str, Any], a_rows: str, w_rows: str, piece: str = "", w_block: str = "") -> list[str]:
    """The row-block loads of a candidate with `k` in time blocks (`w` in the TRF): a block of
    `a` is the list of its `k` chunks in DM (with `pieces`, each chunk a list of its pieces:
    `a_piece_chunks`; `piece` is synth/overlap.py's `piece_tile` of the last chunk), a block of
    `w` the list of its chunks' HBM views, each moved into DM and the TRF by `tile` just before
    its contraction. `w_block` picks the whole block (every chunk) from `w`'s HBM view."""
    tb, M, Kl, din = v["geo"].tb, v["M"], v["Kl"], v["din"]
    a_lines = a_piece_chunks(v, a_rows, piece) if v["pieces_n"] > 1 else [
        f"        # row block i of {v['an']} ({v['tm']} rows), each slice's {v['r']} rows into its DM, as {tb} "
        f"chunks of {v['K']}",
        f'        return [{v["an"]}.view(){a_rows}',
        f'                .to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{M} % {v["r"]}, {Kl}")])',
        f"                for t in range({tb})]"]
    return [f"    def a_block(i):",
            *a_lines,
            "",
            f"    def w_block(j):",
            *(_switch_chunks(v, w_rows, w_block) if v["geo"].switch else
              [f"        # row block j of {v['wn']} ({v['tn']} rows) as {tb} chunks of {v['K']}, left in HBM: tile() "
               "moves each into",
               "        # DM and the TRF just before its contraction (the whole block would not fit a slice)",
               f'        return [{v["wn"]}.view(){w_rows} for t in range({tb})]']),
            "",
            "    def stationary(chunks):",
            "        return chunks",
            ""]


def _switch_chunks(v: dict[str, Any], w_rows: str, w_block: str) -> list[str]:
    """The body of `w_block(j)` with `w by switch` and `k` in time blocks: every chunk moves
    into DM up front, cut over the slices that share the block. When each slice holds whole
    rows of every chunk (the chunk's `k` is not cut over slices) the block moves in ONE DMA,
    each slice's rows with all of their `k`, and the chunks are tiles of it in DM: the same
    bytes in one command's start-up, not `tb` (bf16 512 x 512 x 384 in 3 blocks: 18,276 ->
    17,276 cycles). Otherwise one DMA a chunk (`w_rows` picks a chunk from the HBM view,
    `w_block` the whole block)."""
    tb, K, Kl, din, held = v["geo"].tb, v["K"], v["Kl"], v["din"], switch_held(v)
    head = [f"        # row block j of {v['wn']} ({v['tn']} rows) as {tb} chunks of {K}, all moved first: each of "
            f"the {v['geo'].sm} slices"]
    if v["pieces"] == 1:  # whole rows of each chunk (held ends in `Kl`): one DMA of the block, the chunks cut in DM
        rows, chunk = held[:-len(Kl)], v["size"][v["spec"].contracted] // tb
        return [*head,
                "        # sharing a block holds its rows of every chunk, moved in one DMA; each chunk is a tile of it "
                "in DM,",
                "        # so each one's TRF load reads its own chunk",
                f'        whole = ({v["wn"]}.view(){w_block}',
                f'                 .to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, WSlice, m("{rows}{K}")]))',
                f'        return [whole.view().tile(m("{K} / {chunk}"), 1, m("{rows}1 # {tb}, {Kl}"), t) '
                f"for t in range({tb})]"]
    return [*head,
            "        # sharing a block holds one piece of every chunk (a small share of the block), so all the "
            "chunks move",
            "        # first and each one's TRF load waits only for its own chunk",
            f'        return [{v["wn"]}.view(){w_rows}',
            f'                .to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, WSlice, m("{held}")])',
            f"                for t in range({tb})]"]


def time_block_tile(v: dict[str, Any], dst: list[str], work: list[str]) -> list[str]:
    """One tile of a candidate with `k` in time blocks: per block its TRF load and contraction;
    the partial sums wait in the VRF, each block adds the earlier blocks' sums on the Vector
    Engine, the last one commits. `work` is a block's contraction steps (gemm_text.py's
    `contraction_chain`, indented for the loop over the blocks) and `dst` the tile of the
    result's write view."""
    S, T, K, Kl, rs, rt, g, flit, packet = (v[x] for x in ("S", "T", "K", "Kl", "rs", "rt", "g", "flit", "packet"))
    tb, dout, n = v["geo"].tb, v["dout"], v["pieces_n"]
    acc = "acc[p]" if n > 1 else "acc"
    add = f"vector_fxp(FxpBinaryOp.ADD_FXP, {acc})" if dout == "i32" else f"vector_clip(ClipBinaryOpF32.ADD, {acc})"
    lines = ["    def tile(streamed, held, i, j):",
             f"        # k in {tb} time blocks of {Kl}: each block's sums wait in the VRF for the next to add them",
             f"        # packet={packet}: each contraction step multiplies {packet} elements of {K} "
             f"({packet * (1 if v['din'] == 'i8' else 2)} bytes, OUTER-3); the time loop sums the rest",
             *(["        acc = None"] if n == 1 else
               [f"        # pieces={n}: each chunk is contracted piece by piece, each piece's sums in the VRF; the",
                "        # last chunk's pieces are committed and stored after all of them (a piece's store runs while",
                "        # the next piece is contracted; a commit after a store would wait for that store's DM)",
                f"        acc, results = [None] * {n}, []"]),
             f"        for t in range({tb}):",
             *(["            # w by switch: the chunk's pieces are in DM already (w_block); the Switch Engine",
                "            # broadcasts them into every TRF",
                "            held_dm = held[t]"] if v["geo"].switch else
               [f'            held_dm = held[t].to_dm(ctx.tdma, DmTensor[{v["din"]}, Chip, Cluster, Slice, '
                f'm("{T} % {rt}, {Kl}")])']),
             "            trf = (ctx.sub.begin(held_dm.view())",
             *(switch_fetch(v, " " * 19) if v["geo"].switch else
               [f'                   .fetch(m("{T} % 8, {T} / 8 % {g}"), m("{Kl}"))']),
             f'                   .collect(m("{T} % 8, {T} / 8 % {g}, {Kl} / {flit}"), m("{K} % {flit}"))',
             f'                   .to_trf(m("{T} % 8"), m("{T} / 8 % {g}, {Kl}")))',
             *_block_part(work, "streamed[t][p]" if n > 1 else "streamed[t]", add, "    " * (n > 1), n)]
    cast = [f'.cast(bf16, m("{T} % 8 # 16"))  # f32 sums rounded to bf16 once, at the end'] if dout == "bf16" else []
    commit = f'.commit_trim(m("{T} % 8")).commit(m("{S} % {rs}, {T} % {rt}"))'
    store = [f"dst = ({v['spec'].result[0]}.view_mut()",
             *[f"       {call})" if k == len(dst) - 1 else f"       {call}" for k, call in enumerate(dst)],
             "result.view().to_hbm_view(ctx.tdma, dst)"]
    vrf = f'.to_vrf(m("{S} % {rs}, {T} / 8 % {g}, {T} % 8"))'
    if n == 1:
        return lines + [f"            if t < {tb - 1}:",
                        f"                acc = part{vrf}",
                        "        result = part",
                        *[f"        result = result{call}" for call in cast],
                        f"        result = result{commit}", *["        " + line for line in store], ""]
    return lines + [f"                if t < {tb - 1}:",
                    f"                    acc[p] = part{vrf}",
                    "                else:",
                    f"                    results.append(part{''.join(cast)}",
                    f"                                   {commit})",
                    "        for p, result in enumerate(results):",
                    *["            " + line for line in store], ""]


def _block_part(work: list[str], stream: str, add: str, pad: str, n: int) -> list[str]:
    """A time block's contraction of `stream` (of each of its `n` pieces in turn, indented one
    more level by `pad`, when `n > 1`) up to its vector_final, the earlier blocks' sums added."""
    acc = "acc[p]" if n > 1 else "acc"
    return [*([f"            for p in range({n}):"] if n > 1 else []),
            f"{pad}            part = (ctx.main.begin({stream}.view())",
            *[pad + line for line in work],
            f"{pad}                    .vector_init()",
            f"{pad}                    .vector_intra_slice_tag(TagMode.ZERO))",
            f"{pad}            if {acc} is not None:",
            f"{pad}                part = part.{add}  # + the earlier blocks' sums",
            f"{pad}            part = part.vector_final()"]


def a_piece_chunks(v: dict[str, Any], a_rows: str, piece: str) -> list[str]:
    """The body of `a_block(i)` with `k` in time blocks and `pieces` (synth/overlap.py): a list
    of the chunks, each the list of its pieces of `r / pieces` of each slice's rows. The last
    chunk moves as one DMA a piece (`piece` cuts it from the chunk's HBM view), so its first
    piece is contracted while the next moves and stored while the next is contracted; the
    earlier chunks move whole (no more DMA start-ups) and their pieces are tiles of the DM
    tensor."""
    tb, M, Kl, din, r, n = v["geo"].tb, v["M"], v["Kl"], v["din"], v["r"], v["pieces_n"]
    rows = r // n
    return [f"        # row block i of {v['an']} ({v['tm']} rows), each slice's {r} rows into its DM, as {tb} chunks "
            f"of {v['K']}; pieces={n}:",
            f"        # each chunk in {n} pieces of {rows} of each slice's rows, the last chunk one DMA a piece (its "
            "pieces are",
            "        # contracted and stored while the next moves), the earlier ones whole and cut in DM",
            f"        chunks = [{v['an']}.view(){a_rows} for t in range({tb})]",
            f'        whole = [chunk.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{M} % {r}, {Kl}")])',
            f"                 for chunk in chunks[:{tb - 1}]]",
            f'        return ([[dm.view().tile(m("{M} % {r} / {rows}"), 1, m("1 # {n}, {M} % {rows}, {Kl}"), p)',
            f"                  for p in range({n})]",
            "                 for dm in whole]",
            f"                + [[chunks[{tb - 1}]{piece}",
            f'                    .to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{M} % {rows}, {Kl}")])',
            f"                    for p in range({n})]])"]
