"""The Transpose Engine's parameters and their verifier, kept free of the trace rules so
the lowered op and the VISA interpreter can use them: the per-dtype engine shape, the
parameters of a transpose (`TransposeParams`) and `check_transpose_params`, rules
TRANSPOSE-6 ... TRANSPOSE-11 and TRANSPOSE-18 on parameters stated by a lowered op or an
artifact.

Input packing: the engine's Unpack stage reads `valid` elements of each 32-byte input
flit, 8 (16 for 4-bit elements). For 8- and 16-bit elements it can read twice as many,
16, in the same cycle (furiosa-opt v0.7, "doubled input packing"); the packing is the
record's `fetch_in_width_shift`: `valid = base << shift`, shift 0 or 1, and 1 only for
8- and 16-bit elements (`DOUBLED_BITS`)."""

from __future__ import annotations

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.mapping.factors import PaddingFactor
from ir.mapping.nodes import Mapping
from ir.mapping.ops import split

__all__ = ["EngineShape", "engine_shape", "TransposeParams", "check_transpose_params", "pure_padding",
           "DOUBLED_BITS", "packing_widths"]

DOUBLED_BITS = (8, 16)
"""Element widths whose packets may use doubled input packing (16 valid elements per flit)."""


@attrs.frozen
class EngineShape:
    """What the element width fixes: flit elements, valid elements read per packet, the
    largest in_rows and the legal in_cols (the book's parameter table); `shift` is the
    input packing (`valid` is the base width shifted left by it)."""

    flit: int
    valid: int
    max_rows: int
    cols: tuple[int, ...]
    shift: int = 0


def engine_shape(dtype: DType) -> EngineShape | None:
    """The engine's shape for a dtype (`valid` the base packing), None when the engine does
    not take it."""
    bits = dtype.bits
    if bits not in (4, 8, 16, 32) or not dtype.materializable:
        return None
    valid = 16 if bits == 4 else 8
    cols = (16, 32) if bits == 4 else (8, 16, 32)
    return EngineShape(256 // bits, valid, 64 // bits, cols)


def packing_widths(dtype: DType) -> tuple[int, ...]:
    """The valid elements a packet of `dtype` may carry, base packing first: (8, 16) for 8-
    and 16-bit elements, (16,) for 4-bit and (8,) for 32-bit ones (() off the engine)."""
    shape = engine_shape(dtype)
    if shape is None:
        return ()
    return (shape.valid, 2 * shape.valid) if dtype.bits in DOUBLED_BITS else (shape.valid,)


@attrs.frozen
class TransposeParams:
    """The resolved engine parameters (element counts), the reference's five, and the input
    packing: `fetch_in_width_shift` 1 when each packet carries twice the base valid elements."""

    in_rows: int
    in_cols: int
    out_rows: int
    packets_per_col: int
    valid_size_per_packet: int
    fetch_in_width_shift: int = 0


def _v(code: str, message: str, help: str | None = None) -> Violation:
    return Violation(code, message, help=help)


def pure_padding(mp: Mapping) -> bool:
    return all(isinstance(f, PaddingFactor) for f in mp.factors())


def check_transpose_params(params: TransposeParams, time: Mapping, packet: Mapping,
                           dtype: DType) -> Violation | None:
    """TRANSPOSE-18 and 6..11: parameters stated for an input stream agree with it and with
    the engine."""
    shape = engine_shape(dtype)
    if shape is None:
        return _v("TRANSPOSE-1", f"the Transpose Engine takes 4-, 8-, 16- or 32-bit elements, not {dtype}")
    p = params
    shift = p.fetch_in_width_shift
    if shift not in (0, 1) or (shift == 1 and dtype.bits not in DOUBLED_BITS):
        what = (f"fetch_in_width_shift={shift} is not 0 or 1" if shift not in (0, 1) else
                f"doubled input packing (fetch_in_width_shift=1) is for 8- and 16-bit elements, not {dtype}")
        return _v("TRANSPOSE-18", what, help=f"fetch_in_width_shift absent (base packing, {shape.valid} "
                  f"valid elements per packet)")
    want = shape.valid << shift
    if p.valid_size_per_packet != want:
        packing = "doubled" if shift else "base"
        return _v("TRANSPOSE-6", f"valid_size_per_packet is {p.valid_size_per_packet}; {dtype} packets carry "
                  f"{want} with {packing} input packing (fetch_in_width_shift={shift})",
                  help=f"valid_size_per_packet = {want}" + (
                      "" if shift or dtype.bits not in DOUBLED_BITS else
                      f", or fetch_in_width_shift=1 with valid_size_per_packet = {2 * shape.valid}"))
    if (p.in_cols != p.packets_per_col * p.valid_size_per_packet or p.in_cols not in shape.cols
            or p.packets_per_col < 1):
        return _v("TRANSPOSE-7", f"in_cols {p.in_cols} must be packets_per_col {p.packets_per_col} * valid "
                  f"{p.valid_size_per_packet}, one of {list(shape.cols)}",
                  help=f"in_cols = {p.packets_per_col * p.valid_size_per_packet}")
    if p.out_rows > p.in_cols:
        return _v("TRANSPOSE-8", f"out_rows {p.out_rows} exceeds in_cols {p.in_cols}", help=f"out_rows <= {p.in_cols}")
    if packet.size % p.valid_size_per_packet or not pure_padding(split(packet, p.valid_size_per_packet)[0]):
        return _v("TRANSPOSE-9", f"packet `{str(packet)}` beyond its first {p.valid_size_per_packet} elements "
                  f"is not pure padding")
    if time.size % p.packets_per_col:
        return _v("TRANSPOSE-10", f"packets_per_col {p.packets_per_col} does not split Time `{str(time)}` "
                  f"({time.size} steps)")
    if (time.size // p.packets_per_col) % p.in_rows or p.in_rows > shape.max_rows:
        return _v("TRANSPOSE-11", f"in_rows {p.in_rows} does not split the {time.size // p.packets_per_col} "
                  f"steps of Time `{str(time)}` outside packets_per_col (or exceeds {shape.max_rows})")
    return None
