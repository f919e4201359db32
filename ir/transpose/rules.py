"""Transpose Engine rules TRANSPOSE-1..17 and the engine parameters of a legal transpose.

The engine reads `Time = [outer, in_rows, packets_per_col]` steps of one-flit packets
whose first `valid` elements are live (the packing: 8 elements, 16 for 4-bit ones; an 8-
or 16-bit packet with live elements past the 8th is read with doubled packing, 16), gathers `packets_per_col` packets into one row of
`in_cols = packets_per_col * valid` columns, transposes the `[in_rows x in_cols]` tile,
keeps the first `out_rows` of its rows (the rest must be padding) and pads each row of
`in_rows` elements to one flit. So a legal request is

    out_time   ≡ [outer, [packets_per_col, packet % valid] = out_rows]
    out_packet ≡ [in_rows] padded to one flit

`check_transpose` finds the parameters (`TransposeParams`) or the rule the request
breaks; `check_transpose_params` is the verifier of parameters stated elsewhere (a lowered
op or an artifact), rules TRANSPOSE-6..11 and 18.
"""

from __future__ import annotations

import attrs
import numpy as np

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.errors import MappingError
from ir.mapping.cells import LIVE, evaluate
from ir.mapping.factors import BroadcastFactor, short_text as show
from ir.mapping.nodes import Mapping, Pad, Pair, Resize
from ir.mapping.ops import factor_frags, refine, split
from ir.transpose.params import (
    EngineShape, TransposeParams, _v, check_transpose_params, engine_shape, packing_widths, pure_padding,
)

__all__ = [
    "TransposeParams", "EngineShape", "engine_shape", "check_transpose", "check_transpose_params",
]

def _packing(dtype: DType, packet: Mapping, shape: EngineShape) -> Violation | EngineShape:
    """TRANSPOSE-4/17: the narrowest packing whose valid elements cover the packet's live
    prefix (the rest pure padding); the shape with that `valid`."""
    for shift, width in enumerate(packing_widths(dtype)):
        if pure_padding(split(packet, width)[0]):
            return attrs.evolve(shape, valid=width, shift=shift)
    if dtype.bits in (4, 32) and packet.size >= 2 * shape.valid and pure_padding(split(packet, 2 * shape.valid)[0]):
        return _v("TRANSPOSE-17", f"the packet `{show(packet)}` has live {dtype} elements past the first "
                  f"{shape.valid}; doubled input packing ({2 * shape.valid} per packet) is for 8- and 16-bit "
                  f"elements only", help=f"carry {shape.valid} elements per packet: `{show(split(packet, shape.valid)[1])}"
                  f" # {shape.flit}`, with two packets per transposed row")
    widest = packing_widths(dtype)[-1]
    outer, valid = split(packet, widest)
    return _v("TRANSPOSE-4", f"the engine reads the first {widest} elements of each {dtype} packet; the rest "
              f"(`{show(outer)}`) must be pure padding", help=f"use a packet like `{show(valid)} # {shape.flit}`")


def _frame_checks(dtype: DType, packet: Mapping, out_packet: Mapping) -> Violation | EngineShape:
    """TRANSPOSE-1..5 and 17; the engine shape with the packing's `valid`."""
    shape = engine_shape(dtype)
    if shape is None:
        return _v("TRANSPOSE-1", f"the Transpose Engine takes 4-, 8-, 16- or 32-bit elements, not {dtype}",
                  help="cast the stream to i8, bf16, f32 or i32 before the transpose")
    for code, name, mp in (("TRANSPOSE-2", "input packet", packet), ("TRANSPOSE-3", "out_packet", out_packet)):
        if mp.size != shape.flit:
            return _v(code, f"the transpose {name} `{show(mp)}` has {mp.size} elements; one flit of {dtype} "
                      f"is {shape.flit}", help=f"pad it to one flit: `{show(Pad(mp, shape.flit))}`"
                      if mp.size < shape.flit else f"split it so one flit ({shape.flit} elements) remains")
    shape = _packing(dtype, packet, shape)
    if isinstance(shape, Violation):
        return shape
    outer, rows = split(out_packet, shape.max_rows)
    if not pure_padding(outer):
        return _v("TRANSPOSE-5", f"a transposed row holds at most {shape.max_rows} {dtype} elements; out_packet "
                  f"beyond them (`{show(outer)}`) must be pure padding",
                  help=f"out_packet = `{show(rows)} # {shape.flit}` at most")
    return shape


