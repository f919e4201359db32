"""The mapping-expression language (docs/mapping-language.md): parse, evaluate, compare and normalize."""

from ir.errors import MappingError, OvershootError
from ir.mapping.api import idx, m
from ir.mapping.axes import Axis, axes
from ir.mapping.cells import Cell, CellTable, Index, OutOfBounds, Padding
from ir.mapping.factors import AxisFactor, BroadcastFactor, Factor, PaddingFactor, RaggedFactor
from ir.mapping.nodes import (
    IDENTITY, Broadcast, Mapping, Modulo, Pad, PaddingKind, Pair, Resize, Stride, Symbol, pair_all,
)

__all__ = [
    "AxisFactor", "Axis", "BroadcastFactor", "Broadcast", "Cell", "CellTable", "Factor", "IDENTITY", "Index",
    "Mapping", "MappingError", "Modulo", "RaggedFactor", "OutOfBounds", "OvershootError", "Pad",
    "Padding", "PaddingKind", "Pair", "PaddingFactor", "Resize", "Stride", "Symbol", "axes", "idx", "m",
    "pair_all",
]
