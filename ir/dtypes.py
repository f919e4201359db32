"""The scalar types a kernel can name and the legal-conversion tables of docs/numerics.md.

Everything here is data: per-type facts (widths, ranges, host forms) and the
(src, dst) tables of docs/numerics.md and 5. The numeric conversions live in
`ir/convert.py`.
"""

from __future__ import annotations

from enum import Enum
from types import MappingProxyType
from typing import Mapping, NamedTuple

import numpy as np

from ir import constants


class _Info(NamedTuple):
    """Per-type facts; `host`/`raw` are None for the stream-only types i5/i9. A `host`
    given as a string names an `ml_dtypes` type, resolved on first use: importing
    ml_dtypes costs about half a second of CPU in its 0.7 releases, and only the host
    arrays of bf16/f8/f4 need it (checking, compiling and explaining never do)."""

    bits: int  # wire width, bits(D) of docs/machine/index.md
    value_bits: int  # width the value needs (differs only for i5/i9)
    kind: str  # "int" or "float"
    signed: bool
    host: np.dtype | str | None
    raw: np.dtype | None  # unsigned container of the bit pattern on the host


def _ml_dtype(name: str) -> np.dtype:
    import ml_dtypes  # late: see _Info

    return np.dtype(getattr(ml_dtypes, name))


_U8, _U16, _U32 = np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32)

# Keyed by the spec name so the enum below can stay a plain name -> member map.
_INFO: dict[str, _Info] = {
    "i4": _Info(4, 4, "int", True, np.dtype(np.int8), _U8),
    "i5": _Info(4, 5, "int", True, None, None),
    "i8": _Info(8, 8, "int", True, np.dtype(np.int8), _U8),
    "i9": _Info(8, 9, "int", True, None, None),
    "i16": _Info(16, 16, "int", True, np.dtype(np.int16), _U16),
    "i32": _Info(32, 32, "int", True, np.dtype(np.int32), _U32),
    "u8": _Info(8, 8, "int", False, _U8, _U8),
    "bf16": _Info(16, 16, "float", True, "bfloat16", _U16),
    "f32": _Info(32, 32, "float", True, np.dtype(np.float32), _U32),
    "f8e4m3": _Info(8, 8, "float", True, "float8_e4m3fn", _U8),
    "f8e5m2": _Info(8, 8, "float", True, "float8_e5m2", _U8),
    # ml_dtypes stores one f4e2m1 per byte, code in the low nibble (docs/numerics.md).
    "f4e2m1": _Info(4, 4, "float", True, "float4_e2m1fn", _U8),
}


