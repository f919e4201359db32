"""The source text of a GEMM candidate of `npu-opt synth` (synth/space.py offers the
points, this module writes one point's kernel): the module header, the mappings, the row-block
loads and one tile's contraction and store; the tile loops around the tile are
synth/tile_loops.py's, a tile whose `k` runs in time blocks synth/time_blocks.py's. `v` is
the dictionary of names and numbers `gemm_names` derives from a point; each piece returns
lines of Python.
"""

from __future__ import annotations

from typing import Any

from ir.dtypes import DType
from synth import epilogue, target
from synth.bias_switch import bias_ring, bias_slice, bias_span
from synth.both_loads import both_stationary, both_tile
from synth.onchip import device_transpose, switch_cut_text, switch_fetch, switch_names, switch_w_block
from synth.live_rows import live_rows, live_store
from synth.overlap import a_pieces, bias_first, piece_tile, pieces_ok, tile_pieces
from synth.pairs import pair_ok
from synth.stream_switch import stream_a_block, stream_fetch, stream_mapping, stream_names
from synth.tile_loops import tile_loops
from synth.trf_double import chunk_tile, whole_w
from synth.tiling import geometry
from synth.time_blocks import time_block_loads, time_block_tile

__all__ = ["chain", "contraction_chain", "gemm_names", "gemm_roles", "gemm_source", "header", "hbm_axes", "kept",
           "tile_terms"]


def kept(spec: Any) -> tuple[str, ...]:
    """The result's indices other than the batch index: (m, n) of a GEMM."""
    return tuple(i for i in spec.result[1] if i != spec.batch)


def gemm_roles(spec: Any) -> tuple[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...]]]:
    """(a, w): the operand that carries the result's first index, then the other."""
    first = kept(spec)[0]
    a, w = spec.operands if first in spec.operands[0][1] else spec.operands[::-1]
    return a, w


def chain(idx: tuple[str, ...], steps: list[tuple[str, int, int | None, str]], write: bool = False) -> str:
    """The `.tile(...)` calls that pick one tile of a view of a tensor indexed `idx`: each step
    (index, count, size, variable) splits `index` into `count` tiles of `size` (None: one
    element, the batch) and takes tile `variable`; write views mark the tile axes `#{!}`."""
    calls = []
    for n, (index, _, size, var) in enumerate(steps):
        X = index.upper()
        terms = tile_terms(idx, steps[:n + 1], write)
        calls.append(f'.tile(m("{X if size is None else f"{X} / {size}"}"), 1, m("{", ".join(terms)}"), {var})')
    return "".join(calls)


def tile_terms(idx: tuple[str, ...], steps: list[tuple[str, int, int | None, str]], write: bool = False) -> list[str]:
    """The element mapping's terms, one per index of `idx`, of a view after the tiles of `steps`
    (`chain`): an index tiled into `count` tiles of `size` is `1 # count, X % size`."""
    terms = [i.upper() for i in idx]
    mark = "#{!}" if write else "#"
    for index, count, size, _ in steps:
        X = index.upper()
        terms[idx.index(index)] = f"1 {mark} {count}" if size is None else f"1 {mark} {count}, {X} % {size}"
    return terms


def hbm_axes(name: str, idx: tuple[str, ...]) -> str:
    return ", ".join(i.upper() for i in idx)


def host_views(spec: Any) -> list[str]:
    """The docstring's lines on what `Contraction.pad` and `unpad` do on the host besides
    padding: merge indices into the kernel's rows, transpose an operand stored k-first."""
    lines = []
    if spec.merged:
        row = next(i for i in spec.result[1] if i not in spec.sizes)
        lines.append(f"Host-side view: {' and '.join(spec.merged)} are merged into one row index {row} "
                     f"({row.upper()}={spec.padded[row]}); pad reshapes, unpad splits them again.")
    for name in spec.device_transposed:
        given = dict(spec.given[1:])[name]
        lines.append(f"Device-side transpose: {name}[{','.join(given)}] is read as stored, the contracted index "
                     "first; the Transpose Engine turns each slice's block into rows of "
                     f"{name}[{','.join(dict(spec.operands)[name])}] (the kernel reads it k-innermost).")
    for name in (n for n in spec.transposed if n not in spec.device_transposed):
        given = dict(spec.given[1:])[name]
        lines.append(f"Host-side transpose: {name}[{','.join(given)}] is stored with the contracted index first; "
                     f"pad transposes it to {name}[{','.join(dict(spec.operands)[name])}] on the host "
                     "(the kernel reads it k-innermost).")
    return lines


