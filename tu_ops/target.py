"""The target description as data: docs/machine/index.md constants and tu_ops/targets/rngd.toml tables.

`rngd()` is built here from the spec's numbers and `ir.dtypes`' tables (independently of
the shipped `tu_ops/targets/rngd.toml`, which a test loads and compares). `load_target`
reads a TOML or JSON description file (schema and writer in `tu_ops.target_file`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Union

import attrs

from ir.dtypes import (
    ALL_DTYPES, CAST_ENGINE, COMMIT_CASTS, CONTRACTION_PAIRS, FETCH_CASTS, TABLE_LOOKUPS,
    TRF_STORAGE, ZERO_POINT_SUBS, DType,
)
from ir.errors import NpuOptError
from ir.topology import CHIP_TARGETS
from importlib import resources

__all__ = [
    "Constants", "PairEntry", "ZeroPointEntry", "MacEntry", "EmulationPath", "Target",
    "TargetSchemaError", "SET_CONSTANTS", "CONSTANT_NAMES", "RNGD_SHA256", "BUILTIN_TARGETS",
    "rngd", "load_target", "get_target", "target_sha256", "canonical_json", "for_chips",
    "TargetLike", "as_target",
]

# The SHA-256 of the shipped rngd.toml, written into every artifact header; a test pins it to the file.
RNGD_SHA256 = "9dbe3bc0345cb464de416009c586501dc996c9af59ab48b7822910819da42002"


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


@attrs.frozen(kw_only=True)
class Constants:
    """Every constant of docs/machine/index.md under its name there; sets are sorted tuples."""

    FLIT_BYTES: int
    CLUSTER_SIZES: tuple[int, ...] = attrs.field(converter=_int_set)
    SLICE_SIZES: tuple[int, ...] = attrs.field(converter=_int_set)
    LANES: tuple[int, ...] = attrs.field(converter=_int_set)
    DM_SLICE_BYTES: int
    TRF_BYTES: int
    TRF_LANE_BYTES: int
    TRF_HALF_BYTES: int
    VRF_BYTES: int
    SEQ_MAX_ENTRIES: int
    SEQ_MAX_ITER: int
    SEQ_ACCESS_BYTES: tuple[int, ...] = attrs.field(converter=_int_set)
    SUB_ACCESS_BYTES: int
    PACKET_ALIGN: int
    COMMIT_WIDTHS: tuple[int, ...] = attrs.field(converter=_int_set)
    COMMIT_BASE: int
    OUTER_PACKET_BYTES: tuple[int, ...] = attrs.field(converter=_int_set)
    ACC_COLS: int
    ACC_CELLS: int
    LANE_BUS: int
    TRF_READ_BYTES: int
    DMA_DM_ALIGN: int
    DMA_MAX_PACKET: int
    BANK_RUN_LIMIT: int


CONSTANT_NAMES: tuple[str, ...] = tuple(f.name for f in attrs.fields(Constants))
SET_CONSTANTS = frozenset({"CLUSTER_SIZES", "SLICE_SIZES", "LANES", "SEQ_ACCESS_BYTES",
                           "COMMIT_WIDTHS", "OUTER_PACKET_BYTES"})


@attrs.frozen
class PairEntry:
    """A legal `{from, to}` conversion (FLUT-1, FCAST-1, CAST-1, CCAST-1)."""

    src: DType
    dst: DType
    native: bool = True

    def key(self) -> tuple[int, int]:
        return (_dorder(self.src), _dorder(self.dst))


@attrs.frozen
class ZeroPointEntry:
    """A legal `fetch_zero_point_sub` pair with its inclusive zero-point range (FZPS-1, FZPS-2)."""

    src: DType
    dst: DType
    min: int
    max: int
    native: bool = True

    def key(self) -> tuple[int, int]:
        return (_dorder(self.src), _dorder(self.dst))


@attrs.frozen
class MacEntry:
    """A Multiplier operand pair and its accumulator (OUTER-1, docs/numerics.md)."""

    stream: DType
    weight: DType
    acc: DType
    native: bool = True

    def key(self) -> tuple[int, int, int]:
        return (_dorder(self.stream), _dorder(self.weight), _dorder(self.acc))


@attrs.frozen
class EmulationPath:
    """tu_ops/targets/rngd.toml: emulate the `mac` entry by inserting `fetch_table_lookup(to)`."""

    table: str
    entry: tuple[DType, ...]
    insert: str
    to: DType

    def key(self) -> tuple:
        return (self.table, tuple(_dorder(d) for d in self.entry), self.insert, _dorder(self.to))


def _sorted_entries(entries: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(sorted(set(entries), key=lambda e: e.key()))


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

    def is_fetch_cast(self, src: DType, dst: DType) -> bool:
        """FCAST-1: identity on a materializable dtype, or a listed pair."""
        if src == dst:
            return self.materializable(src)
        return self.fetch_cast_entry(src, dst) is not None

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


# --- the built-in rngd target ------------------------------------------------------------

_RNGD_CONSTANTS = dict(
    FLIT_BYTES=32, CLUSTER_SIZES=(1, 2), SLICE_SIZES=(64, 128, 256), LANES=(1, 2, 4, 8),
    DM_SLICE_BYTES=524_288, TRF_BYTES=65_536, TRF_LANE_BYTES=8_192, TRF_HALF_BYTES=32_768,
    VRF_BYTES=8_192, SEQ_MAX_ENTRIES=8, SEQ_MAX_ITER=65_536, SEQ_ACCESS_BYTES=(1, 2, 4, 8, 16, 32),
    SUB_ACCESS_BYTES=8, PACKET_ALIGN=8, COMMIT_WIDTHS=(8, 16, 24, 32), COMMIT_BASE=8,
    OUTER_PACKET_BYTES=(32, 64), ACC_COLS=32, ACC_CELLS=1_024, LANE_BUS=8, TRF_READ_BYTES=64,
    DMA_DM_ALIGN=8, DMA_MAX_PACKET=4_096, BANK_RUN_LIMIT=64,
)


@functools.cache
def rngd() -> Target:
    """The built-in `rngd` target: docs/machine/index.md numbers and docs/numerics.md tables, all native."""
    return Target(
        name="rngd",
        description="Furiosa RNGD: 2 clusters x 256 slices per chip",
        chips=(1,),
        constants=Constants(**_RNGD_CONSTANTS),
        bits={d: d.bits for d in ALL_DTYPES},
        staging=[d for d in ALL_DTYPES if not d.materializable],
        trf_storage=TRF_STORAGE,
        fetch_table_lookup=[PairEntry(s, t) for s, t in TABLE_LOOKUPS],
        fetch_cast=[PairEntry(s, t) for s, t in FETCH_CASTS],
        fetch_zero_point_sub=[ZeroPointEntry(s, t, lo, hi) for (s, t), (lo, hi) in ZERO_POINT_SUBS.items()],
        cast=[PairEntry(s, t) for s, t in CAST_ENGINE],
        commit_cast=[PairEntry(s, t) for s, t in COMMIT_CASTS],
        mac=[MacEntry(s, w, a) for (s, w), a in CONTRACTION_PAIRS.items()],
        emulation=(),
        file_sha256=RNGD_SHA256,
    )


@functools.cache
def _shipped(name: str) -> Target:
    """A built-in target shipped only as data: tu_ops/targets/<name>.toml, hashed as its bytes."""
    from tu_ops.target_file import load_target_bytes

    raw = (resources.files("tu_ops") / "targets" / f"{name}.toml").read_bytes()
    return load_target_bytes(raw, source=f"tu_ops/targets/{name}.toml")


BUILTIN_TARGETS: Mapping[str, Callable[[], Target]] = MappingProxyType({
    "rngd": rngd,
    **{name: functools.partial(_shipped, name) for chips, name in sorted(CHIP_TARGETS.items()) if chips > 1},
})


def for_chips(target: Target, chips: int) -> Target:
    """The target a kernel of `chips` chips compiles for: `rngd` names one RNGD chip, so a
    multi-chip kernel on `rngd` uses the shipped target of that many chips (`rngd-2chip`,
    `rngd-4chip`); any other target, and any chip count without a shipped target, is kept."""
    name = CHIP_TARGETS.get(chips)
    if target.name == "rngd" and chips > 1 and name is not None:
        return BUILTIN_TARGETS[name]()
    return target


def rngd_toml_text() -> str:
    """The shipped `tu_ops/targets/rngd.toml` (tu_ops/targets/rngd.toml), as text."""
    return (resources.files("tu_ops") / "targets" / "rngd.toml").read_text(encoding="utf-8")


def load_target(path: str | Path) -> Target:
    """Read a target description file: TOML, or JSON when the name ends in `.json`.

    Any read, parse or schema failure raises TargetSchemaError (code USAGE) naming the key."""
    from tu_ops.target_file import load_target_bytes

    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise TargetSchemaError(f"cannot read target file {p}: {e.strerror or e}", key="") from e
    return load_target_bytes(raw, source=str(p), json_format=p.suffix.lower() == ".json")


def get_target(name_or_path: str | Path) -> Target:
    """A built-in target by name (`"rngd"`), else the description file at that path."""
    builtin = BUILTIN_TARGETS.get(str(name_or_path))
    return builtin() if builtin is not None else load_target(name_or_path)


TargetLike = Union[Target, str, Path, None]
"""A target as the compile entry points take it: a target object, a shipped name (`"rngd"`),
a description file's path, or None for `rngd`."""


def as_target(target: TargetLike) -> Target:
    """The target object `target` names (`rngd` for None)."""
    return target if isinstance(target, Target) else get_target(target if target is not None else "rngd")


def canonical_json(target: Target) -> str:
    """The canonical serialization: the tu_ops/targets/rngd.toml object, sorted keys, no blanks."""
    from tu_ops.target_file import target_to_data

    return json.dumps(target_to_data(target), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)


def target_sha256(target: Target) -> str:
    """SHA-256 (lowercase hex) of `canonical_json(target)`: equal targets hash equal."""
    return hashlib.sha256(canonical_json(target).encode("utf-8")).hexdigest()