class DType(Enum):
    """A scalar type of docs/numerics.md; `.value` and `str()` are the spec name."""

    I4 = "i4"
    I5 = "i5"
    I8 = "i8"
    I9 = "i9"
    I16 = "i16"
    I32 = "i32"
    U8 = "u8"
    BF16 = "bf16"
    F32 = "f32"
    F8E4M3 = "f8e4m3"
    F8E5M2 = "f8e5m2"
    F4E2M1 = "f4e2m1"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, name: str | DType) -> DType:
        """Return the type called `name` (a spec name such as "bf16"); a DType passes through."""
        if isinstance(name, DType):
            return name
        try:
            return cls(name)
        except ValueError:
            names = ", ".join(d.value for d in cls)
            raise ValueError(f"unknown dtype {name!r}; expected one of: {names}") from None

    @property
    def _info(self) -> _Info:
        return _INFO[self.value]

    @property
    def bits(self) -> int:
        """Wire width bits(D): i5 counts 4 and i9 counts 8, the width of their source."""
        return self._info.bits

    @property
    def value_bits(self) -> int:
        """Bits the value needs: 5 for i5, 9 for i9, otherwise `bits`."""
        return self._info.value_bits

    @property
    def is_float(self) -> bool:
        """True for bf16, f32 and the 8- and 4-bit floats."""
        return self._info.kind == "float"

    @property
    def is_int(self) -> bool:
        """True for the integer types, u8 and the i5/i9 stagings included."""
        return self._info.kind == "int"

    @property
    def is_signed(self) -> bool:
        """True when the type has negative values: every type but u8 (floats have a sign bit)."""
        return self._info.signed

    @property
    def materializable(self) -> bool:
        """False only for i5/i9, which exist solely between zero-point sub and contract_outer."""
        return self._info.host is not None

    @property
    def min(self) -> int:
        """Smallest value of an integer type (i5: -16); ValueError for a float type."""
        self._require_int("min")
        return -(1 << (self.value_bits - 1)) if self.is_signed else 0

    @property
    def max(self) -> int:
        """Largest value of an integer type (i9: 255); ValueError for a float type."""
        self._require_int("max")
        return (1 << (self.value_bits - int(self.is_signed))) - 1

    @property
    def host_dtype(self) -> np.dtype:
        """numpy dtype of the host form (docs/numerics.md and 7); ValueError for i5/i9.

        Raising rather than returning None keeps `np.zeros(n, d.host_dtype)` from
        silently building float64 for a type that never reaches the host.
        """
        host = self._info.host
        return self._require_host(_ml_dtype(host) if isinstance(host, str) else host, "host form")

    @property
    def bits_dtype(self) -> np.dtype:
        """Unsigned numpy dtype holding one raw bit pattern (uint16 for bf16, uint8 for f8/f4,
        uint32 for f32, and the same-width unsigned container for integers); ValueError for i5/i9."""
        return self._require_host(self._info.raw, "bit container")

    @property
    def host_dtypes(self) -> tuple[np.dtype, ...]:
        """The numpy dtypes a host array of this type may have (docs/numerics.md): the host
        form, a float's bit container, and `ml_dtypes.int4` for i4 (read as the `int8` values
        it holds). ValueError for i5/i9."""
        if self.is_float:
            return (self.host_dtype, self.bits_dtype)
        if self is DType.I4:
            return (self.host_dtype, _ml_dtype("int4"))
        return (self.host_dtype,)

    def host_values(self, array: np.ndarray) -> np.ndarray:
        """`array` (of one of `host_dtypes`) in the host form or the bit container: an
        `ml_dtypes.int4` array becomes the `int8` array of its values."""
        return array.astype(self.host_dtype) if self is DType.I4 and array.dtype != self.host_dtype else array

    @property
    def flit_elems(self) -> int:
        """Elements per 32-byte flit: 256 // bits."""
        return 256 // self.bits

    # --- furiosa-opt's constant constructors (ir/constants.py) --------------------------------
    def from_f32(self, value: float) -> float:
        """`bf16.from_f32(3.0)`: the value the type holds for `value` (bf16, f8e4m3, f8e5m2,
        f4e2m1); a value it cannot hold is refused (DTYPE-CONST)."""
        return constants.from_f32(self, value)

    def from_i32(self, value: int) -> int:
        """`i4.from_i32(-1)`: `value`, checked against the type's range (i4, i5, i9)."""
        return constants.from_i32(self, value)

    def from_bits(self, bits: int) -> float:
        """`bf16.from_bits(0x4040)`, `f4e2m1.from_bits(5)`: the value of a raw encoding."""
        return constants.from_bits(self, bits)

    def _require_int(self, what: str) -> None:
        if not self.is_int:
            raise ValueError(f"{what} is defined only for integer dtypes, not {self.value}")

    def _require_host(self, dt: np.dtype | None, what: str) -> np.dtype:
        if dt is None:
            raise ValueError(f"{self.value} is stream-only and has no {what} (docs/numerics.md)")
        return dt


i4 = DType.I4
i5 = DType.I5
i8 = DType.I8
i9 = DType.I9
i16 = DType.I16
i32 = DType.I32
u8 = DType.U8
bf16 = DType.BF16
f32 = DType.F32
f8e4m3 = DType.F8E4M3
f8e5m2 = DType.F8E5M2
f4e2m1 = DType.F4E2M1

ALL_DTYPES: tuple[DType, ...] = tuple(DType)


