"""The scheduling model's rates: `tu_ops/targets/<target>.schedule.toml`, read strictly.

Every key is required and no other key is allowed, so a typo in a rates file is an error
naming the key, never a silently defaulted number. Which engine a record runs on is not a
rate: each record class declares it (`ENGINE`, tu_ops/engines.py), so a file that still
has the `[engines]` table of older versions is refused, saying so, rather than read with
that table silently ignored.
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

import attrs

from tu_ops.target import TargetSchemaError

__all__ = ["Rates", "load_rates", "builtin_rates", "parse_rates"]

_SECTIONS: dict[str, tuple[str, ...]] = {
    "clock": ("ghz",),
    "hbm": ("chip_bytes_per_cycle", "align_bytes", "unaligned_read_factor", "partial_write_factor"),
    "dm": ("chip_bytes_per_cycle", "slice_bytes_per_cycle", "bank_hold_run"),
    "dma": ("engine_bytes_per_cycle", "request_bytes", "startup_cycles"),
    "tensor_unit": ("fetch_flits_per_cycle", "fetch_bytes_per_cycle", "commit_writes_per_cycle",
                    "packets_per_cycle", "contraction_packet_bytes", "contraction_lanes", "command_startup_cycles"),
    "kernel": ("launch_cycles",),
}
# fixed costs a rates file may set to zero (a hand-made file that leaves them out of its arithmetic)
_MAY_BE_ZERO = {("tensor_unit", "command_startup_cycles"), ("kernel", "launch_cycles")}
_TOP = ("schema", "target", *_SECTIONS)


@attrs.frozen
class Rates:
    """The numbers of one rates file: `rates("dma", "startup_cycles") -> 500` (a record's
    `busy_cycles` reads them so, tu_ops/engines.py)."""

    target: str
    values: Mapping[tuple[str, str], float] = attrs.field(converter=lambda v: MappingProxyType(dict(v)))

    def __call__(self, section: str, key: str) -> float:
        return self.values[(section, key)]


def _fail(source: str, key: str, message: str) -> TargetSchemaError:
    return TargetSchemaError(f"rates file {source}: key `{key}`: {message}", key=key)


def _number(source: str, key: str, value: Any, zero_ok: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (value == 0 and not zero_ok):
        raise _fail(source, key, f"expected {'a non-negative' if zero_ok else 'a positive'} number, got {value!r}")
    return value


def parse_rates(data: Any, *, source: str = "<rates>") -> Rates:
    """A Rates from the parsed TOML object; every mismatch names its dotted key."""
    if not isinstance(data, dict):
        raise _fail(source, "", "expected a table")
    for k in data:
        if k == "engines":
            raise _fail(source, k, "no longer read: each record class declares its engine (tu_ops/engines.py); "
                                   "delete the [engines] table")
        if k not in _TOP:
            raise _fail(source, k, "unknown key")
    for k in _TOP:
        if k not in data:
            raise _fail(source, k, "missing key")
    if data["schema"] != 1:
        raise _fail(source, "schema", f"unsupported schema {data['schema']!r}; expected 1")
    values: dict[tuple[str, str], float] = {}
    for section, keys in _SECTIONS.items():
        table = data[section]
        if not isinstance(table, dict) or set(table) != set(keys):
            extra = sorted(set(table) ^ set(keys)) if isinstance(table, dict) else [""]
            raise _fail(source, f"{section}.{extra[0]}" if extra[0] else section, "missing or unknown key")
        for k in keys:
            values[(section, k)] = _number(source, f"{section}.{k}", table[k], (section, k) in _MAY_BE_ZERO)
    return Rates(target=str(data["target"]), values=values)


def load_rates(path: str | Path) -> Rates:
    """Read a rates TOML file."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise _fail(str(p), "", f"cannot read: {e}") from None
    return parse_rates(data, source=str(p))


def builtin_rates(target_name: str) -> Rates | None:
    """The shipped rates of a built-in target (`rngd`), or None when none ships."""
    path = resources.files("tu_ops") / "targets" / f"{target_name}.schedule.toml"
    if not path.is_file():
        return None
    return _parsed(path.read_text(encoding="utf-8"), f"{target_name}.schedule.toml")


@functools.lru_cache(maxsize=8)
def _parsed(text: str, source: str) -> Rates:
    """The Rates of a shipped file's text, parsed once per process (a compile schedules
    every kernel it emits; Rates is immutable)."""
    return parse_rates(tomllib.loads(text), source=source)
