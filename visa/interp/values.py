"""Element values, their raw bits and bytes, padding masks and operand widening.

The interpreter keeps a stream as a numpy array of *values*: floats as their bit patterns
(`uint8` f8/f4, `uint16` bf16, `uint32` f32), integers as host values (`int8` for i4/i5/i8,
`int16` for i9 and i16, `int32`, `uint8` for u8). Memory holds *raw bits*, little-endian
bytes, 4-bit elements two per byte (element 2k in the low nibble, docs/numerics.md).

Padding masks are the only use the interpreter makes of the IR types a record carries
(visa/visa.lark): `pad_mask(m1, m2, ...)` is True where the joint position of those
mappings is padding (docs/machine/index.md), and such positions are forced to zero.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ir import convert as cv
from ir.dtypes import DType
from ir.mapping.cells import LIVE
from ir.mapping.nodes import Mapping
from tu_ops.enums import CellFormat, ConversionKind, FeedElementType
from visa.interp.errors import InterpError, check

__all__ = ["convert_chain", 
    "value_dtype", "raw_dtype", "to_raw", "from_raw", "to_bytes", "from_bytes", "pad_mask",
    "zero_padding", "zero_pad", "zero_cells", "padded", "pads_from", "widen", "CELL_DTYPES",
]

_STAGING = {DType.I5: np.dtype(np.int8), DType.I9: np.dtype(np.int16)}


def value_dtype(d: DType) -> np.dtype:
    """numpy dtype of a value of `d` inside the interpreter (looked up: a run asks it a few
    hundred times, and each answer from `DType`'s properties costs microseconds)."""
    found = _VALUE_DTYPES.get(d)
    if found is None:
        found = _VALUE_DTYPES[d] = _STAGING[d] if d in _STAGING else d.bits_dtype if d.is_float else d.host_dtype
    return found


_VALUE_DTYPES: dict[DType, np.dtype] = {}


def raw_dtype(bits: int) -> np.dtype:
    """Unsigned container of one raw element of `bits` bits (4-bit elements in uint8)."""
    return {4: np.dtype(np.uint8), 8: np.dtype(np.uint8), 16: np.dtype("<u2"), 32: np.dtype("<u4")}[bits]


def to_raw(values: np.ndarray, d: DType, bits: int) -> np.ndarray:
    """Values -> raw bits of width `bits` (two's complement for integers, i4 as a nibble)."""
    v = np.asarray(values)
    if d.is_float:
        return v.astype(raw_dtype(bits), copy=False)
    if bits == 4:
        return (v.astype(np.uint8) & 0xF).astype(np.uint8)
    if v.dtype.itemsize * 8 == bits:
        return v.view(raw_dtype(bits))
    return v.astype(np.int64).astype(raw_dtype(bits))


def from_raw(raw: np.ndarray, d: DType, bits: int) -> np.ndarray:
    """Raw bits of width `bits` -> values of `d` (signed integers sign-extend from `bits`)."""
    r = np.asarray(raw)
    if d.is_float:
        return r.astype(value_dtype(d), copy=False)
    if bits in (8, 16, 32):
        r = r.astype(raw_dtype(bits), copy=False)
        signed = r.view(np.dtype(f"<i{bits // 8}")) if d.is_signed else r
        return signed.astype(value_dtype(d), copy=False)
    r64 = r.astype(np.int64)
    if d.is_signed:
        r64 = r64 - (((r64 >> (bits - 1)) & 1) << bits)
    return r64.astype(value_dtype(d))


def to_bytes(values: np.ndarray, d: DType, bits: int) -> np.ndarray:
    """Values along the last axis -> their little-endian byte image along the last axis."""
    raw = to_raw(values, d, bits)
    if bits == 4:
        if raw.shape[-1] % 2:
            raise ValueError("an odd number of 4-bit elements has no byte image")
        return (raw[..., 0::2] | (raw[..., 1::2] << 4)).astype(np.uint8)
    raw = np.ascontiguousarray(raw.astype(raw_dtype(bits), copy=False))
    return raw.view(np.uint8).reshape(*raw.shape[:-1], raw.shape[-1] * (bits // 8))


def from_bytes(data: np.ndarray, d: DType, bits: int) -> np.ndarray:
    """Little-endian bytes along the last axis -> values of `d` along the last axis."""
    data = np.ascontiguousarray(data, dtype=np.uint8)
    if bits == 4:
        raw = np.stack([data & 0xF, data >> 4], axis=-1).reshape(*data.shape[:-1], -1)
    else:
        raw = data.view(raw_dtype(bits))
    return from_raw(raw, d, bits)


@functools.lru_cache(maxsize=1024)
def _mask(mapping: Mapping) -> np.ndarray:
    table = mapping.cells(np.arange(mapping.size, dtype=np.int64))
    out = np.asarray(table.status) != LIVE
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=1024)
def pad_mask(*mappings: Mapping) -> np.ndarray:
    """Padding flags of the joint positions of `mappings` (outer to inner), shaped
    `(size(m1), size(m2), ...)`: a position is padding when any component is (read-only:
    one array per tuple of mappings, shared by every record that asks)."""
    out = np.zeros((), bool)
    for mp in mappings:
        out = np.logical_or.outer(out, _mask(mp))
    out.setflags(write=False)
    return out


def zero_padding(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """`values` (rows, *mask.shape) with every padded position set to zero (in place)."""
    if mask.any():
        np.copyto(values, values.dtype.type(0), where=mask)
    return values


@functools.lru_cache(maxsize=1024)
def _runs(mapping: Mapping) -> tuple[Any, ...]:
    """The padded positions of `mapping` as a few slices (runs), or one index array when
    they are scattered."""
    pad = _mask(mapping)
    edges = np.flatnonzero(np.diff(np.concatenate([[False], pad, [False]]).astype(np.int8)))
    runs = tuple(slice(int(a), int(b)) for a, b in zip(edges[0::2], edges[1::2]))
    return runs if len(runs) <= 8 else (np.flatnonzero(pad),)


def padded(*mappings: Mapping) -> bool:
    """Does any of `mappings` have a padded position (is `zero_pad` over them a no-op)?"""
    return any(_runs(mp) for mp in mappings)


@functools.lru_cache(maxsize=1024)
def pads_from(mapping: Mapping, n: int) -> bool:
    """Are positions n.. of `mapping` all padding (does `zero_pad` over it zero them)?"""
    return bool(_mask(mapping)[n:].all())


def zero_pad(values: np.ndarray, *mappings: Mapping) -> np.ndarray:
    """`zero_padding(values, pad_mask(*mappings))` (in place), written as one slice
    assignment per run of padded positions of each mapping: a joint position is padding
    when any component is, so the padded set is the union of those slabs. The caller has
    checked that `values.shape[1:]` is the mappings' sizes."""
    for axis, mp in enumerate(mappings):
        lead = (slice(None),) * (axis + 1)
        for run in _runs(mp):
            if axis + 2 == values.ndim and isinstance(run, slice):
                zero_cells(values, run.start, run.stop)
            else:
                values[(*lead, run)] = 0
    return values


_WORD_COLUMNS = 4
"""The most 8-byte words of each row `zero_cells` zeroes one column at a time."""


def zero_cells(values: np.ndarray, lo: int, hi: int) -> None:
    """values[..., lo:hi] = 0. When the rows are C-contiguous and the cells are a few whole
    8-byte words of each, a word column at a time: numpy's slab assignment walks a short
    run's cells one by one (a cast's 8 padded bf16 cells of 64 Ki packets: 0.29 -> 0.07 ms)."""
    item, row = values.itemsize, values.shape[-1] * values.itemsize
    a, b = lo * item, hi * item
    if (values.flags.c_contiguous and values.ndim > 1 and values.size and not row % 8 and not a % 8
            and not b % 8 and 0 < b - a <= 8 * _WORD_COLUMNS):
        words = values.view(np.uint64)
        for w in range(a // 8, b // 8):
            words[..., w] = 0
        return
    values[..., lo:hi] = 0


# Values of a TRF cell format, as stored: the storage dtype of each promoted format.
CELL_DTYPES: dict[CellFormat, tuple[DType, ...]] = {
    CellFormat.INT9: (DType.I8,),
    CellFormat.INT5: (DType.I4,),
    CellFormat.BF16_16: (DType.BF16,),
    CellFormat.F8_8: (DType.F8E4M3, DType.F8E5M2),
}


@functools.lru_cache(maxsize=None)
def widen_table(et: FeedElementType) -> np.ndarray | None:
    """f32 bits of every code of a float operand type (docs/numerics.md), or None for integers."""
    d = et.dtype
    if d == DType.BF16:
        return cv.widen_bf16(np.arange(1 << 16, dtype=np.uint32).astype(np.uint16))
    if d == DType.F8E4M3:
        return cv.decode_e4m3(np.arange(256, dtype=np.uint8))
    if d == DType.F8E5M2:
        return cv.decode_e5m2(np.arange(256, dtype=np.uint8))
    if d.is_float:
        raise ValueError(f"{et} is not a contraction operand")
    return None


def widen(values: np.ndarray, et: FeedElementType) -> np.ndarray:
    """Contraction Engine widening (docs/numerics.md): floats to float32 (through the
    conversion's table of every code); integers keep their host values (at most 32 bits:
    the integer sum of `visa.interp.contract` widens them exactly as it converts them)."""
    table = widen_table(et)
    if table is None:
        return np.asarray(values)
    return table[values].view(np.float32)


def convert_chain(values: np.ndarray, op: Any, target: Any) -> np.ndarray:
    """Apply the feed's conversions in order; the result holds `element_type` values."""
    d = op.source.dtype
    for c in op.conversions:
        if c.kind is ConversionKind.ZP_SUB:
            entry = target.zero_point_entry(d)
            check(entry is not None, f"no zero-point subtraction from {d}", op)
            try:
                values = cv.zero_point_sub(values, c.zero_point, d)
            except ValueError as e:
                raise InterpError(str(e), op) from None
            d = entry.dst
            continue
        src, dst = c.kind.pair
        check(src == d, f"{c} converts {src}, but the adapter holds {d}", op)
        values = cv.convert(values, src, dst, "table_lookup" if c.kind.stage == "lookup" else "fetch_cast")
        d = dst
    check(d == op.element_type.dtype, f"the conversions give {d}, element_type is {op.element_type}", op)
    return np.asarray(values).astype(value_dtype(d), copy=False)
