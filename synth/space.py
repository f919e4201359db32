"""The candidate kernels of a contraction (synth/spec.py), generated from the machine's
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
  `, w by switch` moves each block of the stationary `w` from HBM once, spread over the slices
  that share it, and broadcasts it into their TRFs through the Switch Engine;
  `, a by switch` does the same for the streamed `a` over the slices of a row of the tile
  (synth/stream_switch.py), and `, a and w by switch` both;
- `trf`: which operand is stationary in the TRF (its rows become the 8 lanes), named as
  the einsum names it (`w` first, the operand carrying the result's second index);
- `packet`: the contraction packet along K: 32 or 64 bytes (rule OUTER-3), 32/64 i8 or 16/32 bf16;
- `order` / `reuse`: the tile loop's order and which loaded blocks are kept (more than one tile);
- `pieces`: each tile's streamed row block moves, is contracted and is stored in 1 or 2
  pieces, so one piece's DMA overlaps another's contraction (synth/overlap.py);
- `pair`: a rolled tile loop holds two tiles a body, so one tile's loads and store overlap
  the other's contraction (synth/pairs.py; more than one tile, one piece a tile).
A batched GEMM `out[B, M, N] = a[B, M, K] . w[B, N, K]` runs the GEMM's loops once per batch
step (one element, or a group side by side), picking its blocks through tiles of the batch axis.
`space_of` keeps one point per canonical kernel source (`canonical`) of its model twin
(`model_twin`: the packets tie in the schedule model) and leaves out the points the budgets
refuse (offer.offered).
A GEMV `out[M] = a[M, K] . x[K]` has its own layouts (synth/gemv.py): a row per
slice with x in every TRF, or R rows per slice in the TRF with x streamed, `k` whole or
split over neighbouring slices and added by the inter-slice reducer. A candidate the rules refuse is the compiler's business: it fails to trace or
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

from ir.dtypes import DType
from synth import epilogue, gemv, target
from synth.both_loads import both_placements
from synth.bound import space_bound
from synth.gemm_text import gemm_roles, gemm_source, kept
from synth.odd_rows import odd_placements
from synth.trf_double import chunk_double_placements, double_placements
from synth.offer import offered, runs_in_full, split_levers
from synth.onchip import switch_ok, switch_piece
from synth.overlap import PIECES
from synth.pairs import PAIRS
from synth.stream_switch import with_stream_switch
from synth.thin import thin_placements
from synth.tiling import blocks, geometry, needs_split, pad_ok, result_placements, split_placements
from npu_opt.tune import Space

__all__ = ["MODULE_NAMES", "build", "canonical", "model_twin", "points", "source", "space_of"]

# What a candidate's file binds at its top besides `from npu_opt import *` and its kernel
# (here and in synth/target.py): a kernel of one of these names would shadow it.
MODULE_NAMES = frozenset({"Chip", "Cluster", "Slice", "chip_all_reduce"})



def _split_ok(spec: Any) -> bool:
    """Whether the `k` split levers apply: one chip on every PE, no epilogue (kd-synth-levers)."""
    return spec.epilogue is None and spec.chips == 1 and target.slices(spec) == 256


def points(spec: Any) -> dict[str, list[Any]]:
    """The levers and their values for `spec` (the module docstring)."""
    size = spec.padded
    # 32 or 64 bytes (OUTER-3), whole packets of k
    packets = [p for p in ([32, 64] if spec.dtype_in == "i8" else [16, 32]) if size[spec.contracted] % p == 0]
    slices = target.slices(spec)
    if spec.form == "gemv":  # its layouts: synth/gemv.py
        return gemv.levers(spec, packets)
    m, n = (size[i] for i in kept(spec))
    shapes = blocks(spec)
    (an, _), (wn, _) = gemm_roles(spec)
    elem = DType(spec.dtype_in).bits // 8

    def with_twins(placements: list[Any]) -> list[Any]:
        """`placements` with their Switch Engine twins (`_with_switch`, then `with_stream_switch`)."""
        return with_stream_switch(_with_switch(placements, m, size[spec.contracted], elem), m, n,
                                  size[spec.contracted], elem)

    if needs_split(spec) and _split_ok(spec) and split_placements(spec, m, n) and not spec.device_transposed:
        # k splits (synth/tiling.py); an operand transposed on the device keeps k whole
        whole = with_twins(result_placements(m, n, slices, False, shapes)) if shapes else []
        levers = split_levers(spec, m, n, packets, wn, [g.label() for g in whole])
        levers["placement"] += _time_block_switch(levers["placement"], m, size[spec.contracted], elem)
        # their chunks double-buffered in the TRF (synth/trf_double.py), after those: their own loop
        levers["placement"] += [g.label() for g in chunk_double_placements(spec, m, n, list(map(geometry, levers["placement"])))]
        return _with_pair(spec, _with_pieces(spec, levers))
    placements = result_placements(m, n, slices, pad_ok(spec), shapes)
    thin = thin_placements(spec, m, n, slices, placements) if shapes and not spec.device_transposed else []
    if spec.batch is not None:  # batch elements side by side on slices: each on a share of them
        nb = size[spec.batch]
        for sb in (2 ** e for e in range(1, slices.bit_length())):
            if nb % sb == 0:
                placements += [attrs.evolve(g, sb=sb) for g in result_placements(m, n, slices // sb, False, shapes)]
    if shapes and not spec.device_transposed:  # a block transposed on the device is not spread for the switch
        placements = with_twins(placements)
        # thin blocks (synth/thin.py) and their switch twins last: the other placements keep their indices
        thin = with_twins(thin)
        placements += [g for g in thin if g not in placements]
        # blocks of m / sm rows (synth/odd_rows.py) last of all, with their switch twins
        odd = with_twins(odd_placements(spec, m, n, slices, placements) if spec.batch is None else [])
        placements += [g for g in odd if g not in placements]
        # the TRF loaded by main and sub at once (synth/both_loads.py), after every other placement
        placements += both_placements(spec, m, n, placements)
        # two tiles' blocks in the TRF at once (synth/trf_double.py), after those: their own loops
        placements += double_placements(spec, m, n, placements)
    tiles = max((m // g.tm) * (n // g.tn) for g in placements if not g.double)
    levers: dict[str, list[Any]] = {"placement": [g.label() for g in placements], "trf": [wn, an],
                                    "packet": packets}
    if tiles > 1:
        levers |= {"order": ["ij", "ji"], "reuse": ["outer", "all", "none"]}
    return _with_pair(spec, _with_pieces(spec, levers))


def _with_pair(spec: Any, levers: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """`levers` with `pair` (synth/pairs.py) when some point the budgets offer (offer.offered)
    may roll two tiles a body: more than one tile, in rolled loops."""
    if "order" not in levers:
        return levers
    return _with_offered(spec, levers, "pair", PAIRS, [
        {"placement": p, "trf": t, "order": o, "reuse": r}
        for p in levers["placement"] for t in levers["trf"] for o in levers["order"] for r in levers["reuse"]])


def _with_pieces(spec: Any, levers: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """`levers` with `pieces` (synth/overlap.py) when some placement the budgets offer
    (offer.offered, `w` stationary) may stream its row blocks in pieces: a space none of
    whose points fits is searched whole for the rules' refusals, and pieces would only
    repeat them."""
    wn = levers["trf"][0]
    return _with_offered(spec, levers, "pieces", PIECES, [{"placement": p, "trf": wn} for p in levers["placement"]])


def _with_offered(spec: Any, levers: dict[str, list[Any]], lever: str, values: list[Any],
                  partial: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """`levers` with `lever` holding those of its `values` some point of `partial` (the other
    levers' values) is offered with (offer.offered), when more than one is."""
    kept = [v for v in values if any(offered(spec, p | {lever: v}) for p in partial)]
    return levers | {lever: kept} if len(kept) > 1 else levers


def _with_switch(placements: list[Any], m: int, k: int, elem: int) -> list[Any]:
    """`placements` with each one's `w by switch` twin (onchip.switch_ok): its slices along m
    share one copy of w's block. A twin that cuts the block by whole rows replaces its
    placement: in the model it moves fewer bytes in packets as long and its TRF load costs
    the same (the switch's `ring_size x Time x flits` is the block's flits), so the copies
    could not win and would only cost a compile; a twin that cuts finer (fewer rows a slice
    than a group, synth/row_cut.py, or pieces of `k`: shorter DMA packets) is added beside it. Not a result padded along m inside the kernel: the
    switch's copies land on the m factor of the TRF's Slice, which must be the streamed
    operand's (SPACE-4), and a padded factor cannot take copies (SWITCH-11)."""
    out, twins = [], []
    for g in placements:
        if m % g.tm or not switch_ok(g, k, elem):
            out.append(g)
        elif switch_piece(g, k, elem)[1] == 1:
            out.append(attrs.evolve(g, switch=True))
        else:
            out.append(g)
            twins.append(attrs.evolve(g, switch=True))
    return out + twins


def _time_block_switch(placements: list[str], m: int, k: int, elem: int) -> list[str]:
    """The `w by switch` twins of the placements whose `k` runs in time blocks (onchip.switch_ok
    on each block's chunk), after every other placement: each chunk of w's block moves from
    HBM once, cut over the slices along m, where the copies move it to every one of them (a
    chunk a slice, one after another inside the tile). Not a result padded along m (the
    reason `_with_switch` gives)."""
    twins = [attrs.evolve(g, switch=True) for g in map(geometry, placements)
             if g.tb > 1 and not g.switch and m % g.tm == 0 and switch_ok(g, k, elem)]
    return [g.label() for g in twins if g.label() not in placements]


def source(spec: Any, point: dict[str, Any]) -> str:
    """The candidate's kernel file (a module defining the @device kernel `spec.name`)."""
    return gemv.source(spec, point) if spec.form == "gemv" else gemm_source(spec, point)


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
        for _, idx in (spec.given[1:] if spec.given else spec.operands):  # the user's layout: `pad` views it
            shape = spec.shape(idx, padded=False)
            if din == np.int8:
                arrays.append(rng.integers(-128, 128, shape, dtype=np.int8))
            else:  # small integers: bf16 products and f32 sums of them are exact, any order
                arrays.append(rng.integers(-4, 5, shape).astype(din))
        return (*spec.pad(*arrays), np.zeros(spec.shape(spec.result[1]), dout))
    return inputs


def _oracle(spec: Any) -> Any:
    letters = {i: chr(ord("a") + n) for n, i in enumerate(spec.padded)}
    subs = ",".join("".join(letters[i] for i in spec.stored(name)) for name, _ in spec.operands)
    expr = f"{subs}->{''.join(letters[i] for i in spec.result[1])}"

    def oracle(*arrays: np.ndarray) -> np.ndarray:
        _, dout = spec.host_dtypes()
        ops = [a.astype(np.float64) for a in arrays[:len(spec.operands)]]
        if arrays[0].dtype == np.int8:
            # every i8 product and partial sum is an integer far below 2**53, so float64 sums them
            # exactly in any order, and BLAS may (an int64 einsum of 4096 x 4096 x 512 takes 9x longer)
            total = np.ascontiguousarray(np.einsum(expr, *ops, optimize=True), np.int64)  # optimize may return a transposed view
        else:
            total = np.einsum(expr, *ops)
        if spec.epilogue is not None:
            return epilogue.apply(spec, total, arrays)
        return total.astype(dout)  # i32 wraps as the engine's adds do; bf16 rounds once
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
        key = tuple(model_twin(point, levers).items())
        if key not in keys:
            keys[key] = canonical(source(spec, dict(key)))
        return keys[key]

    bound = space_bound(spec)  # before the kernel is built (synth/bound.py), its per-space parts once

    if not (runs_in_full(spec) if run is None else run):  # checked at a proxy size instead (driver/synth.py)
        return Space(factory, levers, distinct=distinct, bound=bound)
    return Space(factory, levers, inputs=epilogue.with_bias(spec, _inputs(spec)),
                 oracle=target.whole_oracle(spec, _oracle(spec)), distinct=distinct, bound=bound)


def model_twin(point: dict[str, Any], levers: dict[str, list[Any]]) -> dict[str, Any]:
    """The point whose kernel the schedule model prices the same as `point`'s: the same point
    with the first (shortest) contraction packet. The packet changes two things in a kernel:
    the contraction's records count one output packet a cycle (`k / packet` a row, at most
    the collect's `k / flit` at 32 bytes: a program lasts as long as its longest record, so
    never longer), and the TRF read's width (narrow at 32 bytes, wide at 64), whose cycles
    blocking a concurrent store (`visa.schedule.steps.trf_read_blocks`) are equal for the two:
    half the reads miss as narrow as wide ones. Every other step is the same, so the two
    kernels' makespans are equal and the search compiles the first (tests/synth/
    test_synth_space.py pins it on GEMM and GEMV twins)."""
    return point | {"packet": levers["packet"][0]} if "packet" in point and levers.get("packet") else point


def canonical(text: str) -> str:
    """A candidate's kernel source without what names the point: its docstring and its comment
    lines. Two points with the same canonical source build the same kernel: the space keeps
    the first (the bf16 split space listed one placement twice)."""
    body = text.split('"""', 2)[2] if text.startswith('"""') else text
    return "\n".join(line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#"))
