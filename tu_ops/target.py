"""The target description as data: docs/machine/index.md constants and tu_ops/targets/rngd.toml tables.

`rngd()` is built here from the spec's numbers and `ir.dtypes`' tables (independently of
the shipped `tu_ops/targets/rngd.toml`, which a test loads and compares). `load_target`
reads a TOML or JSON description file (its schema in `tu_ops.target_file`).
"""

from __future__ import annotations

import functools
import json
from hashlib import sha256
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Mapping, Union

from ir.dtypes import (
    ALL_DTYPES, CAST_ENGINE, COMMIT_CASTS, CONTRACTION_PAIRS, FETCH_CASTS, TABLE_LOOKUPS,
    TRF_STORAGE, ZERO_POINT_SUBS,
)
from ir.machine import RNGD
from ir.topology import CHIP_TARGETS
from importlib import resources
from tu_ops.target_file import load_target_bytes, parse_target_data, target_to_data  # the reader, re-exported
from tu_ops.target_model import (  # the data model, re-exported: the target as a kernel sees it
    CONSTANT_NAMES, SET_CONSTANTS, Constants, EmulationPath, MacEntry, PairEntry, Target, TargetSchemaError,
    ZeroPointEntry,
)

__all__ = [
    "Constants", "PairEntry", "ZeroPointEntry", "MacEntry", "EmulationPath", "Target",
    "TargetSchemaError", "SET_CONSTANTS", "CONSTANT_NAMES", "RNGD_SHA256", "BUILTIN_TARGETS",
    "rngd", "load_target", "get_target", "target_sha256", "canonical_json", "for_chips",
    "TargetLike", "as_target", "parse_target_data",
]

# The SHA-256 of the shipped rngd.toml, written into every artifact header; a test pins it to the file.
RNGD_SHA256 = "9dbe3bc0345cb464de416009c586501dc996c9af59ab48b7822910819da42002"


# --- the built-in rngd target ------------------------------------------------------------

@functools.cache
def rngd() -> Target:
    """The built-in `rngd` target: docs/machine/index.md numbers and docs/numerics.md tables, all native."""
    return Target(
        name="rngd",
        description="Furiosa RNGD: 2 clusters x 256 slices per chip",
        chips=(1,),
        constants=RNGD,
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
    raw = (_TARGETS_DIR / f"{name}.toml").read_bytes()
    return load_target_bytes(raw, source=f"tu_ops/targets/{name}.toml",
                             base=_base_reader(Path(str(_TARGETS_DIR)) / f"{name}.toml", ()))


# tu_ops/targets/<name>.toml is the shipped target <name>: a file is all it takes to add one
# (rngd.toml is `rngd()`'s copy, compared by a test; <name>.schedule.toml files are the
# schedule model's, visa/schedule).
_TARGETS_DIR = resources.files("tu_ops") / "targets"
_SHIPPED_NAMES = sorted(f.name[:-len(".toml")] for f in _TARGETS_DIR.iterdir()
                        if f.name.endswith(".toml") and "." not in f.name[:-len(".toml")])

BUILTIN_TARGETS: Mapping[str, Callable[[], Target]] = MappingProxyType({
    "rngd": rngd,
    **{name: functools.partial(_shipped, name) for name in _SHIPPED_NAMES if name != "rngd"},
})


def for_chips(target: Target, chips: int) -> Target:
    """The target a kernel of `chips` chips compiles for: `rngd` names one RNGD chip, so a
    multi-chip kernel on `rngd` uses the shipped target of that many chips (`rngd-2chip`,
    `rngd-4chip`); any other target, and any chip count without a shipped target, is kept."""
    name = CHIP_TARGETS.get(chips)
    if target.name == "rngd" and chips > 1 and name is not None:
        return BUILTIN_TARGETS[name]()
    return target


def load_target(path: str | Path, _chain: tuple[Path, ...] = ()) -> Target:
    """Read a target description file: TOML, or JSON when the name ends in `.json`; a
    variant's `base` is a shipped target's name or a file's path relative to this one.

    Any read, parse or schema failure raises TargetSchemaError (code USAGE) naming the key."""
    p = Path(path)
    if p.resolve() in _chain:
        raise TargetSchemaError(f"target file {p}: key `base`: the variants' bases run in a circle: "
                                + " -> ".join(str(q) for q in (*_chain, p.resolve())), key="base")
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise TargetSchemaError(f"cannot read target file {p}: {e.strerror or e}", key="") from e
    return load_target_bytes(raw, source=str(p), json_format=p.suffix.lower() == ".json",
                             base=_base_reader(p, (*_chain, p.resolve())))


def _base_reader(variant: str | Path, chain: tuple[Path, ...]) -> Callable[[str], Target]:
    """How the variant file `variant` reads its `base`: a shipped name, else a path beside it."""
    def read(name: str) -> Target:
        builtin = BUILTIN_TARGETS.get(name)
        return builtin() if builtin is not None else load_target(Path(variant).parent / name, chain)

    return read


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
    return json.dumps(target_to_data(target), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)


def target_sha256(target: Target) -> str:
    """SHA-256 (lowercase hex) of `canonical_json(target)`: equal targets hash equal."""
    return sha256(canonical_json(target).encode("utf-8")).hexdigest()
