"""The candidate kernels of a contraction (npu_opt/synth/spec.py), generated from the machine's
rules, as readable Python source: `source(spec, point)` writes one candidate's kernel file,
`space_of(spec)` is the tune Space of all of them (docs/synth.md).

The levers of a GEMM `out[M, N] = a[M, K] . w[N, K]` (one pass of the contraction computes a
tile of slices' blocks of results; larger outputs loop over tiles):
- `placement`: "SMxSN of RxC": each slice computes R x C results, SM slices along M times SN
  along N make one tile. The blocks come from the target's limits (tiling.blocks: the TRF,
  DM, flit and DMA packet), the slice counts from its SLICE_SIZES (all the slices or fewer,
  `, on 1/N of the slices`), and only tiles that cover the result exactly are generated (or,
  when no tile of every slice does, each block's busiest grid and the result padded to one
  tile); a batched GEMM may also put batch elements side by side on slices
  (`, B batch elements side by side`);
- `trf`: which operand is stationary in the TRF (its rows become the 8 lanes), named as
  the einsum names it (`w` first, the operand carrying the result's second index);
- `packet`: the contraction packet along K: 32 or 64 bytes (rule OUTER-3), 32/64 i8 or 16/32 bf16;
- `order` / `reuse`: the tile loop's order and which loaded blocks are kept (more than one tile).
A batched GEMM `out[B, M, N] = a[B, M, K] . w[B, N, K]` runs the GEMM's loops once per batch
step (one element, or a group side by side), picking its blocks through tiles of the batch axis.
`space_of` keeps one point per canonical kernel source (`canonical`) and leaves out the points
the budgets refuse (tiling.offered).
A GEMV `out[M] = a[M, K] . x[K]` puts one row per slice (256 rows a pass) with x broadcast
into every slice's TRF; its levers are `packet` and whether x's TRF load is reused across
row blocks. A candidate the rules refuse is the compiler's business: it fails to trace or
verify and the tuner counts it under its rule ID.
"""

from __future__ import annotations

import itertools
import linecache
import sys
import types
from typing import Any

import attrs
import numpy as np

from npu_opt.synth import epilogue, target
from npu_opt.synth.tiling import (blocks, contraction_chain, geometry, loop_header, needs_split, pad_ok,
                                  offered, result_placements, runs_in_full, split_levers, split_placements, tile_loops,
                                  time_block_loads, time_block_tile)
from npu_opt.tune import Space

__all__ = ["MODULE_NAMES", "build", "canonical", "points", "source", "space_of"]

# What a candidate's file binds at its top besides `from npu_opt import *` and its kernel
# (here and in npu_opt/synth/target.py): a kernel of one of these names would shadow it.
MODULE_NAMES = frozenset({"Chip", "Cluster", "Slice", "chip_all_reduce"})



def _kept(spec: Any) -> tuple[str, ...]:
    """The result's indices other than the batch index: (m, n) of a GEMM."""
    return tuple(i for i in spec.result[1] if i != spec.batch)


def gemm_roles(spec: Any) -> tuple[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...]]]:
    """(a, w): the operand that carries the result's first index, then the other."""
    first = _kept(spec)[0]
    a, w = spec.operands if first in spec.operands[0][1] else spec.operands[::-1]
    return a, w


def _split_ok(spec: Any) -> bool:
    """Whether the `k` split levers apply: one chip on every PE, no epilogue (kd-synth-levers)."""
    return spec.epilogue is None and spec.chips == 1 and target.slices(spec) == 256


