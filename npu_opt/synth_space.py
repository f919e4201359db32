"""The candidate kernels of a contraction (npu_opt/synth.py), generated from the machine's
rules, as readable Python source: `source(spec, point)` writes one candidate's kernel file,
`space_of(spec)` is the tune Space of all of them (docs/synth.md).

The levers of a GEMM `out[M, N] = a[M, K] . w[N, K]` (one pass of the contraction computes a
tile of 256 slices of 32 x 32 results; larger outputs loop over tiles):
- `placement`: "SMxSN of RxC": each slice computes R x C results (32 x 32, or 8 x 128, whose
  rows of 128 results store to HBM in longer packets), SM slices along M times SN along N
  (SM * SN = 256) make one tile; only placements whose tile fits the result are generated;
- `trf`: which operand is stationary in the TRF (its rows become the 8 lanes);
- `packet`: the contraction packet along K: 32 or 64 bytes (rule OUTER-3), 32/64 i8 or 16/32 bf16;
- `order` / `reuse`: the tile loop's order and which loaded blocks are kept (more than one tile).
A batched GEMM `out[B, M, N] = a[B, M, K] . w[B, N, K]` runs the GEMM's loops once per batch
element, picking its blocks through tiles of the batch axis (same levers).
A GEMV `out[M] = a[M, K] . x[K]` puts one row per slice (256 rows a pass) with x broadcast
into every slice's TRF; its levers are `packet` and whether x's TRF load is reused across
row blocks. A candidate the rules refuse is the compiler's business: it fails to trace or
verify and the tuner counts it under its rule ID.
"""

from __future__ import annotations

import linecache
import sys
import types
from typing import Any

import numpy as np

from npu_opt import synth_epilogue as epilogue, synth_target as target
from npu_opt.tune import Space

__all__ = ["points", "source", "space_of", "build"]

BLOCKS = ((32, 32), (8, 128))  # a slice's rows x columns of the result


def _ax(i: str) -> str:
    return i.upper()


def _kept(spec: Any) -> tuple[str, ...]:
    """The result's indices other than the batch index: (m, n) of a GEMM."""
    return tuple(i for i in spec.result[1] if i != spec.batch)


def gemm_roles(spec: Any) -> tuple[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...]]]:
    """(a, w): the operand that carries the result's first index, then the other."""
    first = _kept(spec)[0]
    a, w = spec.operands if first in spec.operands[0][1] else spec.operands[::-1]
    return a, w


