"""The target description's data model: `Target`, its `Constants` and its dtype tables
(the entries of tu_ops/targets/rngd.toml). Built by `tu_ops.target` (the shipped targets)
and by `tu_ops.target_file` (a description file), which both import it."""

from __future__ import annotations

import functools
from typing import Any, Iterable, Mapping

import attrs

from ir.dtypes import ALL_DTYPES, DType
from ir.errors import NpuOptError
from ir.machine import CONSTANT_NAMES, SET_CONSTANTS, Constants  # the constants' data model lives with the rules that read them

__all__ = [
    "Constants", "PairEntry", "ZeroPointEntry", "MacEntry", "EmulationPath", "Target",
    "TargetSchemaError", "SET_CONSTANTS", "CONSTANT_NAMES",
]


class TargetSchemaError(NpuOptError):
    """A target description that does not match tu_ops/targets/rngd.toml; `key` is the offending key."""

    code = "USAGE"

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message, code="USAGE")
        self.key = key


def _dorder(d: DType) -> int:
    return ALL_DTYPES.index(d)


def _int_set(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(sorted(set(values)))


def _dtype_set(values: Iterable[DType]) -> tuple[DType, ...]:
    return tuple(sorted(set(values), key=_dorder))


@attrs.frozen
class PairEntry:
    """A legal `{from, to}` conversion (FLUT-1, FCAST-1, CAST-1, CCAST-1)."""

    src: DType
    dst: DType
    native: bool = True


@attrs.frozen
class ZeroPointEntry:
    """A legal `fetch_zero_point_sub` pair with its inclusive zero-point range (FZPS-1, FZPS-2)."""

    src: DType
    dst: DType
    min: int
    max: int
    native: bool = True


@attrs.frozen
class MacEntry:
    """A Multiplier operand pair and its accumulator (OUTER-1, docs/numerics.md)."""

    stream: DType
    weight: DType
    acc: DType
    native: bool = True


@attrs.frozen
class EmulationPath:
    """tu_ops/targets/rngd.toml: emulate the `mac` entry by inserting `fetch_table_lookup(to)`."""

    table: str
    entry: tuple[DType, ...]
    insert: str
    to: DType


def _key(entry: Any) -> tuple:
    """An entry's place in canonical order: its dtypes (in `ALL_DTYPES` order) and names, field by field."""
    return tuple(_dorder(v) if isinstance(v, DType) else tuple(map(_dorder, v)) if isinstance(v, tuple) else v
                 for v in attrs.astuple(entry, recurse=False) if isinstance(v, (DType, tuple, str)))


def _sorted_entries(entries: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(sorted(set(entries), key=_key))


def _bits_table(bits: Mapping[DType, int] | Iterable[tuple[DType, int]]) -> tuple[tuple[DType, int], ...]:
    items = bits.items() if isinstance(bits, Mapping) else bits
    return tuple(sorted(dict(items).items(), key=lambda kv: _dorder(kv[0])))


@attrs.frozen(kw_only=True, cache_hash=True)
class Target:
    """A target description (tu_ops/targets/rngd.toml). Tables are stored in canonical order, so two
    descriptions listing the same facts in another order are equal.

    `file_sha256` is the SHA-256 of the description file's bytes, the hash the VISA `target`
    line carries (visa/visa.lark); it is None for a target built in code and is excluded
    from equality. `target_sha256()` hashes the canonical serialization instead."""

    name: str
    description: str = ""
    schema: int = 1
    chips: tuple[int, ...] = attrs.field(converter=_int_set)
    constants: Constants
    bits: tuple[tuple[DType, int], ...] = attrs.field(converter=_bits_table)
    staging: tuple[DType, ...] = attrs.field(converter=_dtype_set)
    trf_storage: tuple[DType, ...] = attrs.field(converter=_dtype_set)
    fetch_table_lookup: tuple[PairEntry, ...] = attrs.field(converter=_sorted_entries)
    fetch_cast: tuple[PairEntry, ...] = attrs.field(converter=_sorted_entries)
    fetch_zero_point_sub: tuple[ZeroPointEntry, ...] = attrs.field(converter=_sorted_entries)
    cast: tuple[PairEntry, ...] = attrs.field(converter=_sorted_entries)
    commit_cast: tuple[PairEntry, ...] = attrs.field(converter=_sorted_entries)
    mac: tuple[MacEntry, ...] = attrs.field(converter=_sorted_entries)
    emulation: tuple[EmulationPath, ...] = attrs.field(default=(), converter=_sorted_entries)
    file_sha256: str | None = attrs.field(default=None, eq=False)

    # --- dtypes -------------------------------------------------------------------------

    def bits_of(self, dtype: DType) -> int | None:
        """bits(D) on this target, or None for a dtype the target does not know."""
        return self._bits_table.get(dtype)

    @functools.cached_property
    def _bits_table(self) -> dict[DType, int]:
        """`bits` as a dict, made once (the lowering asks per op; the target never changes)."""
        return dict(self.bits)

    def knows(self, dtype: DType) -> bool:
        """Does the target list `dtype` in `[dtypes] bits`?"""
        return self.bits_of(dtype) is not None

    def materializable(self, dtype: DType) -> bool:
        """A known dtype that is not a stream-only staging type."""
        return self.knows(dtype) and dtype not in self.staging

    # --- conversion tables ----------------------------------------------------------------

    def table_lookup(self, src: DType, dst: DType) -> PairEntry | None:
        """The FLUT-1 entry for (src, dst), or None."""
        return _find(self.fetch_table_lookup, src, dst)

    def fetch_cast_entry(self, src: DType, dst: DType) -> PairEntry | None:
        """The FCAST-1 entry for (src, dst); identities are implied and have no entry."""
        return _find(self.fetch_cast, src, dst)

    def zero_point_entry(self, src: DType, dst: DType | None = None) -> ZeroPointEntry | None:
        """The FZPS-1 entry from `src` (to `dst` when given), or None."""
        for e in self.fetch_zero_point_sub:
            if e.src == src and (dst is None or e.dst == dst):
                return e
        return None

    def cast_entry(self, src: DType, dst: DType) -> PairEntry | None:
        """The CAST-1 (Cast Engine) entry for (src, dst), or None."""
        return _find(self.cast, src, dst)

    def commit_cast_entry(self, src: DType, dst: DType) -> PairEntry | None:
        """The CCAST-1 (Commit Adapter) entry for (src, dst), or None."""
        return _find(self.commit_cast, src, dst)

    def mac_entry(self, stream: DType, weight: DType) -> MacEntry | None:
        """The OUTER-1 Multiplier entry for (stream, weight), or None."""
        for e in self.mac:
            if (e.stream, e.weight) == (stream, weight):
                return e
        return None

    def emulation_for(self, stream: DType, weight: DType) -> EmulationPath | None:
        """The emulation path declared for a non-native mac pair, or None."""
        for p in self.emulation:
            if p.table == "mac" and p.entry[:2] == (stream, weight):
                return p
        return None


def _find(entries: Iterable[PairEntry], src: DType, dst: DType) -> PairEntry | None:
    for e in entries:
        if (e.src, e.dst) == (src, dst):
            return e
    return None
