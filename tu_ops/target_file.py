"""Target description files (tu_ops/targets/rngd.toml): strict schema reader, and the data of a target.

A file is complete, or a variant: `base = "rngd"` (a shipped target's name, or the path of
another file, relative to this one) and only the keys that differ; its tables `counts`,
`constants` and `dtypes` are merged key by key into the base's (docs/reference/target-files.md).
Every mismatch raises `TargetSchemaError` (an NpuOptError with code USAGE) whose `key` is
the dotted path of the offending key, e.g. `constants.TRF_BYTES` or `dtypes.mac[3].acc`.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from hashlib import sha256
from typing import Any

from ir.dtypes import DType
from tu_ops.target_model import (
    CONSTANT_NAMES, SET_CONSTANTS, Constants, EmulationPath, MacEntry, PairEntry, Target,
    TargetSchemaError, ZeroPointEntry,
)

__all__ = ["load_target_bytes", "parse_target_data", "target_to_data"]

TOP_KEYS = ("schema", "name", "description", "emulation", "counts", "constants", "dtypes")
MERGED_TABLES = ("counts", "constants", "dtypes")  # a variant's tables, merged key by key into its base's
DTYPE_KEYS = ("bits", "staging", "trf_storage", "fetch_table_lookup", "fetch_cast",
              "fetch_zero_point_sub", "cast", "commit_cast", "mac")
_PAIR_TABLES = ("fetch_table_lookup", "fetch_cast", "cast", "commit_cast")
_NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")
_F8 = (DType.F8E4M3, DType.F8E5M2)


BaseReader = Callable[[str], Target]
"""The target a variant's `base` names (`tu_ops.target` resolves shipped names and paths)."""


def load_target_bytes(raw: bytes, *, source: str = "<target>", json_format: bool = False,
                      base: BaseReader | None = None) -> Target:
    """Parse the bytes of a description file; `file_sha256` is the hash of those bytes. A
    variant (a file with `base`) is resolved through `base` and hashed by its content
    (`file_sha256` None: the artifact names `target_sha256` of the merged target)."""
    try:
        text = raw.decode("utf-8")
        data = json.loads(text) if json_format else tomllib.loads(text)
    except (UnicodeDecodeError, ValueError) as e:  # TOMLDecodeError and JSONDecodeError are ValueErrors
        fmt = "JSON" if json_format else "TOML"
        raise TargetSchemaError(f"target file {source}: not valid {fmt}: {e}", key="") from e
    if isinstance(data, dict) and "base" in data:
        return parse_target_data(merged_with_base(data, source, base), source=source)
    return parse_target_data(data, source=source, file_sha256=sha256(raw).hexdigest())


def merged_with_base(data: dict, source: str, base: BaseReader | None) -> dict:
    """A variant's data completed from its base: the base's every key, the variant's tables
    (`MERGED_TABLES`) merged key by key over the base's, its other keys in place of the base's."""
    r = _Reader(source)
    name = r.typed(data["base"], "base", str)
    if base is None:
        raise r.fail("base", "this reader resolves no base target (load the file with `load_target`)")
    for k in data:
        if k != "base" and k not in TOP_KEYS:
            raise r.fail(k, "unknown key")
    if "name" not in data:
        raise r.fail("name", "missing key (a variant names itself)")
    try:
        parent = base(name)
    except TargetSchemaError as e:
        raise r.fail("base", f"{name!r} is neither a shipped target nor a readable target file ({e})") from None
    out = target_to_data(parent)
    for k, v in data.items():
        if k == "base":
            continue
        out[k] = {**out[k], **r.typed(v, k, dict)} if k in MERGED_TABLES else v
    return out


