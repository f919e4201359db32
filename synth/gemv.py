"""The GEMV candidates of `npu-opt synth`: `out[M] = a[M, K] . x[K]` (docs/synth.md "A GEMV").

A GEMV multiplies each byte of `a` once, so it is bound by moving `a` from HBM: the forms
differ in how `a`'s rows reach the slices and how the sums leave them. The `layout` lever:

- "a row per slice": each slice takes one row of `a` (256 rows a pass of a cluster) and `x`,
  broadcast, sits in every slice's TRF; a 4-byte sum per slice and pass leaves in an 8-byte
  commit. With many rows this is many passes, each a DMA of its own, each slice's sum a
  partial HBM write.
- "R rows per slice": each slice holds R rows of `a` (R a power of two, at least one lane
  group of 8) with their whole `k` in its TRF, 8 lanes x R / 8 rows, and `x`, broadcast to
  every slice's DM once, streams past them R / 8 times; a slice's R sums leave as one piece.
  R * K bytes fill at most the TRF (TRF_BYTES); the rows a pass covers are the busy
  slices times R, the slices past the last row block idle.
- "R rows per slice, k over SK slices": the same, with `k` cut into SK chunks of whole
  packets on SK neighbouring slices (the innermost slice factor, rule VE-INTER-3): each slice
  holds R rows of its chunk and its chunk of `x`, and the inter-slice reducer adds the SK
  partial sums. It is generated when R rows with their whole `k` overflow the TRF, or when
  the row blocks leave slices idle that the chunks fill. A chunk is at least 256 bytes
  (the HBM's aligned access, `ALIGN_BYTES`): the reference's `matmul_4096` cuts `k` into
  32-byte chunks over 128 slices, and each slice's 1024 pieces of 32 bytes then cost an
  unaligned HBM read each (benchmarks/hand_kernels/gemv_k_split.py models at 7x the rows
  layout).

Larger results loop over passes (a rolled `ctx.loop`), `x` loaded once. The other levers:
`packet` (32 or 64 bytes a contraction step, OUTER-3) and, for "a row per slice", `reuse`:
whether `x`'s TRF load is kept across passes ("trf") or loaded again ("none").
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from ir.dtypes import DType
from ir.words import a_an
from synth import epilogue, target
from synth.gemm_text import chain, hbm_axes, header
from synth.tile_loops import loop_header
from synth.tiling import ALIGN_BYTES
from tu_ops.target import rngd

__all__ = ["ROW", "Layout", "layout", "layouts", "levers", "source"]

ROW = "a row per slice"
_LAYOUT = re.compile(r"(\d+) rows per slice(?:, k over (\d+) slices)?$")


@attrs.frozen
class Layout:
    """R rows of `a` per slice in its TRF, `k` over `sk` slices; `blocks` row blocks a pass
    (each on `sk` slices), `passes` passes; `slices` the slices of the cluster."""

    r: int
    sk: int
    blocks: int
    passes: int
    slices: int

    def label(self) -> str:
        return f"{self.r} rows per slice" + (f", k over {self.sk} slices" if self.sk > 1 else "")


def _pass_blocks(n: int, per_pass: int) -> int:
    """Row blocks a pass of `per_pass` places holds: all `n` when they fit, else the largest
    power of two dividing `n` that fits (the passes then cover the rows exactly)."""
    if n <= per_pass:
        return n
    b = n & -n  # the largest power of two dividing n
    return min(b, per_pass)


def layout(spec: Any, label: str) -> Layout:
    """The geometry of the layout `label` for `spec` (not "a row per slice")."""
    match = _LAYOUT.match(label)
    if match is None:
        raise ValueError(f"not a synth GEMV layout: {label!r}")
    r, sk = int(match.group(1)), int(match.group(2) or 1)
    slices = target.slices(spec)
    n = spec.padded[spec.result[1][0]] // r
    blocks = _pass_blocks(n, slices // sk)
    return Layout(r, sk, blocks, n // blocks, slices)


def layouts(spec: Any) -> list[str]:
    """The layouts the machine's limits allow for `spec` (the module docstring), "a row per
    slice" first."""
    const = rngd().constants
    elem = DType(spec.dtype_in).bits // 8
    lanes = max(const.LANES)
    rows, k = spec.padded[spec.result[1][0]], spec.padded[spec.contracted]
    slices = target.slices(spec)
    packet = max(const.OUTER_PACKET_BYTES) // elem
    split_ok = spec.epilogue is None and spec.chips == 1
    out = [ROW]
    r = lanes
    while r <= rows and rows % r == 0:
        n = rows // r
        whole = r * k * elem <= const.TRF_BYTES
        if whole:
            out.append(f"{r} rows per slice")
        sk = 2
        while split_ok and sk <= slices and k % sk == 0 and (k // sk) % packet == 0 \
                and (k // sk) * elem >= ALIGN_BYTES:
            fits = r * (k // sk) * elem <= const.TRF_BYTES
            if fits and (not whole or n * sk <= slices):  # needed to fit, or it fills idle slices
                out.append(f"{r} rows per slice, k over {sk} slices")
                if not whole:  # the smallest split that fits
                    break
            if n * sk >= slices and whole:
                break
            sk *= 2
        r *= 2
    return out


def levers(spec: Any, packets: list[int]) -> dict[str, list[Any]]:
    """The GEMV's levers: `layout`, `packet`, and `reuse` for "a row per slice" passes."""
    rows = spec.padded[spec.result[1][0]]
    return {"layout": layouts(spec), "packet": packets,
            "reuse": ["trf", "none"] if rows > target.slices(spec) else ["trf"]}


def source(spec: Any, p: dict[str, Any]) -> str:
    """The candidate's kernel file."""
    label = p.get("layout", ROW)
    if label == ROW:
        return _row(spec, p)
    return _rows(spec, p, layout(spec, label))


def _names(spec: Any) -> tuple[str, tuple[str, ...], str, str, str, str, str]:
    (an, aidx), (xn, _) = sorted(spec.operands, key=lambda o: -len(o[1]))
    rn, (mi,) = spec.result
    return an, aidx, xn, rn, mi, mi.upper(), spec.contracted.upper()


def _params(spec: Any, an: str, aidx: tuple[str, ...], xn: str, K: str) -> dict[str, str]:
    din = spec.dtype_in
    return {an: f'{an}: HbmTensor[{din}, Chip, m("{hbm_axes(an, aidx)}")]',
            xn: f'{xn}: HbmTensor[{din}, Chip, m("{K}")]'}


def _tail(spec: Any, pad: str, lanes: str, rows: str) -> list[str]:
    """The epilogue, the casts and the commit of `rows` results (lanes `lanes`) per slice."""
    L = epilogue.vector_lines(spec, pad) + epilogue.cast_lines(spec, pad, lanes)
    if spec.result_dtype == "bf16":
        L.append(f'{pad}.cast(bf16, m("{lanes} # 16"))  # f32 sums rounded to bf16 once, at the end')
    return L + [f'{pad}.commit_trim(m("{lanes}"))', f'{pad}.commit(m("{rows}")))']


def _rows(spec: Any, p: dict[str, Any], geo: Layout) -> str:
    """The rows layouts: R rows of `a` per slice in the TRF, `x` streamed (the module docstring)."""
    an, aidx, xn, rn, mi, M, K = _names(spec)
    din, dout, packet = spec.dtype_in, spec.result_dtype, p["packet"]
    r, sk, blocks, passes = geo.r, geo.sk, geo.blocks, geo.passes
    flit = 32 if din == "i8" else 16
    g = r // 8
    tile = blocks * r  # the rows of a pass
    k = spec.padded[spec.contracted]
    chunk = k // sk
    Kl = f"{K} % {chunk}" if sk > 1 else K
    per_block = geo.slices // sk  # the row-block places of a pass
    rows_axis = f"{M} % {tile} / {r}" if passes > 1 else f"{M} / {r}"
    if blocks < per_block:
        rows_axis += f" # {per_block}"
    slice_map = rows_axis + (f", {K} / {chunk}" if sk > 1 else "")
    L = header(spec, p)
    L += [*target.chip_line(spec),
          *target.cluster_line(spec),
          *_rows_comment(spec, geo, an, K, chunk, mi),
          f'Slice = m("{slice_map}")',
          "",
          "",
          target.decorator(spec),
          f"def {spec.name}(ctx: Context,",
          *[f"        {_params(spec, an, aidx, xn, K)[name]}," for name, _ in spec.operands],
          *epilogue.param(spec),
          f'        {rn}: Mut[HbmTensor[{dout}, Chip, m("{M}")]]) -> None:',
          f"    # {xn} is broadcast to the slices (its DM layout has no {M}), loaded once"
          + (f": each slice its chunk of {K}" if sk > 1 else ""),
          f'    x_dm = {xn}.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{Kl}")])',
          "",
          "    def block(i):",
          f'        rows = {an}.view(){chain(aidx, [(mi, passes, tile, "i")]) if passes > 1 else ""}',
          f'        rows_dm = rows.to_dm(ctx.tdma, DmTensor[{din}, Chip, Cluster, Slice, m("{M} % {r}, {Kl}")])',
          f"        # {an}'s {r} rows per slice go to the TRF, 8 lanes x {g} rows each",
          "        trf = (ctx.sub.begin(rows_dm.view())",
          f'               .fetch(m("{M} % 8, {M} / 8 % {g}"), m("{Kl}"))',
          f'               .collect(m("{M} % 8, {M} / 8 % {g}, {Kl} / {flit}"), m("{K} % {flit}"))',
          f'               .to_trf(m("{M} % 8"), m("{M} / 8 % {g}, {Kl}")))',
          f"        # {xn} streams past them {g} time(s); packet={packet}: each contraction step multiplies "
          f"{packet} elements of {K} ({packet * (1 if din == 'i8' else 2)} bytes, OUTER-3)",
          "        result = (ctx.main.begin(x_dm.view())",
          f'                  .fetch(m("{M} / 8 % {g}"), m("{Kl}"))',
          f'                  .collect(m("{M} / 8 % {g}, {Kl} / {flit}"), m("{K} % {flit}"))',
          f'                  .contract_outer(trf, m("{M} / 8 % {g}, {Kl} / {packet}"), m("{K} % {packet}"))',
          '                  .contract_packet(m("1"))',
          f'                  .contract_time(m("{M} / 8 % {g}"))',
          f'                  .contract_lane(m("{M} / 8 % {g}"), m("{M} % 8"), LaneMode.INTERLEAVED)']
    L += _split_sum(spec, sk, rows_axis, M, g)
    L += _tail(spec, " " * 18, f"{M} % 8", f"{M} % {r}")
    store = chain((mi,), [(mi, passes, tile, "i")], write=True) if passes > 1 else ""
    L += [f"        dst = {rn}.view_mut(){store}",
          f"        {target.reduced(spec, 'result')}.view().to_hbm_view(ctx.tdma, dst)",
          ""]
    L += [f"    {loop_header('i', passes, True)}", "        block(i)"] if passes > 1 else ["    block(0)"]
    return "\n".join(L) + "\n"


def _rows_comment(spec: Any, geo: Layout, an: str, K: str, chunk: int, mi: str) -> list[str]:
    """The rows kernel's comment: what a slice holds and how many slices a pass keeps busy."""
    r, sk, tile, busy = geo.r, geo.sk, geo.blocks * geo.r, geo.blocks * geo.sk
    held = (f" times {a_an(f'{chunk}-element')} chunk of {K} (the {sk} slices of a row block add their sums)" if sk > 1
            else f" with their whole {K}")
    idle = "" if busy == geo.slices else f" ({geo.slices - busy} slices idle)"
    return [f"# layout={geo.label()!r}: each slice holds {r} rows of {an}{held} in its TRF;",
            f"# {busy} slices make a pass of {tile} rows, {geo.passes} pass(es) over the padded "
            f"{spec.padded[mi]} rows{idle}"]


def _split_sum(spec: Any, sk: int, rows_axis: str, M: str, g: int) -> list[str]:
    """The inter-slice reduce that adds the partial sums of a `k` split over `sk` slices."""
    if sk == 1:
        return []
    op = "InterSliceReduceOpI32" if spec.dtype_out == "i32" else "InterSliceReduceOpF32"
    return [f"                  # the {sk} slices of each row block add their partial sums",
            "                  .vector_init()",
            f'                  .vector_inter_slice_reduce(m("{rows_axis}, 1 # {sk}"), m("{M} / 8 % {g}"), '
            f"{op}.ADD)",
            "                  .vector_final()"]


def _row_commit(dout: str) -> list[str]:
    """The row-per-slice kernel's commit of an 8-byte result (the smallest commit)."""
    if dout == "i8":
        return ['                  .commit_trim(m("1 # 8"))  # 8 bytes: the smallest commit',
                '                  .commit(m("1 # 8")))']
    if dout == "bf16":
        return ['                  .cast(bf16, m("1 # 16"))  # f32 sums rounded to bf16 once, at the end',
                '                  .commit_trim(m("1 # 4"))  # 8 bytes: the smallest commit',
                '                  .commit(m("1 # 4")))']
    return ['                  .commit_trim(m("1 # 2"))  # 8 bytes: the smallest commit',
            '                  .commit(m("1 # 2")))']


def _row(spec: Any, p: dict[str, Any]) -> str:
    """"a row per slice": `x` in every slice's TRF, a row of `a` streamed per slice."""
    an, aidx, xn, rn, mi, M, K = _names(spec)
    rows = spec.padded[mi]
    slices = target.slices(spec)
    mt = max(1, rows // slices)
    din, dout = spec.dtype_in, spec.result_dtype
    flit = 32 if din == "i8" else 16
    packet, reuse = p["packet"], p["reuse"]
    params = _params(spec, an, aidx, xn, K)
    L = header(spec, p)
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
          f'        rows = {an}.view(){chain(aidx, [(mi, mt, slices, "i")]) if rows >= slices else ""}',
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
    L += _row_commit(dout)
    store = chain((mi,), [(mi, mt, slices, "i")], write=True) if rows >= slices else ""
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