def points(spec: Any) -> dict[str, list[Any]]:
    """The levers and their values for `spec` (the module docstring)."""
    packets = [32, 64] if spec.dtype_in == "i8" else [16, 32]  # 32 or 64 bytes (OUTER-3)
    size = spec.padded
    slices = target.slices(spec)
    if spec.form == "gemv":
        rows = size[spec.result[1][0]]
        return {"packet": packets, "reuse": ["trf", "none"] if rows > slices else ["trf"]}
    m, n = (size[i] for i in _kept(spec))
    placements = [(r, c, s) for r, c in BLOCKS for s in (2 ** e for e in range(slices.bit_length()))
                  if r * s <= m and c * (slices // s) <= n]
    if not placements:  # no tile fits: offer the squarest, which the mapping rules refuse with their ID
        placements = [(32, 32, 1 << (slices.bit_length() // 2))]
    tiles = max((m // (r * s)) * (n // (c * (slices // s))) for r, c, s in placements)
    levers: dict[str, list[Any]] = {"placement": [f"{s}x{slices // s} of {r}x{c}" for r, c, s in placements],
                                    "trf": ["w", "a"], "packet": packets}
    if tiles > 1:
        levers |= {"order": ["ij", "ji"], "reuse": ["outer", "all", "none"]}
    return levers


def _chain(idx: tuple[str, ...], steps: list[tuple[str, int, int | None, str]], write: bool = False) -> str:
    """The `.tile(...)` calls that pick one tile of a view of a tensor indexed `idx`: each step
    (index, count, size, variable) splits `index` into `count` tiles of `size` (None: one
    element, the batch) and takes tile `variable`; write views mark the tile axes `#{!}`."""
    terms = [_ax(i) for i in idx]
    mark = "#{!}" if write else "#"
    calls = []
    for index, count, size, var in steps:
        X = _ax(index)
        terms[idx.index(index)] = f"1 {mark} {count}" if size is None else f"1 {mark} {count}, {X} % {size}"
        calls.append(f'.tile(m("{X if size is None else f"{X} / {size}"}"), 1, m("{", ".join(terms)}"), {var})')
    return "".join(calls)


def _hbm(name: str, idx: tuple[str, ...]) -> str:
    return ", ".join(_ax(i) for i in idx)


def _dtype_names(spec: Any) -> tuple[str, str]:
    return spec.dtype_in, spec.result_dtype


def source(spec: Any, point: dict[str, Any]) -> str:
    """The candidate's kernel file (a module defining the @device kernel `spec.name`)."""
    return _gemv(spec, point) if spec.form == "gemv" else _gemm(spec, point)


def _header(spec: Any, point: dict[str, Any]) -> list[str]:
    choice = ", ".join(f"{k}={v!r}" for k, v in point.items())
    sizes = ", ".join(f"{_ax(i)}={n}" for i, n in spec.padded.items())
    given = ", ".join(f"{i}={n}" for i, n in spec.sizes.items())
    return [f'"""{spec.name}: {spec.text} ({spec.dtype_in} -> {spec.dtype_out}), written by `npu-opt synth`.',
            "",
            f"Sizes {given}; the kernel's axes are padded to multiples of 32: {sizes}",
            "(pad the host arrays with zeros and cut the result: npu_opt.synth.Contraction.pad / unpad).",
            f"The search's choice: {choice}.",
            '"""', "", "from npu_opt import *", *target.imports(spec), "", f"axes({target.axes_prefix(spec)}{sizes})", ""]


def _gemm(spec: Any, p: dict[str, Any]) -> str:
    (an, aidx), (wn, widx) = gemm_roles(spec)
    rn, ridx = spec.result
    mi, ni = _kept(spec)
    M, N, K = _ax(mi), _ax(ni), _ax(spec.contracted)
    bi = spec.batch
    nb = spec.padded[bi] if bi else 1
    batch = [(bi, nb, None, "bb")] if bi else []
    size = spec.padded
    slices = target.slices(spec)
    grid, _, block = p["placement"].partition(" of ")
    sm = int(grid.split("x")[0])
    r, c = (int(x) for x in block.split("x"))
    tm, tn = r * sm, c * (slices // sm)
    mt, nt = max(1, size[mi] // tm), max(1, size[ni] // tn)
    din, dout = _dtype_names(spec)
    flit = 32 if din == "i8" else 16  # elements of one 32-byte flit
    packet, order, reuse = p["packet"], p.get("order", "ij"), p.get("reuse", "outer")
    stationary_w = p["trf"] == "w"
    S, T = (M, N) if stationary_w else (N, M)       # streamed rows, stationary rows (the lanes)
    rs, rt = (r, c) if stationary_w else (c, r)     # their rows per slice
    g = rt // 8                                     # stationary rows per lane
    s_dm, t_dm = ("a_dm", "w_dm") if stationary_w else ("w_dm", "a_dm")
    params = {an: f'{an}: HbmTensor[{din}, Chip, m("{_hbm(an, aidx)}")]',
              wn: f'{wn}: HbmTensor[{din}, Chip, m("{_hbm(wn, widx)}")]'}
    order_params = [params[name] for name, _ in spec.operands]
    dst = [".tile" + c for c in _chain(ridx, batch + [(mi, mt, tm, "i"), (ni, nt, tn, "j")], write=True)
           .split(".tile") if c]
    L = _header(spec, p)
    L += [*target.chip_line(spec),
          *target.cluster_line(spec),
          f"# placement={p['placement']!r}: each slice computes {r} x {c} results; {sm} x {slices // sm} "
          f"slices make a",
          f"# {tm} x {tn} tile ({mt} x {nt} tile(s) cover the padded {size[mi]} x {size[ni]} result); a slice's",
          f"# rows of {c} results leave for HBM as packets of {c * {'i8': 1, 'bf16': 2}.get(dout, 4)} bytes.",
          f'Slice = m("{M} % {tm} / {r}, {N} % {tn} / {c}")',
          "",
          "",
          target.decorator(spec),
          f"def {spec.name}(ctx: Context,",
          *[f"        {q}," for q in order_params],
          *epilogue.param(spec),
          f'        {rn}: Mut[HbmTensor[{dout}, Chip, m("{_hbm(rn, ridx)}")]]) -> None:',
          f"    def a_block(i):",
          f"        # row block i of {an} ({tm} rows), each slice's {r} rows into its DM",
          f'        rows = {an}.view(){_chain(aidx, batch + [(mi, mt, tm, "i")])}',
          f'        return rows.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{M} % {r}, {K}")])',
          "",
          f"    def w_block(j):",
          f"        # row block j of {wn} ({tn} rows), each slice's {c} rows into its DM",
          f'        rows = {wn}.view(){_chain(widx, batch + [(ni, nt, tn, "j")])}',
          f'        return rows.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{N} % {c}, {K}")])',
          "",
          "    def stationary(block):",
          f"        # trf={p['trf']!r}: {'w' if stationary_w else 'a'}'s {rt} rows per slice go to the TRF, 8 lanes x "
          f"{g} rows each,",
          f"        # in {flit}-element (32-byte) flits; the other operand streams past them",
          "        return (ctx.sub.begin(block.view())",
          f'                .fetch(m("{T} % 8, {T} / 8 % {g}"), m("{K}"))',
          f'                .collect(m("{T} % 8, {T} / 8 % {g}, {K} / {flit}"), m("{K} % {flit}"))',
          f'                .to_trf(m("{T} % 8"), m("{T} / 8 % {g}, {K}")))',
          "",
          "    def tile(streamed, trf, i, j):",
          *epilogue.bias_lines(spec, "        ", _chain((ni,), [(ni, nt, tn, "j")]), c),
          f"        # packet={packet}: each contraction step multiplies {packet} elements of {K} "
          f"({packet * (1 if din == 'i8' else 2)} bytes, OUTER-3); the time loop sums the rest",
          "        result = (ctx.main.begin(streamed.view())",
          f'                  .fetch(m("{S} % {rs}, {T} / 8 % {g}"), m("{K}"))',
          f'                  .collect(m("{S} % {rs}, {T} / 8 % {g}, {K} / {flit}"), m("{K} % {flit}"))',
          f'                  .contract_outer(trf, m("{S} % {rs}, {T} / 8 % {g}, {K} / {packet}"), m("{K} % {packet}"))',
          '                  .contract_packet(m("1"))',
          f'                  .contract_time(m("{S} % {rs}, {T} / 8 % {g}"))',
          f'                  .contract_lane(m("{S} % {rs}, {T} / 8 % {g}"), m("{T} % 8"), LaneMode.INTERLEAVED)']
    L += epilogue.vector_lines(spec, " " * 18) + epilogue.cast_lines(spec, " " * 18, f"{T} % 8")
    if dout == "bf16":
        L += [f'                  .cast(bf16, m("{T} % 8 # 16"))  # f32 sums rounded to bf16 once, at the end']
    L += [f'                  .commit_trim(m("{T} % 8"))',
          f'                  .commit(m("{S} % {rs}, {T} % {rt}")))',
          f"        dst = ({rn}.view_mut()",
          *[f"               {call})" if k == len(dst) - 1 else f"               {call}"
            for k, call in enumerate(dst)],
          f"        {target.reduced(spec, 'result')}.view().to_hbm_view(ctx.tdma, dst)",
          ""]
    body: list[str] = []
    if mt * nt == 1:
        body += ["    # one tile: load both operands once and contract",
              f"    a_dm, w_dm = a_block(0), w_block(0)",
              f"    tile({s_dm}, stationary({t_dm}), 0, 0)"]
    else:
        outer_n, inner_n = (mt, nt) if order == "ij" else (nt, mt)
        o_name, i_name = ("i", "j") if order == "ij" else ("j", "i")
        body.append(f"    # order={order!r}: the outer loop walks {'row' if order == 'ij' else 'column'} blocks; "
                 f"reuse={reuse!r}: " + {"all": "every block is loaded once, before the loops",
                                          "outer": "the outer loop's block is loaded once per outer step",
                                          "none": "both blocks are loaded for every tile"}[reuse])
        if reuse == "all":
            body += [f"    a_all = [a_block(i) for i in range({mt})]",
                  f"    w_all = [w_block(j) for j in range({nt})]",
                  f"    trf_all = [stationary(blk) for blk in {'w_all' if stationary_w else 'a_all'}]",
                  f"    for {o_name} in range({outer_n}):",
                  f"        for {i_name} in range({inner_n}):",
                  f"            tile({'a_all[i]' if stationary_w else 'w_all[j]'}, "
                  f"trf_all[{'j' if stationary_w else 'i'}], i, j)"]
        else:
            o_load = "a_block(i)" if order == "ij" else "w_block(j)"
            o_var = "a_dm" if order == "ij" else "w_dm"
            i_load = "w_block(j)" if order == "ij" else "a_block(i)"
            i_var = "w_dm" if order == "ij" else "a_dm"
            o_is_trf = o_var == t_dm
            body += [f"    for {o_name} in range({outer_n}):"]
            ind = "        "
            if reuse == "outer":
                body.append(f"{ind}{o_var} = {o_load}")
                if o_is_trf:
                    body.append(f"{ind}trf = stationary({o_var})")
            body.append(f"{ind}for {i_name} in range({inner_n}):")
            ind2 = ind + "    "
            if reuse == "none":
                body.append(f"{ind2}{o_var} = {o_load}")
            body.append(f"{ind2}{i_var} = {i_load}")
            if reuse == "none" or not o_is_trf:
                body.append(f"{ind2}trf = stationary({t_dm})")
            body.append(f"{ind2}tile({s_dm}, trf, i, j)")
    if bi:
        L += [f"    # the batch: one GEMM per {_ax(bi)}, its blocks picked by tiles of the batch axis",
              f"    for bb in range({nb}):"] + ["    " + line for line in body]
    else:
        L += body
    return "\n".join(L) + "\n"


def _gemv(spec: Any, p: dict[str, Any]) -> str:
    (an, aidx), (xn, xidx) = sorted(spec.operands, key=lambda o: -len(o[1]))
    rn, (mi,) = spec.result
    M, K = _ax(mi), _ax(spec.contracted)
    rows = spec.padded[mi]
    slices = target.slices(spec)
    mt = max(1, rows // slices)
    din, dout = _dtype_names(spec)
    flit = 32 if din == "i8" else 16
    packet, reuse = p["packet"], p["reuse"]
    params = {an: f'{an}: HbmTensor[{din}, Chip, m("{_hbm(an, aidx)}")]',
              xn: f'{xn}: HbmTensor[{din}, Chip, m("{K}")]'}
    lanes = 8 if dout == "bf16" or din == "i8" else 8
    L = _header(spec, p)
    L += [*target.chip_line(spec),
          *target.cluster_line(spec),
          f"# one row of {an} per slice: {slices} rows a pass, {mt} pass(es) over the padded {rows} rows",
          f'Slice = m("{M} % {slices}")',
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
          f'        rows = {an}.view(){_chain(aidx, [(mi, mt, slices, "i")])}',
          f'        rows_dm = rows.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{K}")])',
          f"        # packet={packet}: each contraction step multiplies {packet} elements of {K} "
          f"({packet * (1 if din == 'i8' else 2)} bytes, OUTER-3)",
          "        result = (ctx.main.begin(rows_dm.view())",
          f'                  .fetch(m("{K} / {flit}"), m("{K} % {flit}"))',
          f'                  .collect(m("{K} / {flit}"), m("{K} % {flit}"))',
          f'                  .contract_outer(trf, m("{K} / {packet}"), m("{K} % {packet}"))',
          '                  .contract_packet(m("1"))',
          '                  .contract_time(m("1"))',
          f'                  .contract_lane(m("1"), m("1 # {lanes}"), LaneMode.INTERLEAVED)']
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
    L += [f'        dst = {rn}.view_mut(){_chain((mi,), [(mi, mt, slices, "i")], write=True)}',
          f"        {target.reduced(spec, 'result')}.view().to_hbm_view(ctx.tdma, dst)",
          ""]
    if reuse == "trf":
        L += [f"    # reuse='trf': {xn} is loaded into the TRF once and kept for every row block",
              "    trf = vector_trf()",
              f"    for i in range({mt}):",
              "        block(i, trf)"]
    else:
        L += [f"    # reuse='none': {xn} is loaded again for every row block",
              f"    for i in range({mt}):",
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


def space_of(spec: Any, filename: str | None = None) -> Any:
    """The tune Space of every candidate of `spec`, with inputs and the numpy oracle."""
    def factory(**point: Any) -> Any:
        return build(spec, point, filename)

    factory.__name__ = spec.name
    return Space(factory, points(spec), inputs=epilogue.with_bias(spec, _inputs(spec)),
                 oracle=target.whole_oracle(spec, _oracle(spec)))