def bytes_of(n_elems: int, dtype: DType) -> int:
    """Bytes of `n_elems` elements of `dtype` (docs/numerics.md); ValueError when not whole bytes."""
    if n_elems < 0:
        raise ValueError(f"element count must be non-negative, got {n_elems}")
    total = n_elems * dtype.bits
    if total % 8:
        raise ValueError(f"{n_elems} x {dtype} is {total} bits, not a whole number of bytes")
    return total // 8


Pair = tuple[DType, DType]

# docs/numerics.md without the identities (those hold for every materializable type,
# see is_legal_fetch_cast). Values are the FeedBuffer conversion names of docs/reference/diagnostics.md.
FETCH_CASTS: Mapping[Pair, str] = MappingProxyType({
    (i4, i32): "I4_TO_I32",
    (i8, i32): "I8_TO_I32",
    (i16, i32): "I16_TO_I32",
    (f8e4m3, f32): "F8E4M3_TO_F32",
    (f8e5m2, f32): "F8E5M2_TO_F32",
    (bf16, f32): "BF16_TO_F32",
    (f32, bf16): "F32_TO_BF16",
})

# docs/numerics.md (main context only), valued by the FeedBuffer conversion names.
TABLE_LOOKUPS: Mapping[Pair, str] = MappingProxyType({
    (f4e2m1, f8e4m3): "LUT_F4E2M1_F8E4M3",
    (f4e2m1, f8e5m2): "LUT_F4E2M1_F8E5M2",
    (f8e4m3, bf16): "LUT_F8E4M3_BF16",
    (f8e5m2, bf16): "LUT_F8E5M2_BF16",
})

# docs/numerics.md (CAST-1): no identity, no widening.
CAST_ENGINE: frozenset[Pair] = frozenset({
    (i32, i4), (i32, i8), (i32, i16),
    (f32, bf16), (f32, f8e4m3), (f32, f8e5m2),
})

# docs/numerics.md (CCAST-1): the only Commit Adapter conversion, plain or with relu.
COMMIT_CASTS: frozenset[Pair] = frozenset({(f32, bf16)})

# docs/numerics.md (FZPS-1/2): pair -> inclusive zero-point range (the source range).
ZERO_POINT_SUBS: Mapping[Pair, tuple[int, int]] = MappingProxyType({
    (i4, i5): (-8, 7),
    (i8, i9): (-128, 127),
})

# docs/numerics.md: acc(D) of docs/machine/index.md.
ACCUMULATORS: Mapping[DType, DType] = MappingProxyType({
    i4: i32, i5: i32, i8: i32, i9: i32,
    bf16: f32, f8e4m3: f32, f8e5m2: f32,
})

# docs/numerics.md: (stream operand, TRF operand) -> accumulator. Integer families may mix
# their plain and zero-point forms; float pairs must match exactly.
_INT_FAMILIES = ((i4, i5), (i8, i9))
CONTRACTION_PAIRS: Mapping[Pair, DType] = MappingProxyType({
    **{(s, t): i32 for fam in _INT_FAMILIES for s in fam for t in fam},
    **{(d, d): f32 for d in (bf16, f8e4m3, f8e5m2)},
})

# docs/numerics.md / rule TRF-6: the types a TRF can store.
TRF_STORAGE: frozenset[DType] = frozenset({i4, i8, f8e4m3, f8e5m2, bf16})


def is_legal_fetch_cast(src: DType, dst: DType) -> bool:
    """FCAST-1: identity on a materializable type, or a pair of FETCH_CASTS."""
    if src == dst:
        return src.materializable
    return (src, dst) in FETCH_CASTS


def accumulator(d: DType) -> DType:
    """acc(D): i32 for i4/i5/i8/i9, f32 for bf16/f8e4m3/f8e5m2; ValueError otherwise."""
    try:
        return ACCUMULATORS[d]
    except KeyError:
        names = ", ".join(str(k) for k in ACCUMULATORS)
        raise ValueError(f"{d} is not a contraction operand type (one of: {names})") from None