def _placement(time: Mapping, valid: Mapping, out_time: Mapping, rows: Mapping, shape: EngineShape,
               k: int, r: int) -> tuple[int, TransposeParams | None]:
    """Try packets_per_col k and in_rows r: (how far it got, the params when it fits)."""
    if time.size % (k * r):
        return 0, None
    rest, km = split(time, k)
    outer, rm = split(rest, r)
    if not (Pad(rm, shape.max_rows) if r < shape.max_rows else rm).matches(rows):
        return 1, None
    cols = Pair(km, valid)
    if out_time.size % outer.size:
        return 2, None
    out_rows = out_time.size // outer.size
    if not 1 <= out_rows <= cols.size:
        return 2, None
    dropped = evaluate(cols, np.arange(out_rows, cols.size)).status
    kept = cols if out_rows == cols.size else Resize(cols, out_rows)
    if np.any(dropped == LIVE) or not out_time.matches(Pair(outer, kept)):
        return 2, None
    return 3, TransposeParams(r, k * shape.valid, out_rows, k, shape.valid, shape.shift)


def check_transpose(time: Mapping, packet: Mapping, out_time: Mapping, out_packet: Mapping,
                    dtype: DType) -> Violation | TransposeParams:
    """The engine parameters of `(time; packet) -> (out_time; out_packet)`, or the rule it breaks."""
    try:
        return _check_transpose(time, packet, out_time, out_packet, dtype)
    except MappingError as e:  # a mapping without a cell layout (a digit placed twice)
        return Violation(e.code, e.detail.splitlines()[0])


def _check_transpose(time: Mapping, packet: Mapping, out_time: Mapping, out_packet: Mapping,
                     dtype: DType) -> Violation | TransposeParams:
    shape = _frame_checks(dtype, packet, out_packet)
    if isinstance(shape, Violation):
        return shape
    valid = split(packet, shape.valid)[1]
    rows = split(out_packet, shape.max_rows)[1]
    if any(isinstance(f, BroadcastFactor) for f in rows.factors()):
        return _v("TRANSPOSE-16", f"the rows of out_packet (`{show(rows)}`) hold a broadcast; every row comes "
                  f"from its own input time step", help=_legal_help(time, valid, shape))
    best = 0
    for k in (c // shape.valid for c in shape.cols if c >= shape.valid):
        for r in range(shape.max_rows, 0, -1):
            reached, params = _placement(time, valid, out_time, rows, shape, k, r)
            if params is not None:
                return params
            best = max(best, reached)
    if best <= 1:
        return _rows_violation(time, rows, shape)
    return _v("TRANSPOSE-12", f"no placement of the rows `{show(rows)}` in Time `{show(time)}` gives out_time "
              f"`{show(out_time)}` with out_packet `{show(out_packet)}`", help=_legal_help(time, valid, shape))


def _rows_violation(time: Mapping, rows: Mapping, shape: EngineShape) -> Violation:
    """TRANSPOSE-13/14/15: why the output rows are not a legal block of the input Time."""
    refined = refine(time.factors(), rows.factors()) or time.factors()
    in_time = [fr for f in refined for fr in factor_frags(f)]
    live = [fr for f in (refine(rows.factors(), time.factors()) or rows.factors()) for fr in factor_frags(f)]
    legal = f"e.g. out_packet = `{show(split(time, _largest_rows(time, shape))[1])} # {shape.flit}`"
    missing = [fr for fr in live if fr not in in_time]
    if missing or not live:
        return _v("TRANSPOSE-13", f"the rows of out_packet (`{show(rows)}`) must be digits of the input Time "
                  f"`{show(time)}`", help=legal)
    at = sorted(in_time.index(fr) for fr in live)
    if at != list(range(at[0], at[0] + len(at))):
        return _v("TRANSPOSE-15", f"the row digits `{show(rows)}` are not adjacent in Time `{show(time)}`, so "
                  f"they imply different packets_per_col", help=legal)
    inner = 1
    for f in refined[at[-1] + 1:]:
        inner *= f.extent
    if inner * shape.valid not in shape.cols:
        return _v("TRANSPOSE-14", f"the rows `{show(rows)}` sit {inner} time step(s) outside the innermost Time, "
                  f"so a row would gather {inner * shape.valid} columns; legal columns are {list(shape.cols)}",
                  help=legal)
    return _v("TRANSPOSE-13", f"out_packet's rows `{show(rows)}` do not match Time `{show(time)}` "
              f"(padding or order differs)", help=legal)


def _largest_rows(time: Mapping, shape: EngineShape) -> int:
    return max(r for r in range(1, shape.max_rows + 1) if time.size % r == 0)


def _legal_help(time: Mapping, valid: Mapping, shape: EngineShape) -> str:
    """A legal transpose of this input: packets_per_col 1, as many rows as divide Time."""
    r = _largest_rows(time, shape)
    outer, rows = split(time, r)
    out_time = Pair(outer, valid)
    return f"e.g. out_time = `{show(out_time)}`, out_packet = `{show(rows)} # {shape.flit}`"