def header(spec: Any, point: dict[str, Any]) -> list[str]:
    choice = ", ".join(f"{k}={v!r}" for k, v in point.items())
    sizes = ", ".join(f"{i.upper()}={n}" for i, n in spec.padded.items())
    given = ", ".join(f"{i}={n}" for i, n in spec.sizes.items())
    return [f'"""{spec.name}: {spec.text} ({spec.dtype_in} -> {spec.dtype_out}), written by `npu-opt synth`.',
            "",
            f"Sizes {given}; the kernel's axes are padded to multiples of 32"
            + (f" (its rows to whole passes of {target.slices(spec)} slices)" if spec.form == "gemv" else "")
            + f": {sizes}",
            "(pad the host arrays with zeros and cut the result: synth.Contraction.pad / unpad).",
            *host_views(spec),
            f"The search's choice: {choice}.",
            '"""', "", "from npu_opt import *", *target.imports(spec), "", f"axes({target.axes_prefix(spec)}{sizes})", ""]


def gemm_names(spec: Any, p: dict[str, Any]) -> dict[str, Any]:
    """Every name and number the GEMM template uses (the `v` of the _gemm_* pieces)."""
    (an, aidx), (wn, widx) = gemm_roles(spec)
    mi, ni = kept(spec)
    M, N, K = mi.upper(), ni.upper(), spec.contracted.upper()
    bi = spec.batch
    size = spec.padded
    geo = geometry(p["placement"])
    tm, tn = geo.tm, geo.tn
    din, dout = spec.dtype_in, spec.result_dtype
    stationary_w = p["trf"] == wn
    r, c = geo.r, geo.c
    v = dict(spec=spec, p=p, an=an, aidx=aidx, wn=wn, widx=widx, mi=mi, ni=ni, M=M, N=N, K=K, bi=bi,
             nb=spec.padded[bi] if bi else 1, size=size, geo=geo, r=r, c=c, tm=tm, tn=tn,
             mt=max(1, size[mi] // tm), nt=max(1, size[ni] // tn), din=din, dout=dout,
             flit=32 if din == "i8" else 16,  # elements of one 32-byte flit
             packet=p["packet"], order=p.get("order", "ij"), reuse=p.get("reuse", "outer"),
             stationary_w=stationary_w, Kl=geo.k_local(K, size[spec.contracted]),
             groups=1, pieces=1, kpiece=0)
    # a result smaller than the tile is padded to it inside the kernel (`M # 128`): one tile,
    # the padding computed and never stored
    for x, n_, t_, var in (("M", size[mi], tm, "i"), ("N", size[ni], tn, "j")):
        padded = n_ % t_ != 0
        v[x] = f"{v[x]} # {t_}" if padded else v[x]
        v[f"{var}_step"] = [] if padded else [((mi, ni)[var == "j"], v["mt" if var == "i" else "nt"], t_, var)]
    M, N = v["M"], v["N"]
    v["S"], v["T"] = (M, N) if stationary_w else (N, M)      # streamed rows, stationary rows (the lanes)
    # the tile's streamed rows in pieces (synth/overlap.py), where the lever applies (else one)
    v["pieces_n"] = p.get("pieces", 1) if pieces_ok(geo, p.get("pieces", 1), stationary_w, size[mi],
                                                     an in spec.device_transposed) else 1
    # two tiles a rolled loop body (synth/pairs.py), where the lever applies
    v["pair"] = bool(p.get("pair")) and pair_ok(geo, v["mt"], v["nt"], v["order"], v["reuse"], v["pieces_n"],
                                                spec.epilogue is not None and spec.epilogue.bias is not None)
    v["rs"], v["rt"] = (r // v["pieces_n"], c) if stationary_w else (c, r)    # their rows per slice (per contraction)
    v["g"] = v["rt"] // 8                                    # stationary rows per lane
    v["s_dm"], v["t_dm"] = ("a_dm", "w_dm") if stationary_w else ("w_dm", "a_dm")
    # the batch: elements side by side on `sb` slices each step, the steps one after another
    v["steps"] = v["nb"] // geo.sb
    v["batch"] = ([] if geo.sb == v["nb"] else [(bi, v["steps"], None if geo.sb == 1 else geo.sb, "bb")]) if bi else []
    if geo.switch:  # how a `w by switch` block is cut over its slices: groups of 8 rows, then pieces of k
        switch_names(v, size[spec.contracted], DType(din).bits // 8)
    if geo.a_switch:  # how an `a by switch` block is cut over its slices: pieces of k
        stream_names(v, size[spec.contracted], DType(din).bits // 8)
    v["bias_ring"] = bias_ring(v)  # the bias broadcast by the switch (synth/bias_switch.py), or 0
    return v


def gemm_source(spec: Any, p: dict[str, Any]) -> str:
    v = gemm_names(spec, p)
    body = tile_loops(v)
    if v["batch"]:
        each = "one GEMM per" if v["geo"].sb == 1 else f"{v['geo'].sb} GEMMs side by side per step of"
        body = [f"    # the batch: {each} {v['bi'].upper()}, its blocks picked by tiles of the batch axis",
                f"    for bb in range({v['steps']}):"] + ["    " + line for line in body]
    return "\n".join(header(spec, p) + _gemm_mapping(v) + _gemm_blocks(v) + _gemm_tile(v) + body) + "\n"


def _gemm_mapping(v: dict[str, Any]) -> list[str]:
    """The mapping constants and the kernel's signature."""
    spec, p, geo = v["spec"], v["p"], v["geo"]
    an, wn, (rn, ridx) = v["an"], v["wn"], spec.result
    M, N, K, r, c = v["M"], v["N"], v["K"], v["r"], v["c"]
    params = {an: f'{an}: HbmTensor[{v["din"]}, Chip, m("{hbm_axes(an, spec.stored(an))}")]',
              wn: f'{wn}: HbmTensor[{v["din"]}, Chip, m("{hbm_axes(wn, spec.stored(wn))}")]'}
    clusters = target.cluster_line(spec) if geo.clusters == 1 else [f'Cluster = m("{geo.cluster_map(M)}")']
    lines = [*target.chip_line(spec), *clusters, *geo.notes(K, v["Kl"])]
    lines += [f"# placement={p['placement']!r}: each slice computes {r} x {c} results; {geo.sm} x {geo.sn} "
              f"slices make a",
              f"# {v['tm']} x {v['tn']} tile ({v['mt']} x {v['nt']} tile(s) cover the padded {v['size'][v['mi']]} x "
              f"{v['size'][v['ni']]} result); a slice's",
              f"# rows of {c} results leave for HBM as packets of {c * {'i8': 1, 'bf16': 2}.get(v['dout'], 4)} "
              "bytes."]
    if not (v["i_step"] and v["j_step"]):
        lines.append(f"# the result is padded to the tile inside the kernel ({v['M']}, {v['N']}): the padding is "
                     "computed, never stored")
    if geo.sb > 1:
        lines.append(f"# {geo.sb} batch elements side by side: {geo.sb} elements of {v['bi'].upper()} at once, "
                     f"each on its own {geo.sm} x {geo.sn} slices")
    lines += [f'Slice = m("{geo.slice_map(M, N, K, v["size"][spec.contracted], (v["bi"] or "").upper())}")']
    if geo.switch:
        wslice = geo.switch_slices(v["piece_slice"], f"{N} % {geo.tn} / {c}", (v["bi"] or "").upper())
        cut = switch_cut_text(v)
        lines += [f"# w by switch: each block of {wn} moves from HBM once, spread over the {geo.sm} slices that "
                  f"share it ({cut}",
                  f"# each; WSlice puts the piece where Slice has {M}); the Switch Engine broadcasts the pieces "
                  "around their",
                  (f"# sub-ring of {geo.sm * geo.sn} slices into the {geo.sm} of their column" if geo.a_switch else
                   f"# sub-ring of {geo.sm} slices into each of them") + ", instead of one DMA copy per slice",
                  f'WSlice = m("{wslice}")']
    if geo.a_switch:
        lines += stream_mapping(v)
    if v["bias_ring"]:
        lines += [f"# the bias moves once a column block, a flit a slice on {v['bias_ring']} of the {geo.sm} slices along "
                  f"{M} (BSlice); the Switch Engine",
                  "# broadcasts the flits into every slice's VRF load, instead of one DMA copy per slice",
                  f'BSlice = m("{bias_slice(v)}")']
    lines += [
              "",
              "",
              target.decorator(spec),
              f"def {spec.name}(ctx: Context,",
              *[f"        {params[name]}," for name, _ in spec.operands],
              *epilogue.param(spec),
              f'        {rn}: Mut[HbmTensor[{v["dout"]}, Chip, m("{hbm_axes(rn, ridx)}")]]) -> None:']
    return lines


def _gemm_blocks(v: dict[str, Any]) -> list[str]:
    """The row-block loads and the TRF load."""
    an, wn, M, N, T, K, Kl, din = v["an"], v["wn"], v["M"], v["N"], v["T"], v["K"], v["Kl"], v["din"]
    r, c, g, flit, tb = v["r"], v["c"], v["g"], v["flit"], v["geo"].tb
    if tb > 1:  # k in time blocks (synth/time_blocks.py): each block a list of its k chunks
        chunk = [(v["spec"].contracted, tb, v["size"][v["spec"].contracted] // tb, "t")]
        steps = v["batch"] + v["i_step"] + chunk
        piece = piece_tile(tile_terms(v["aidx"], steps), v["aidx"].index(v["mi"]), M, r, v["pieces_n"])
        w_steps = v["batch"] + v["j_step"]
        if v["geo"].double:  # a's chunks as time_block_loads moves them, all of w in one DMA (synth/trf_double.py)
            return time_block_loads(v, chain(v["aidx"], steps), "", piece)[:6] + whole_w(v)
        return time_block_loads(v, chain(v["aidx"], steps), chain(v["widx"], w_steps + chunk), piece,
                                chain(v["widx"], w_steps))
    spec = v["spec"]
    return [f"    def a_block(i):",
            *(device_transpose(v, an, M, r, "i", chain(spec.stored(an), v["batch"] + v["i_step"]))
              if an in spec.device_transposed else
              stream_a_block(v, chain(v["aidx"], v["batch"] + v["i_step"])) if v["geo"].a_switch else
              a_pieces(v, chain(v["aidx"], v["batch"] + v["i_step"]),
                       piece_tile(tile_terms(v["aidx"], v["batch"] + v["i_step"]), v["aidx"].index(v["mi"]), M, r,
                                  v["pieces_n"])) if v["pieces_n"] > 1 else
              [f"        # row block i of {an} ({v['tm']} rows), each slice's {r} rows into its DM",
               f'        rows = {an}.view(){chain(v["aidx"], v["batch"] + v["i_step"])}',
               f'        return rows.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{M} % {r}, {Kl}")])']),
            "",
            f"    def w_block(j):",
            *(device_transpose(v, wn, N, c, "j", chain(spec.stored(wn), v["batch"] + v["j_step"]))
              if wn in spec.device_transposed else
              switch_w_block(v, chain(v["widx"], v["batch"] + v["j_step"])) if v["geo"].switch else
              [f"        # row block j of {wn} ({v['tn']} rows), each slice's {c} rows into its DM",
               f'        rows = {wn}.view(){chain(v["widx"], v["batch"] + v["j_step"])}',
               f'        return rows.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{N} % {c}, {Kl}")])']),
            "",
            *(both_stationary(v) if v["geo"].halves else [
            "    def stationary(block, on=None):" if v["geo"].double else "    def stationary(block):",
            f"        # trf={v['p']['trf']!r}: {v['wn'] if v['stationary_w'] else v['an']}'s {v['rt']} rows per slice go to "
            f"the TRF, 8 lanes x {g} rows each,",
            f"        # in {flit}-element (32-byte) flits; the other operand streams past them",
            "        return ((on or ctx.sub).begin(block.view())" if v["geo"].double else
            "        return (ctx.sub.begin(block.view())",
            *(switch_fetch(v) if v["geo"].switch else
              [f'                .fetch(m("{T} % 8, {T} / 8 % {g}"), m("{Kl}"))']),
            f'                .collect(m("{T} % 8, {T} / 8 % {g}, {Kl} / {flit}"), m("{K} % {flit}"))',
            f'                .to_trf(m("{T} % 8"), m("{T} / 8 % {g}, {Kl}")))',
            ""])]


def _gemm_tile(v: dict[str, Any]) -> list[str]:
    """One tile: the contraction, the inter-slice reduce of a split `k`, the store (of each
    piece in turn with `pieces`, synth/overlap.py)."""
    S, T, K, rs, rt, g = v["S"], v["T"], v["K"], v["rs"], v["rt"], v["g"]
    packet, din, dout, geo = v["packet"], v["din"], v["dout"], v["geo"]
    rn, ridx = v["spec"].result
    steps = v["batch"] + v["i_step"] + v["j_step"]
    dst = [".tile" + call for call in chain(ridx, steps, write=True).split(".tile") if call]
    if v["pieces_n"] > 1:
        dst.append(piece_tile(tile_terms(ridx, steps, write=True), ridx.index(v["mi"]), v["M"], v["r"],
                              v["pieces_n"], write=True))
    if geo.tb > 1 and geo.double:  # a tile's chunks double-buffered in the TRF (synth/trf_double.py)
        return chunk_tile(v, dst, contraction_chain(v, " " * 16))
    if geo.tb > 1:
        return time_block_tile(v, dst, contraction_chain(v, " " * 20))
    if geo.halves:  # the TRF in halves of k, loaded by main and sub (synth/both_loads.py)
        return both_tile(v, dst, lambda half: contraction_chain(v | {"Kl": half}, " " * 20))
    load, take = epilogue.bias_lines(v["spec"], "        ", chain((v["ni"],), v["j_step"]), v["c"], v["N"],
                                     split=v["pieces_n"] > 1 or bias_first(v), ring=v["bias_ring"],
                                     span=bias_span(v))
    pad = " " * (20 if v["pieces_n"] > 1 else 18)
    work = contraction_chain(v, pad)
    if geo.sk > 1:
        op = "InterSliceReduceOpI32" if dout == "i32" else "InterSliceReduceOpF32"
        work += [f"{pad}# the {geo.sk} slices of each {K} chunk add their partial sums",
                 f"{pad}.vector_init()",
                 f'{pad}.vector_inter_slice_reduce(m("{geo.reduced_slices(v["M"], v["N"])}"), '
                 f'm("{S} % {rs}, {T} / 8 % {g}"), {op}.ADD)',
                 f"{pad}.vector_final()"]
    work += epilogue.vector_lines(v["spec"], pad) + epilogue.cast_lines(v["spec"], pad, f"{T} % 8")
    if dout == "bf16":
        work += [f'{pad}.cast(bf16, m("{T} % 8 # 16"))  # f32 sums rounded to bf16 once, at the end']
    work += [f'{pad}.commit_trim(m("{T} % 8"))',
             f'{pad}.commit(m("{S} % {rs}, {T} % {rt}"))']
    store = [*([f"        dst = ({rn}.view_mut()",
                *[f"               {call})" if k == len(dst) - 1 else f"               {call}"
                  for k, call in enumerate(dst)]] if dst else [f"        dst = {rn}.view_mut()  # the whole result"]),
             f"        {target.reduced(v['spec'], 'result')}.view().to_hbm_view(ctx.tdma, dst)"]
    if live_rows(v):  # a result padded along m: only the user's rows leave (synth/live_rows.py)
        store = live_store(v, "result")
    lines = [*load,
             "    def tile(streamed, trf, i, j):",
             *take,
             f"        # packet={packet}: each contraction step multiplies {packet} elements of {K} "
             f"({packet * (1 if din == 'i8' else 2)} bytes, OUTER-3); the time loop sums the rest"]
    if v["pair"] or geo.double:  # the contraction returns its result, `store` stores it (synth/pairs.py)
        return lines + ["        result = (ctx.main.begin(streamed.view())", *work[:-1], work[-1] + ")",
                        "        return result", "", "    def store(result, i, j):", *store, ""]
    if v["pieces_n"] > 1:
        return lines + tile_pieces(v, work, store) + [""]
    return lines + ["        result = (ctx.main.begin(streamed.view())", *work[:-1], work[-1] + ")", *store, ""]


def contraction_chain(v: dict[str, Any], pad: str) -> list[str]:
    """A tile's contraction steps, from the fetch of the streamed operand to the lane
    drain, each line indented by `pad` (the plain tile's and a time block's)."""
    S, T, K, Kl, rs, g, flit, packet = (v[x] for x in ("S", "T", "K", "Kl", "rs", "g", "flit", "packet"))
    fetch = stream_fetch(v, pad) if v["geo"].a_switch else [f'{pad}.fetch(m("{S} % {rs}, {T} / 8 % {g}"), m("{Kl}"))']
    return [*fetch,
            f'{pad}.collect(m("{S} % {rs}, {T} / 8 % {g}, {Kl} / {flit}"), m("{K} % {flit}"))',
            f'{pad}.contract_outer(trf, m("{S} % {rs}, {T} / 8 % {g}, {Kl} / {packet}"), m("{K} % {packet}"))',
            f'{pad}.contract_packet(m("1"))',
            f'{pad}.contract_time(m("{S} % {rs}, {T} / 8 % {g}"))',
            f'{pad}.contract_lane(m("{S} % {rs}, {T} / 8 % {g}"), m("{T} % 8"), LaneMode.INTERLEAVED)']
