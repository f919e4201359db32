"""Enumerations of the lowered tensor-unit ops (docs/reference/diagnostics.md, visa/visa.lark).

Every member prints as its `.name`, which is the spelling of the VISA text
(`RawInt8`, `Flit2`, `TRF_LOAD`, `INT9`, `WIDE`, `KEEP`, `HBM_TO_DM`, ...).
"""

from __future__ import annotations

import enum

import attrs

from ir.dtypes import DType
from ir.types import LaneMode

__all__ = [
    "TuContext", "FeedElementType", "CollectFlits", "ConversionKind", "Conversion",
    "CellFormat", "Region", "Width", "LoopKind", "CommitConversion", "DmaKind", "Aggregate",
    "LaneMode", "CELL_FORMATS", "STORED_ELEMENTS",
]


class _Named(enum.Enum):
    """An enum printed by member name."""

    def __str__(self) -> str:
        return self.name


class TuContext(_Named):
    """The Tensor Unit context a program runs in; `.value` is ir.types' "main"/"sub"."""

    MAIN = "main"
    SUB = "sub"


class FeedElementType(_Named):
    """Element format a feed carries (docs/reference/diagnostics.md); `.value` is the scalar type."""

    BF16 = DType.BF16
    F32 = DType.F32
    RawInt8 = DType.I8
    RawInt4 = DType.I4
    U8 = DType.U8
    I16 = DType.I16
    I32 = DType.I32
    F8E4M3 = DType.F8E4M3
    F8E5M2 = DType.F8E5M2
    F4E2M1 = DType.F4E2M1
    Int9 = DType.I9
    Int5 = DType.I5

    @property
    def dtype(self) -> DType:
        """The scalar type of this element format."""
        return self.value

    @classmethod
    def of(cls, dtype: DType) -> FeedElementType:
        """The element format carrying `dtype` (every dtype has one)."""
        return cls(dtype)


# The element types a DM tensor holds, all but the Multiplier's staging Int9 and Int5: what a
# commit writes and the Transpose Engine moves (their FEED-2).
STORED_ELEMENTS = frozenset(FeedElementType) - {FeedElementType.Int9, FeedElementType.Int5}


class CollectFlits(_Named):
    """Flits delivered per destination beat; `.value` is the count."""

    Flit1 = 1
    Flit2 = 2


class ConversionKind(_Named):
    """A Fetch Adapter conversion: `(stage, source, result)`; ZP_SUB's types follow the source.

    `stage` orders a FeedBuffer's conversion list: lookup, then cast, then zero point."""

    LUT_F4E2M1_F8E4M3 = ("lookup", DType.F4E2M1, DType.F8E4M3)
    LUT_F4E2M1_F8E5M2 = ("lookup", DType.F4E2M1, DType.F8E5M2)
    LUT_F8E4M3_BF16 = ("lookup", DType.F8E4M3, DType.BF16)
    LUT_F8E5M2_BF16 = ("lookup", DType.F8E5M2, DType.BF16)
    # compat emulation lookups between the two 8-bit floats (tu_ops/targets/rngd.toml)
    LUT_F8E5M2_F8E4M3 = ("lookup", DType.F8E5M2, DType.F8E4M3)
    LUT_F8E4M3_F8E5M2 = ("lookup", DType.F8E4M3, DType.F8E5M2)
    I4_TO_I32 = ("cast", DType.I4, DType.I32)
    I8_TO_I32 = ("cast", DType.I8, DType.I32)
    I16_TO_I32 = ("cast", DType.I16, DType.I32)
    F8E4M3_TO_F32 = ("cast", DType.F8E4M3, DType.F32)
    F8E5M2_TO_F32 = ("cast", DType.F8E5M2, DType.F32)
    BF16_TO_F32 = ("cast", DType.BF16, DType.F32)
    F32_TO_BF16 = ("cast", DType.F32, DType.BF16)
    ZP_SUB = ("zero_point", None, None)

    @property
    def stage(self) -> str:
        """"lookup", "cast" or "zero_point"."""
        return self.value[0]

    @property
    def rank(self) -> int:
        """Position of the stage in the fixed adapter order (docs/porting.md)."""
        return ("lookup", "cast", "zero_point").index(self.value[0])

    @property
    def pair(self) -> tuple[DType, DType] | None:
        """(source, result) of a lookup or cast; None for ZP_SUB."""
        return None if self.value[1] is None else (self.value[1], self.value[2])

    @classmethod
    def named(cls, stage: str, src: DType, dst: DType) -> ConversionKind | None:
        """The lookup or cast kind converting `src` to `dst`, or None."""
        for kind in cls:
            if kind.value == (stage, src, dst):
                return kind
        return None


@attrs.frozen
class Conversion:
    """One FeedBuffer conversion; `zero_point` only (and always) for ZP_SUB: `ZP_SUB(-3)`."""

    kind: ConversionKind
    zero_point: int | None = None

    def __attrs_post_init__(self) -> None:
        if (self.kind is ConversionKind.ZP_SUB) != (self.zero_point is not None):
            raise ValueError(f"{self.kind.name} {'needs' if self.zero_point is None else 'takes no'} zero point")

    def __str__(self) -> str:
        if self.zero_point is None:
            return self.kind.name
        return f"{self.kind.name}({self.zero_point})"


class CellFormat(_Named):
    """How the TRF stores an element: 8-bit integers and 4-bit integers are promoted."""

    BF16_16 = "bf16_16"
    INT9 = "int9"
    INT5 = "int5"
    F8_8 = "f8_8"


# docs/reference/diagnostics.md / TRFLD-2: the promoted cell format of each TRF storage type.
CELL_FORMATS: dict[FeedElementType, CellFormat] = {
    FeedElementType.BF16: CellFormat.BF16_16,
    FeedElementType.RawInt8: CellFormat.INT9,
    FeedElementType.RawInt4: CellFormat.INT5,
    FeedElementType.F8E4M3: CellFormat.F8_8,
    FeedElementType.F8E5M2: CellFormat.F8_8,
}


class Region(_Named):
    """TRF region of a load: the whole TRF or one 32 KiB half (double buffering)."""

    FULL = "full"
    FIRST_HALF = "first_half"
    SECOND_HALF = "second_half"


class Width(_Named):
    """TRF read width: NARROW (one bank, <= 32 bytes) or WIDE (both banks, 64 bytes)."""

    NARROW = "narrow"
    WIDE = "wide"


class LoopKind(_Named):
    """Whether a Time Reducer loop is kept in the output time or summed."""

    KEEP = "keep"
    REDUCE = "reduce"


class CommitConversion(_Named):
    """The Commit Adapter conversion of a CommitOp."""

    NONE = "none"
    F32_TO_BF16 = "f32_to_bf16"
    F32_TO_BF16_RELU = "f32_to_bf16_relu"


class DmaKind(_Named):
    """Source and destination tiers of a DmaOp; `.value` is (source kind, destination kind)."""

    HBM_TO_DM = ("hbm", "dm")
    DM_TO_HBM = ("dm", "hbm")
    DM_TO_DM = ("dm", "dm")
    HBM_TO_HBM = ("hbm", "hbm")

    @property
    def into_dm(self) -> bool:
        """True when the destination is DM (DMAOP-4 applies)."""
        return self.value[1] == "dm"


class Aggregate(_Named):
    """HOMOGENEOUS when every command of a DmaOp has the same entries and packet_bytes."""

    HOMOGENEOUS = "homogeneous"
    HETEROGENEOUS = "heterogeneous"