class _Reader:
    """Schema checks with the dotted key path in every message."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, message: str) -> TargetSchemaError:
        where = f"key `{key}`" if key else "top level"
        return TargetSchemaError(f"target file {self.source}: {where}: {message}", key=key)

    def table(self, value: Any, key: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
        value = self.typed(value, key, dict)
        for k in value:
            if k not in required and k not in optional:
                raise self.fail(_join(key, k), "unknown key")
        for k in required:
            if k not in value:
                raise self.fail(_join(key, k), "missing key")
        return value

    def typed(self, value: Any, key: str, kind: type) -> Any:
        """`value` when it is a `kind` (dict, str, bool or list), else the error naming what was expected."""
        if not isinstance(value, kind):
            raise self.fail(key, f"expected {_EXPECTED[kind]}, got {_kind(value)}")
        return value

    def int(self, value: Any, key: str, minimum: int | None = 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"expected an integer, got {_kind(value)}")
        if minimum is not None and value < minimum:
            raise self.fail(key, f"expected an integer >= {minimum}, got {value}")
        return value

    def int_set(self, value: Any, key: str) -> tuple[int, ...]:
        items = self.typed(value, key, list)
        if not items:
            raise self.fail(key, "expected a non-empty list of integers")
        out = tuple(self.int(v, f"{key}[{i}]") for i, v in enumerate(items))
        if len(set(out)) != len(out):
            raise self.fail(key, "list has a repeated value")
        return out

    def dtype(self, value: Any, key: str, known: set[DType] | None = None) -> DType:
        name = self.typed(value, key, str)
        try:
            d = DType.parse(name)
        except ValueError:
            raise self.fail(key, f"unknown dtype {name!r}") from None
        if known is not None and d not in known:
            raise self.fail(key, f"dtype {name!r} is not listed in `dtypes.bits`")
        return d


def parse_target_data(data: Any, *, source: str = "<target>", file_sha256: str | None = None) -> Target:
    """Build a Target from the parsed TOML/JSON object, checking tu_ops/targets/rngd.toml exactly."""
    r = _Reader(source)
    top = r.table(data, "", TOP_KEYS)
    if r.int(top["schema"], "schema", minimum=None) != 1:
        raise r.fail("schema", f"unsupported schema {top['schema']}; expected 1")
    name = r.typed(top["name"], "name", str)
    if not _NAME_RE.fullmatch(name):
        raise r.fail("name", f"{name!r} does not match [A-Za-z0-9_.-]+")
    counts = r.table(top["counts"], "counts", ("chips",))
    consts = r.table(top["constants"], "constants", CONSTANT_NAMES)
    values = {k: (r.int_set if k in SET_CONSTANTS else r.int)(consts[k], f"constants.{k}")
              for k in CONSTANT_NAMES}
    _plausible(r, values)
    dt = r.table(top["dtypes"], "dtypes", DTYPE_KEYS)
    bits_table = r.typed(dt["bits"], "dtypes.bits", dict)
    bits = {r.dtype(k, f"dtypes.bits.{k}"): r.int(v, f"dtypes.bits.{k}") for k, v in bits_table.items()}
    known = set(bits)
    tables: dict[str, Any] = {}
    for k in ("staging", "trf_storage"):
        tables[k] = [r.dtype(v, f"dtypes.{k}[{i}]", known) for i, v in enumerate(r.typed(dt[k], f"dtypes.{k}", list))]
    for k in (*_PAIR_TABLES, "fetch_zero_point_sub", "mac"):
        tables[k] = [_entry(r, e, f"dtypes.{k}[{i}]", known, _ENTRY_CLASS[k])
                     for i, e in enumerate(r.typed(dt[k], f"dtypes.{k}", list))]
    emulation = [_emulation(r, e, f"emulation[{i}]", known, tables)
                 for i, e in enumerate(r.typed(top["emulation"], "emulation", list))]
    return Target(
        name=name, description=r.typed(top["description"], "description", str), schema=1,
        chips=r.int_set(counts["chips"], "counts.chips"), constants=Constants(**values),
        bits=bits, emulation=emulation, file_sha256=file_sha256, **tables,
    )


# Constants that are powers of two on any tensor unit VISA 1 describes (sizes of buses,
# memories, alignments and lane counts); the others are bounded below.
_POW2 = ("FLIT_BYTES", "CLUSTER_SIZES", "SLICE_SIZES", "LANES", "DM_SLICE_BYTES", "TRF_BYTES", "TRF_LANE_BYTES",
         "TRF_HALF_BYTES", "VRF_BYTES", "SEQ_ACCESS_BYTES", "SUB_ACCESS_BYTES", "PACKET_ALIGN", "COMMIT_BASE",
         "OUTER_PACKET_BYTES", "ACC_COLS", "LANE_BUS", "TRF_READ_BYTES", "DMA_DM_ALIGN")
CONSTANT_LIMIT = 2 ** 40


def _plausible(r: _Reader, values: dict[str, Any]) -> None:
    """Constants that parse but describe no possible chip are refused here, not as an ICE
    of every kernel later: powers of two where the hardware has them, commit widths that
    are multiples of COMMIT_BASE within a flit, at most TRF_BYTES / TRF_LANE_BYTES lanes,
    outer packets of whole flits, nothing above 2**40."""
    def each(name: str) -> tuple[int, ...]:
        v = values[name]
        return v if isinstance(v, tuple) else (v,)

    for name in values:
        if any(v > CONSTANT_LIMIT for v in each(name)):
            raise r.fail(f"constants.{name}", f"{max(each(name))} is above 2**40")
    for name in _POW2:
        bad = [v for v in each(name) if v & (v - 1)]
        if bad:
            raise r.fail(f"constants.{name}", f"{bad[0]} is not a power of two")
    flit, base = values["FLIT_BYTES"], values["COMMIT_BASE"]
    bad = [w for w in values["COMMIT_WIDTHS"] if w % base or w > flit]
    if bad:
        raise r.fail("constants.COMMIT_WIDTHS", f"{bad[0]} is not a multiple of COMMIT_BASE={base} "
                                                f"at most FLIT_BYTES={flit}")
    lanes = values["TRF_BYTES"] // values["TRF_LANE_BYTES"]
    if max(values["LANES"]) > lanes:
        raise r.fail("constants.LANES", f"{max(values['LANES'])} lanes, but TRF_BYTES / TRF_LANE_BYTES "
                                        f"holds {lanes}")
    bad = [b for b in values["OUTER_PACKET_BYTES"] if b % flit]
    if bad:
        raise r.fail("constants.OUTER_PACKET_BYTES", f"{bad[0]} is not a whole number of {flit}-byte flits")


# The keys of an entry of each `dtypes` table, in file order, and the entry field each fills.
_ENTRY_KEYS: dict[type, dict[str, str]] = {
    PairEntry: {"from": "src", "to": "dst"},
    ZeroPointEntry: {"from": "src", "to": "dst", "min": "min", "max": "max"},
    MacEntry: {"stream": "stream", "weight": "weight", "acc": "acc"},
}
_ENTRY_CLASS = {**dict.fromkeys(_PAIR_TABLES, PairEntry), "fetch_zero_point_sub": ZeroPointEntry, "mac": MacEntry}


def _entry(r: _Reader, e: Any, key: str, known: set[DType], cls: type) -> Any:
    """One entry of a `dtypes` table (`_ENTRY_KEYS`): a zero point's `min` / `max` (checked
    first, min <= max), then its dtypes, then `native` (default true)."""
    keys = _ENTRY_KEYS[cls]
    t = r.table(e, key, tuple(keys), ("native",))
    ints = {f: r.int(t[k], f"{key}.{k}", None) for k, f in keys.items() if k in ("min", "max")}
    if ints and ints["min"] > ints["max"]:
        raise r.fail(f"{key}.min", f"min {ints['min']} is above max {ints['max']}")
    dtypes = {f: r.dtype(t[k], f"{key}.{k}", known) for k, f in keys.items() if f not in ints}
    return cls(**dtypes, **ints, native=r.typed(t.get("native", True), f"{key}.native", bool))


def _emulation(r: _Reader, e: Any, key: str, known: set[DType], tables: dict[str, Any]) -> EmulationPath:
    """tu_ops/targets/rngd.toml: only an f8 mac entry decoded by a native lookup to the other f8."""
    t = r.table(e, key, ("table", "entry", "insert", "to"))
    if r.typed(t["table"], f"{key}.table", str) != "mac":
        raise r.fail(f"{key}.table", "only `mac` entries can be emulated")
    if r.typed(t["insert"], f"{key}.insert", str) != "fetch_table_lookup":
        raise r.fail(f"{key}.insert", "the only insertable stage is `fetch_table_lookup`")
    items = r.typed(t["entry"], f"{key}.entry", list)
    if len(items) != 3:
        raise r.fail(f"{key}.entry", "expected [stream, weight, acc]")
    entry = tuple(r.dtype(v, f"{key}.entry[{i}]", known) for i, v in enumerate(items))
    to = r.dtype(t["to"], f"{key}.to", known)
    if not any((m.stream, m.weight, m.acc) == entry for m in tables["mac"]):
        raise r.fail(f"{key}.entry", "no such entry in `dtypes.mac`")
    for operand in entry[:2]:
        if operand not in _F8 or to not in _F8 or to == operand:
            raise r.fail(f"{key}.to", "VISA 1 emulates only an 8-bit float operand through the other 8-bit float")
        if not any((p.src, p.dst, p.native) == (operand, to, True) for p in tables["fetch_table_lookup"]):
            raise r.fail(f"{key}.to", f"`dtypes.fetch_table_lookup` lists no native ({operand}, {to}) pair")
    return EmulationPath("mac", entry, "fetch_table_lookup", to)


def _join(key: str, sub: str) -> str:
    return f"{key}.{sub}" if key else sub


_EXPECTED = {dict: "a table", str: "a string", bool: "true or false", list: "a list"}


def _kind(value: Any) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a float"}.get(type(value), type(value).__name__)


# --- a target as data --------------------------------------------------------------------


def _entry_data(e: Any) -> dict:
    """An entry of a `dtypes` table as the description file writes it (`_ENTRY_KEYS`)."""
    data = {k: getattr(e, f) for k, f in _ENTRY_KEYS[type(e)].items()}
    return {k: str(v) if isinstance(v, DType) else v for k, v in data.items()} | {"native": e.native}


def target_to_data(target: Target) -> dict:
    """The tu_ops/targets/rngd.toml object of a target (keys in schema order, tables canonical)."""
    c = target.constants
    return {
        "schema": target.schema,
        "name": target.name,
        "description": target.description,
        "emulation": [{"table": p.table, "entry": [str(d) for d in p.entry], "insert": p.insert,
                       "to": str(p.to)} for p in target.emulation],
        "counts": {"chips": list(target.chips)},
        "constants": {k: (list(getattr(c, k)) if k in SET_CONSTANTS else getattr(c, k)) for k in CONSTANT_NAMES},
        "dtypes": {
            "bits": {str(d): b for d, b in target.bits},
            "staging": [str(d) for d in target.staging],
            "trf_storage": [str(d) for d in target.trf_storage],
            **{k: [_entry_data(e) for e in getattr(target, k)] for k in DTYPE_KEYS if k in _ENTRY_CLASS},
        },
    }
