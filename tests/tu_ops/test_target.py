"""Target descriptions (tu_ops/targets/rngd.toml): the built-in rngd, TOML/JSON files, schema errors, limits."""

from __future__ import annotations

import hashlib
import json
import tomllib
from importlib import resources

import attrs
import pytest

from ir.dtypes import DType
from ir.errors import NpuOptError
from tu_ops import (
    BUILTIN_TARGETS, RNGD_SHA256, EmulationPath, Target, TargetSchemaError, canonical_json,
    get_target, load_target, parse_target_data, rngd, target_sha256,
)
from tu_ops.target_file import target_to_data
from tests.tu_ops.builders import big_trf_load


def shipped_bytes() -> bytes:
    return (resources.files("tu_ops") / "targets" / "rngd.toml").read_bytes()


def rngd_data() -> dict:
    return tomllib.loads(shipped_bytes().decode())


def write(tmp_path, data: dict, name: str = "t.toml") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data) if name.endswith(".json") else _toml(data))
    return str(path)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }" if v else "{}"


def _toml_entry(key: str, v) -> str:
    if isinstance(v, list) and v and isinstance(v[0], dict):
        return f"{key} = [\n" + "".join(f"  {_toml_value(x)},\n" for x in v) + "]"
    return f"{key} = {_toml_value(v)}"