def points(spec: Any) -> dict[str, list[Any]]:
    """The levers and their values for `spec` (the module docstring)."""
    size = spec.padded
    # 32 or 64 bytes (OUTER-3), whole packets of k
    packets = [p for p in ([32, 64] if spec.dtype_in == "i8" else [16, 32]) if size[spec.contracted] % p == 0]
    slices = target.slices(spec)
    if spec.form == "gemv":
        rows = size[spec.result[1][0]]
        return {"packet": packets, "reuse": ["trf", "none"] if rows > slices else ["trf"]}
    m, n = (size[i] for i in _kept(spec))
    shapes = blocks(spec)
    (an, _), (wn, _) = gemm_roles(spec)
    if needs_split(spec) and _split_ok(spec) and split_placements(spec, m, n):  # k splits (npu_opt/synth/tiling.py)
        whole = [g.label() for g in result_placements(m, n, slices, False, shapes)] if shapes else []
        return split_levers(spec, m, n, packets, wn, whole)
    placements = result_placements(m, n, slices, pad_ok(spec), shapes)
    if spec.batch is not None:  # batch elements side by side on slices: each on a share of them
        nb = size[spec.batch]
        for sb in (2 ** e for e in range(1, slices.bit_length())):
            if nb % sb == 0:
                placements += [attrs.evolve(g, sb=sb) for g in result_placements(m, n, slices // sb, False, shapes)]
    tiles = max((m // g.tm) * (n // g.tn) for g in placements)
    levers: dict[str, list[Any]] = {"placement": [g.label() for g in placements], "trf": [wn, an],
                                    "packet": packets}
    if tiles > 1:
        levers |= {"order": ["ij", "ji"], "reuse": ["outer", "all", "none"]}
    return levers


def _chain(idx: tuple[str, ...], steps: list[tuple[str, int, int | None, str]], write: bool = False) -> str:
    """The `.tile(...)` calls that pick one tile of a view of a tensor indexed `idx`: each step
    (index, count, size, variable) splits `index` into `count` tiles of `size` (None: one
    element, the batch) and takes tile `variable`; write views mark the tile axes `#{!}`."""
    terms = [i.upper() for i in idx]
    mark = "#{!}" if write else "#"
    calls = []
    for index, count, size, var in steps:
        X = index.upper()
        terms[idx.index(index)] = f"1 {mark} {count}" if size is None else f"1 {mark} {count}, {X} % {size}"
        calls.append(f'.tile(m("{X if size is None else f"{X} / {size}"}"), 1, m("{", ".join(terms)}"), {var})')
    return "".join(calls)


def _hbm(name: str, idx: tuple[str, ...]) -> str:
    return ", ".join(i.upper() for i in idx)


def source(spec: Any, point: dict[str, Any]) -> str:
    """The candidate's kernel file (a module defining the @device kernel `spec.name`)."""
    return _gemv(spec, point) if spec.form == "gemv" else _gemm(spec, point)


def _header(spec: Any, point: dict[str, Any]) -> list[str]:
    choice = ", ".join(f"{k}={v!r}" for k, v in point.items())
    sizes = ", ".join(f"{i.upper()}={n}" for i, n in spec.padded.items())
    given = ", ".join(f"{i}={n}" for i, n in spec.sizes.items())
    return [f'"""{spec.name}: {spec.text} ({spec.dtype_in} -> {spec.dtype_out}), written by `npu-opt synth`.',
            "",
            f"Sizes {given}; the kernel's axes are padded to multiples of 32"
            + (f" (its rows to whole passes of {target.slices(spec)} slices)" if spec.form == "gemv" else "")
            + f": {sizes}",
            "(pad the host arrays with zeros and cut the result: npu_opt.synth.Contraction.pad / unpad).",
            f"The search's choice: {choice}.",
            '"""', "", "from npu_opt import *", *target.imports(spec), "", f"axes({target.axes_prefix(spec)}{sizes})", ""]


def _gemm_names(spec: Any, p: dict[str, Any]) -> dict[str, Any]:
    """Every name and number the GEMM template uses (the `v` of the _gemm_* pieces)."""
    (an, aidx), (wn, widx) = gemm_roles(spec)
    mi, ni = _kept(spec)
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
             stationary_w=stationary_w, Kl=geo.k_local(K, size[spec.contracted]))
    # a result smaller than the tile is padded to it inside the kernel (`M # 128`): one tile,
    # the padding computed and never stored
    for x, n_, t_, var in (("M", size[mi], tm, "i"), ("N", size[ni], tn, "j")):
        padded = n_ % t_ != 0
        v[x] = f"{v[x]} # {t_}" if padded else v[x]
        v[f"{var}_step"] = [] if padded else [((mi, ni)[var == "j"], v["mt" if var == "i" else "nt"], t_, var)]
    M, N = v["M"], v["N"]
    v["S"], v["T"] = (M, N) if stationary_w else (N, M)      # streamed rows, stationary rows (the lanes)
    v["rs"], v["rt"] = (r, c) if stationary_w else (c, r)    # their rows per slice
    v["g"] = v["rt"] // 8                                    # stationary rows per lane
    v["s_dm"], v["t_dm"] = ("a_dm", "w_dm") if stationary_w else ("w_dm", "a_dm")
    # the batch: elements side by side on `sb` slices each step, the steps one after another
    v["steps"] = v["nb"] // geo.sb
    v["batch"] = ([] if geo.sb == v["nb"] else [(bi, v["steps"], None if geo.sb == 1 else geo.sb, "bb")]) if bi else []
    return v


def _gemm(spec: Any, p: dict[str, Any]) -> str:
    v = _gemm_names(spec, p)
    body = tile_loops(v)
    if v["batch"]:
        each = "one GEMM per" if v["geo"].sb == 1 else f"{v['geo'].sb} GEMMs side by side per step of"
        body = [f"    # the batch: {each} {v['bi'].upper()}, its blocks picked by tiles of the batch axis",
                f"    for bb in range({v['steps']}):"] + ["    " + line for line in body]
    return "\n".join(_header(spec, p) + _gemm_mapping(v) + _gemm_blocks(v) + _gemm_tile(v) + body) + "\n"


def _gemm_mapping(v: dict[str, Any]) -> list[str]:
    """The mapping constants and the kernel's signature."""
    spec, p, geo = v["spec"], v["p"], v["geo"]
    an, wn, (rn, ridx) = v["an"], v["wn"], spec.result
    M, N, K, r, c = v["M"], v["N"], v["K"], v["r"], v["c"]
    params = {an: f'{an}: HbmTensor[{v["din"]}, Chip, m("{_hbm(an, v["aidx"])}")]',
              wn: f'{wn}: HbmTensor[{v["din"]}, Chip, m("{_hbm(wn, v["widx"])}")]'}
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
    lines += [f'Slice = m("{geo.slice_map(M, N, K, v["size"][spec.contracted], (v["bi"] or "").upper())}")',
              "",
              "",
              target.decorator(spec),
              f"def {spec.name}(ctx: Context,",
              *[f"        {params[name]}," for name, _ in spec.operands],
              *epilogue.param(spec),
              f'        {rn}: Mut[HbmTensor[{v["dout"]}, Chip, m("{_hbm(rn, ridx)}")]]) -> None:']
    return lines


def _gemm_blocks(v: dict[str, Any]) -> list[str]:
    """The row-block loads and the TRF load."""
    an, wn, M, N, T, K, Kl, din = v["an"], v["wn"], v["M"], v["N"], v["T"], v["K"], v["Kl"], v["din"]
    r, c, g, flit, tb = v["r"], v["c"], v["g"], v["flit"], v["geo"].tb
    if tb > 1:  # k in time blocks (npu_opt/synth/tiling.py): each block a list of its k chunks
        chunk = [(v["spec"].contracted, tb, v["size"][v["spec"].contracted] // tb, "t")]
        return time_block_loads(v, _chain(v["aidx"], v["batch"] + v["i_step"] + chunk),
                                _chain(v["widx"], v["batch"] + v["j_step"] + chunk))
    return [f"    def a_block(i):",
            f"        # row block i of {an} ({v['tm']} rows), each slice's {r} rows into its DM",
            f'        rows = {an}.view(){_chain(v["aidx"], v["batch"] + v["i_step"])}',
            f'        return rows.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{M} % {r}, {Kl}")])',
            "",
            f"    def w_block(j):",
            f"        # row block j of {wn} ({v['tn']} rows), each slice's {c} rows into its DM",
            f'        rows = {wn}.view(){_chain(v["widx"], v["batch"] + v["j_step"])}',
            f'        return rows.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{N} % {c}, {Kl}")])',
            "",
            "    def stationary(block):",
            f"        # trf={v['p']['trf']!r}: {v['wn'] if v['stationary_w'] else v['an']}'s {v['rt']} rows per slice go to "
            f"the TRF, 8 lanes x {g} rows each,",
            f"        # in {flit}-element (32-byte) flits; the other operand streams past them",
            "        return (ctx.sub.begin(block.view())",
            f'                .fetch(m("{T} % 8, {T} / 8 % {g}"), m("{Kl}"))',
            f'                .collect(m("{T} % 8, {T} / 8 % {g}, {Kl} / {flit}"), m("{K} % {flit}"))',
            f'                .to_trf(m("{T} % 8"), m("{T} / 8 % {g}, {Kl}")))',
            ""]


def _gemm_tile(v: dict[str, Any]) -> list[str]:
    """One tile: the contraction, the inter-slice reduce of a split `k`, the store."""
    S, T, K, rs, rt, g = v["S"], v["T"], v["K"], v["rs"], v["rt"], v["g"]
    packet, din, dout, geo = v["packet"], v["din"], v["dout"], v["geo"]
    rn, ridx = v["spec"].result
    dst = [".tile" + call for call in _chain(ridx, v["batch"] + v["i_step"] + v["j_step"], write=True)
           .split(".tile") if call]
    if geo.tb > 1:
        return time_block_tile(v, dst)
    load, take = epilogue.bias_lines(v["spec"], "        ", _chain((v["ni"],), v["j_step"]), v["c"], v["N"])
    lines = [*load,
             "    def tile(streamed, trf, i, j):",
             *take,
             f"        # packet={packet}: each contraction step multiplies {packet} elements of {K} "
             f"({packet * (1 if din == 'i8' else 2)} bytes, OUTER-3); the time loop sums the rest",
             "        result = (ctx.main.begin(streamed.view())",
             *contraction_chain(v, " " * 18)]
    if geo.sk > 1:
        op = "InterSliceReduceOpI32" if dout == "i32" else "InterSliceReduceOpF32"
        lines += [f"                  # the {geo.sk} slices of each {K} chunk add their partial sums",
                  "                  .vector_init()",
                  f'                  .vector_inter_slice_reduce(m("{geo.reduced_slices(v["M"], v["N"])}"), '
                  f'm("{S} % {rs}, {T} / 8 % {g}"), {op}.ADD)',
                  "                  .vector_final()"]
    lines += epilogue.vector_lines(v["spec"], " " * 18) + epilogue.cast_lines(v["spec"], " " * 18, f"{T} % 8")
    if dout == "bf16":
        lines += [f'                  .cast(bf16, m("{T} % 8 # 16"))  # f32 sums rounded to bf16 once, at the end']
    lines += [f'                  .commit_trim(m("{T} % 8"))',
              f'                  .commit(m("{S} % {rs}, {T} % {rt}")))',
              *([f"        dst = ({rn}.view_mut()",
                 *[f"               {call})" if k == len(dst) - 1 else f"               {call}"
                   for k, call in enumerate(dst)]] if dst else [f"        dst = {rn}.view_mut()  # the whole result"]),
              f"        {target.reduced(v['spec'], 'result')}.view().to_hbm_view(ctx.tdma, dst)",
              ""]
    return lines


def _gemv(spec: Any, p: dict[str, Any]) -> str:
    (an, aidx), (xn, xidx) = sorted(spec.operands, key=lambda o: -len(o[1]))
    rn, (mi,) = spec.result
    M, K = mi.upper(), spec.contracted.upper()
    rows = spec.padded[mi]
    slices = target.slices(spec)
    mt = max(1, rows // slices)
    din, dout = spec.dtype_in, spec.result_dtype
    flit = 32 if din == "i8" else 16
    packet, reuse = p["packet"], p["reuse"]
    params = {an: f'{an}: HbmTensor[{din}, Chip, m("{_hbm(an, aidx)}")]',
              xn: f'{xn}: HbmTensor[{din}, Chip, m("{K}")]'}
    L = _header(spec, p)
    L += [*target.chip_line(spec),
          *target.cluster_line(spec),
          f"# one row of {an} per slice: {slices} rows a pass, {mt} pass(es) over the padded {rows} rows"
          + ("" if rows >= slices else f" ({slices - rows} slices idle)"),
          f'Slice = m("{M} % {slices}")' if rows >= slices else f'Slice = m("{M} # {slices}")',
          "",
          "",
          target.decorator(spec),
          f"def {spec.name}(ctx: Context,",
          *[f"        {params[name]}," for name, _ in spec.operands],
          *epilogue.param(spec),
          f'        {rn}: Mut[HbmTensor[{dout}, Chip, m("{M}")]]) -> None:',
          "    def vector_trf():",
          f"        # {xn} is broadcast to every slice (its DM layout has no {M}) and loaded into the TRF",
          f'        x_dm = {xn}.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{K}")])',
          "        return (ctx.sub.begin(x_dm.view())",
          f'                .fetch(m("1"), m("{K}"))',
          f'                .collect(m("{K} / {flit}"), m("{K} % {flit}"))',
          f'                .to_trf(m("1"), m("{K}")))',
          "",
          "    def block(i, trf):",
          f'        rows = {an}.view(){_chain(aidx, [(mi, mt, slices, "i")]) if rows >= slices else ""}',
          f'        rows_dm = rows.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{K}")])',
          f"        # packet={packet}: each contraction step multiplies {packet} elements of {K} "
          f"({packet * (1 if din == 'i8' else 2)} bytes, OUTER-3)",
          "        result = (ctx.main.begin(rows_dm.view())",
          f'                  .fetch(m("{K} / {flit}"), m("{K} % {flit}"))',
          f'                  .collect(m("{K} / {flit}"), m("{K} % {flit}"))',
          f'                  .contract_outer(trf, m("{K} / {packet}"), m("{K} % {packet}"))',
          '                  .contract_packet(m("1"))',
          '                  .contract_time(m("1"))',
          '                  .contract_lane(m("1"), m("1 # 8"), LaneMode.INTERLEAVED)']
    L += epilogue.vector_lines(spec, " " * 18) + epilogue.cast_lines(spec, " " * 18, "1")
    if dout == "i8":
        L += ['                  .commit_trim(m("1 # 8"))  # 8 bytes: the smallest commit',
              '                  .commit(m("1 # 8")))']
    elif dout == "bf16":
        L += ['                  .cast(bf16, m("1 # 16"))  # f32 sums rounded to bf16 once, at the end',
              '                  .commit_trim(m("1 # 4"))  # 8 bytes: the smallest commit',
              '                  .commit(m("1 # 4")))']
    else:
        L += ['                  .commit_trim(m("1 # 2"))  # 8 bytes: the smallest commit',
              '                  .commit(m("1 # 2")))']
    store = _chain((mi,), [(mi, mt, slices, "i")], write=True) if rows >= slices else ""
    L += [f'        dst = {rn}.view_mut(){store}',
          f"        {target.reduced(spec, 'result')}.view().to_hbm_view(ctx.tdma, dst)",
          ""]
    if reuse == "trf":
        L += [f"    # reuse='trf': {xn} is loaded into the TRF once and kept for every row block",
              "    trf = vector_trf()",
              f"    {loop_header('i', mt, mt > 1)}",
              "        block(i, trf)"]
    else:
        L += [f"    # reuse='none': {xn} is loaded again for every row block",
              f"    {loop_header('i', mt, mt > 1)}",
              "        block(i, vector_trf())"]
    return "\n".join(L) + "\n"


def build(spec: Any, point: dict[str, Any], filename: str | None = None) -> Any:
    """The candidate's @device kernel: its source run as a module of its own (`filename` is the
    path its source locations name; the emitted file's, when the search writes one)."""
    text = source(spec, point)
    filename = filename or f"<synth {spec.name}>"
    code = compile(text, filename, "exec", dont_inherit=True)
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    module = types.ModuleType(f"npu_opt_synth_{spec.name}")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    exec(code, module.__dict__)  # noqa: S102 - the generated kernel file, run as `import` runs a file
    return getattr(module, spec.name)


def _inputs(spec: Any) -> Any:
    def inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        din, dout = spec.host_dtypes()
        arrays = []
        for _, idx in spec.operands:
            shape = spec.shape(idx, padded=False)
            if din == np.int8:
                arrays.append(rng.integers(-128, 128, shape, dtype=np.int8))
            else:  # small integers: bf16 products and f32 sums of them are exact, any order
                arrays.append(rng.integers(-4, 5, shape).astype(din))
        return (*spec.pad(*arrays), np.zeros(spec.shape(spec.result[1]), dout))
    return inputs


def _oracle(spec: Any) -> Any:
    letters = {i: chr(ord("a") + n) for n, i in enumerate(spec.sizes)}
    subs = ",".join("".join(letters[i] for i in idx) for _, idx in spec.operands)
    expr = f"{subs}->{''.join(letters[i] for i in spec.result[1])}"

    def oracle(*arrays: np.ndarray) -> np.ndarray:
        _, dout = spec.host_dtypes()
        ops = [a.astype(np.int64 if a.dtype == np.int8 else np.float64) for a in arrays[:len(spec.operands)]]
        if spec.epilogue is not None:
            return epilogue.apply(spec, np.einsum(expr, *ops), arrays)
        return np.einsum(expr, *ops).astype(dout)  # i32 wraps as the engine's adds do; bf16 rounds once
    return oracle


def space_of(spec: Any, filename: str | None = None, run: bool | None = None) -> Any:
    """The tune Space of every candidate of `spec`, with inputs and the numpy oracle when its
    candidates run (`run`; None: when `runs_in_full(spec)`)."""
    def factory(**point: Any) -> Any:
        return build(spec, point, filename)

    factory.__name__ = spec.name
    keys: dict[tuple[Any, ...], str] = {}
    levers = points(spec)
    every = [dict(zip(levers, values)) for values in itertools.product(*levers.values())]
    # a space none of whose points fits is searched whole: the rules say why each is refused
    budget = any(offered(spec, point) for point in every)

    def distinct(point: dict[str, Any]) -> str | None:
        if budget and not offered(spec, point):  # beyond the TRF or the DM, or too many unrolled tiles
            return None
        key = tuple(point.items())
        if key not in keys:
            keys[key] = canonical(source(spec, point))
        return keys[key]

    if not (runs_in_full(spec) if run is None else run):  # checked at a proxy size instead (driver/synth.py)
        return Space(factory, levers, distinct=distinct)
    return Space(factory, levers, inputs=epilogue.with_bias(spec, _inputs(spec)),
                 oracle=target.whole_oracle(spec, _oracle(spec)), distinct=distinct)


def canonical(text: str) -> str:
    """A candidate's kernel source without what names the point: its docstring and its comment
    lines. Two points with the same canonical source build the same kernel: the space keeps
    the first (the bf16 split space listed one placement twice)."""
    body = text.split('"""', 2)[2] if text.startswith('"""') else text
    return "\n".join(line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#"))
