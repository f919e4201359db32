"""The Transpose Engine's parameters and their verifier, kept free of the trace rules so
the lowered op and the VISA interpreter can use them: the per-dtype engine shape, the five
parameters of a transpose (`TransposeParams`) and `check_transpose_params`, rules
TRANSPOSE-6 ... TRANSPOSE-11 on parameters stated by a lowered op or an artifact."""

from __future__ import annotations

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.mapping.factors import PaddingFactor
from ir.mapping.nodes import Mapping
from ir.mapping.ops import split

__all__ = ["EngineShape", "engine_shape", "TransposeParams", "check_transpose_params", "pure_padding"]


@attrs.frozen
class EngineShape:
    """What the element width fixes: flit elements, valid elements read per packet, the
    largest in_rows and the legal in_cols (the book's parameter table)."""

    flit: int
    valid: int
    max_rows: int
    cols: tuple[int, ...]


def engine_shape(dtype: DType) -> EngineShape | None:
    """The engine's shape for a dtype, None when the engine does not take it."""
    bits = dtype.bits
    if bits not in (4, 8, 16, 32) or not dtype.materializable:
        return None
    valid = 16 if bits == 4 else 8
    cols = (16, 32) if bits == 4 else (8, 16, 32)
    return EngineShape(256 // bits, valid, 64 // bits, cols)


@attrs.frozen
class TransposeParams:
    """The resolved engine parameters (element counts), the reference's five."""

    in_rows: int
    in_cols: int
    out_rows: int
    packets_per_col: int
    valid_size_per_packet: int


def _v(code: str, message: str, help: str | None = None) -> Violation:
    return Violation(code, message, help=help)


def pure_padding(mp: Mapping) -> bool:
    return all(isinstance(f, PaddingFactor) for f in mp.factors())


def check_transpose_params(params: TransposeParams, time: Mapping, packet: Mapping,
                           dtype: DType) -> Violation | None:
    """TRANSPOSE-6..11: parameters stated for an input stream agree with it and with the engine."""
    shape = engine_shape(dtype)
    if shape is None:
        return _v("TRANSPOSE-1", f"the Transpose Engine takes 4-, 8-, 16- or 32-bit elements, not {dtype}")
    p = params
    if p.valid_size_per_packet != shape.valid:
        return _v("TRANSPOSE-6", f"valid_size_per_packet is {p.valid_size_per_packet}; {dtype} packets carry "
                  f"{shape.valid}", help=f"valid_size_per_packet = {shape.valid}")
    if p.in_cols != p.packets_per_col * p.valid_size_per_packet or p.in_cols not in shape.cols:
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