def _toml(data: dict) -> str:
    """A TOML text of an arbitrary (possibly schema-breaking) object."""
    lines = [_toml_entry(k, v) for k, v in data.items() if not isinstance(v, dict)]
    for k, v in data.items():
        if isinstance(v, dict):
            lines += ["", f"[{k}]"] + [_toml_entry(kk, vv) for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


def test_rngd_equals_the_shipped_toml(tmp_path):
    path = tmp_path / "rngd.toml"
    path.write_bytes(shipped_bytes())
    loaded = load_target(path)
    assert loaded == rngd()
    assert loaded.file_sha256 == rngd().file_sha256 == RNGD_SHA256


def test_shipped_toml_hash_is_the_artifact_hash():
    assert hashlib.sha256(shipped_bytes()).hexdigest() == RNGD_SHA256


def test_rngd_constants_and_tables():
    t = rngd()
    c = t.constants
    assert (c.FLIT_BYTES, c.TRF_BYTES, c.DM_SLICE_BYTES, c.LANES, c.COMMIT_WIDTHS) == (
        32, 65536, 524288, (1, 2, 4, 8), (8, 16, 24, 32))
    assert t.mac_entry(DType.I8, DType.I9).acc is DType.I32
    assert t.mac_entry(DType.I8, DType.BF16) is None
    assert t.zero_point_entry(DType.I4).dst is DType.I5
    assert t.table_lookup(DType.F8E5M2, DType.BF16).native
    assert t.staging == (DType.I5, DType.I9) and not t.materializable(DType.I9)
    assert t.emulation == () and t.emulation_for(DType.F8E4M3, DType.F8E4M3) is None
    assert get_target("rngd") is rngd() and set(BUILTIN_TARGETS) == {"rngd", "rngd-2chip", "rngd-4chip"}


def test_round_trip(tmp_path):
    text = json.dumps(target_to_data(rngd()), indent=2)
    path = tmp_path / "copy.json"
    path.write_text(text)
    loaded = load_target(path)
    assert loaded == rngd()
    assert loaded.file_sha256 == hashlib.sha256(text.encode()).hexdigest()


def test_canonical_hash_ignores_order_and_formatting():
    data = rngd_data()
    data["dtypes"]["mac"].reverse()
    data["constants"]["LANES"] = [8, 4, 2, 1]
    shuffled = parse_target_data(data)
    assert shuffled == rngd()
    assert target_sha256(shuffled) == target_sha256(rngd())
    assert json.loads(canonical_json(rngd()))["name"] == "rngd"
    other = parse_target_data({**data, "name": "rngd-small"})
    assert target_sha256(other) != target_sha256(rngd())


def _set(data: dict, path: str, value) -> dict:
    *head, last = path.split(".")
    node = data
    for k in head:
        node = node[int(k)] if k.isdigit() else node[k]
    if value is _DELETE:
        del node[last]
    else:
        node[int(last) if last.isdigit() else last] = value
    return data


_DELETE = object()

SCHEMA_ERRORS = [
    ("constants.TRF_BYTES", _DELETE, "constants.TRF_BYTES"),
    ("constants.TRF_BYTES", "big", "constants.TRF_BYTES"),
    ("constants.LANES", 8, "constants.LANES"),
    ("constants.LANES", [1, 1], "constants.LANES"),
    ("constants.EXTRA", 1, "constants.EXTRA"),
    ("colour", "red", "colour"),
    ("counts", _DELETE, "counts"),
    ("schema", 2, "schema"),
    ("name", "has space", "name"),
    ("counts.chips", [0], "counts.chips[0]"),
    ("dtypes.bits.i7", 7, "dtypes.bits.i7"),
    ("dtypes.mac.3.acc", "f64", "dtypes.mac[3].acc"),
    ("dtypes.cast.0.native", "yes", "dtypes.cast[0].native"),
    ("dtypes.cast.0.frm", "i32", "dtypes.cast[0].frm"),
    ("dtypes.fetch_zero_point_sub.0.min", 9, "dtypes.fetch_zero_point_sub[0].min"),
    ("dtypes.staging", "i5", "dtypes.staging"),
    ("emulation", [{"table": "cast", "entry": ["i32", "i8", "i8"], "insert": "fetch_table_lookup",
                    "to": "i8"}], "emulation[0].table"),
    ("emulation", [{"table": "mac", "entry": ["f8e4m3", "f8e4m3", "f32"], "insert": "fetch_table_lookup",
                    "to": "f8e5m2"}], "emulation[0].to"),
]


@pytest.mark.parametrize("fmt", ["toml", "json"])
@pytest.mark.parametrize("path, value, key", SCHEMA_ERRORS)
def test_schema_errors_name_the_key(tmp_path, fmt, path, value, key):
    data = _set(rngd_data(), path, value)
    with pytest.raises(NpuOptError) as info:
        load_target(write(tmp_path, data, f"t.{fmt}"))
    assert info.value.code == "USAGE"
    assert isinstance(info.value, TargetSchemaError) and info.value.key == key
    assert f"`{key}`" in str(info.value)


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(TargetSchemaError) as missing:
        load_target(tmp_path / "absent.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("schema = = 1\n")
    with pytest.raises(TargetSchemaError) as malformed:
        load_target(bad)
    assert missing.value.code == malformed.value.code == "USAGE"


def test_emulation_path_accepted_when_legal():
    data = rngd_data()
    data["dtypes"]["fetch_table_lookup"].append({"from": "f8e4m3", "to": "f8e5m2"})
    for e in data["dtypes"]["mac"]:
        if e["stream"] == "f8e4m3":
            e["native"] = False
    data["emulation"] = [{"table": "mac", "entry": ["f8e4m3", "f8e4m3", "f32"], "insert": "fetch_table_lookup",
                          "to": "f8e5m2"}]
    t = parse_target_data(data)
    assert t.emulation_for(DType.F8E4M3, DType.F8E4M3) == EmulationPath(
        "mac", (DType.F8E4M3, DType.F8E4M3, DType.F32), "fetch_table_lookup", DType.F8E5M2)
    assert not t.mac_entry(DType.F8E4M3, DType.F8E4M3).native
    assert parse_target_data(target_to_data(t)) == t


def small_trf_target() -> Target:
    c = attrs.evolve(rngd().constants, TRF_BYTES=32768, TRF_LANE_BYTES=4096, TRF_HALF_BYTES=16384)
    return attrs.evolve(rngd(), name="rngd-small-trf", constants=c, file_sha256=None)


def test_custom_target_changes_limits(tmp_path):
    """A 64 KiB TRF load fits rngd; a target with a 32 KiB TRF refuses it under TRFLD-3."""
    small = small_trf_target()
    path = tmp_path / "small.json"
    path.write_text(json.dumps(target_to_data(small)))
    loaded = load_target(path)
    assert loaded == small and loaded.constants.TRF_BYTES == 32768
    load = big_trf_load()
    load.verify(rngd())
    error = load.first_failure(loaded)
    assert error is not None and error.code == "TRFLD-3"


def test_custom_target_without_a_mac_pair_refuses_cop_1():
    from tests.tu_ops.builders import gemm

    no_bf16 = attrs.evolve(rngd(), mac=[e for e in rngd().mac if e.stream is not DType.BF16])
    outer = gemm("bf16").context().ops[7]
    outer.verify(rngd())
    assert outer.first_failure(no_bf16).code == "COP-1"
