"""Tests for ir/dtypes.py: per-type facts and the conversion tables, typed in from docs/numerics.md."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import ir.dtypes as dt
from ir.dtypes import (
    ALL_DTYPES, CAST_ENGINE, COMMIT_CASTS, CONTRACTION_PAIRS, FETCH_CASTS, TABLE_LOOKUPS,
    TRF_STORAGE, ZERO_POINT_SUBS, DType, accumulator, bytes_of, is_legal_fetch_cast,
)

NAMES = ["i4", "i5", "i8", "i9", "i16", "i32", "u8", "bf16", "f32", "f8e4m3", "f8e5m2", "f4e2m1"]
PAIRS = list(itertools.product(ALL_DTYPES, repeat=2))

# docs/machine/index.md bits(D), docs/numerics.md value widths and 6 flit element counts.
# name: (bits, value_bits, flit_elems, is_float, is_signed, materializable)
FACTS = {
    "i4": (4, 4, 64, False, True, True),
    "i5": (4, 5, 64, False, True, False),
    "i8": (8, 8, 32, False, True, True),
    "i9": (8, 9, 32, False, True, False),
    "i16": (16, 16, 16, False, True, True),
    "i32": (32, 32, 8, False, True, True),
    "u8": (8, 8, 32, False, False, True),
    "bf16": (16, 16, 16, True, True, True),
    "f32": (32, 32, 8, True, True, True),
    "f8e4m3": (8, 8, 32, True, True, True),
    "f8e5m2": (8, 8, 32, True, True, True),
    "f4e2m1": (4, 4, 64, True, True, True),
}

# docs/numerics.md, "range / values" column.
INT_RANGES = {
    "i4": (-8, 7), "i5": (-16, 15), "i8": (-128, 127), "i9": (-256, 255), "u8": (0, 255),
    "i16": (-32768, 32767), "i32": (-2**31, 2**31 - 1),
}

# docs/numerics.md "numpy host form" and the brief's raw bit containers.
HOST = {
    "i4": (np.int8, np.uint8), "i8": (np.int8, np.uint8), "u8": (np.uint8, np.uint8),
    "i16": (np.int16, np.uint16), "i32": (np.int32, np.uint32),
    "bf16": (ml_dtypes.bfloat16, np.uint16), "f32": (np.float32, np.uint32),
    "f8e4m3": (ml_dtypes.float8_e4m3fn, np.uint8), "f8e5m2": (ml_dtypes.float8_e5m2, np.uint8),
    "f4e2m1": (ml_dtypes.float4_e2m1fn, np.uint8),
}


def test_member_names_and_order() -> None:
    assert [d.value for d in ALL_DTYPES] == NAMES
    assert [str(d) for d in DType] == NAMES
    assert len(ALL_DTYPES) == 12


@pytest.mark.parametrize("name", NAMES)
def test_alias_and_parse(name: str) -> None:
    d = DType.parse(name)
    assert getattr(dt, name) is d
    assert d.value == name and str(d) == name
    assert DType.parse(d) is d


@pytest.mark.parametrize("bad", ["f16", "BF16x", "", "int8", "fp8"])
def test_parse_refuses_unknown_name_and_lists_names(bad: str) -> None:
    with pytest.raises(ValueError) as info:
        DType.parse(bad)
    assert all(n in str(info.value) for n in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_facts(name: str) -> None:
    d = DType.parse(name)
    bits, value_bits, flit, is_float, signed, mat = FACTS[name]
    assert (d.bits, d.value_bits, d.flit_elems) == (bits, value_bits, flit)
    assert (d.is_float, d.is_int, d.is_signed, d.materializable) == (is_float, not is_float, signed, mat)
    assert d.flit_elems * d.bits == 256


@pytest.mark.parametrize("name", NAMES)
def test_int_range(name: str) -> None:
    d = DType.parse(name)
    if name not in INT_RANGES:
        with pytest.raises(ValueError):
            _ = d.min
        with pytest.raises(ValueError):
            _ = d.max
        return
    assert (d.min, d.max) == INT_RANGES[name]


@pytest.mark.parametrize("name", NAMES)
def test_host_and_bits_dtype(name: str) -> None:
    d = DType.parse(name)
    if name in ("i5", "i9"):  # stream-only: never on the host (docs/numerics.md, TYPE-3)
        with pytest.raises(ValueError):
            _ = d.host_dtype
        with pytest.raises(ValueError):
            _ = d.bits_dtype
        return
    host, raw = HOST[name]
    assert d.host_dtype == np.dtype(host)
    assert d.bits_dtype == np.dtype(raw)
    assert d.bits_dtype.kind == "u"
    # The bit container is exactly one host element wide, so .view is a reinterpretation.
    assert d.bits_dtype.itemsize == d.host_dtype.itemsize


@pytest.mark.parametrize(("n", "name", "expected"), [
    (64, "i4", 32), (64, "i5", 32), (64, "f4e2m1", 32), (32, "i8", 32), (32, "i9", 32),
    (32, "u8", 32), (32, "f8e4m3", 32), (16, "bf16", 32), (16, "i16", 32), (8, "f32", 32),
    (8, "i32", 32), (2, "i4", 1), (0, "i4", 0), (3, "bf16", 6),
])
def test_bytes_of(n: int, name: str, expected: int) -> None:
    assert bytes_of(n, DType.parse(name)) == expected


@pytest.mark.parametrize(("n", "name"), [(1, "i4"), (3, "i5"), (63, "f4e2m1"), (-2, "i8")])
def test_bytes_of_refuses_partial_bytes(n: int, name: str) -> None:
    with pytest.raises(ValueError):
        bytes_of(n, DType.parse(name))


def _pairs(*names: tuple[str, str]) -> set[tuple[DType, DType]]:
    return {(DType.parse(a), DType.parse(b)) for a, b in names}


# docs/numerics.md (non-identity rows), with the FeedBuffer names of docs/reference/diagnostics.md.
SPEC_FETCH = {
    ("i4", "i32"): "I4_TO_I32", ("i8", "i32"): "I8_TO_I32", ("i16", "i32"): "I16_TO_I32",
    ("f8e4m3", "f32"): "F8E4M3_TO_F32", ("f8e5m2", "f32"): "F8E5M2_TO_F32",
    ("bf16", "f32"): "BF16_TO_F32", ("f32", "bf16"): "F32_TO_BF16",
}
SPEC_LUT = {
    ("f4e2m1", "f8e4m3"): "LUT_F4E2M1_F8E4M3", ("f4e2m1", "f8e5m2"): "LUT_F4E2M1_F8E5M2",
    ("f8e4m3", "bf16"): "LUT_F8E4M3_BF16", ("f8e5m2", "bf16"): "LUT_F8E5M2_BF16",
}
SPEC_CAST = _pairs(("i32", "i4"), ("i32", "i8"), ("i32", "i16"), ("f32", "bf16"),
                   ("f32", "f8e4m3"), ("f32", "f8e5m2"))


def test_fetch_cast_table() -> None:
    assert {(str(a), str(b)): v for (a, b), v in FETCH_CASTS.items()} == SPEC_FETCH


@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=lambda d: str(d))
def test_is_legal_fetch_cast_exhaustive(src: DType, dst: DType) -> None:
    expected = (src == dst and src not in (dt.i5, dt.i9)) or (str(src), str(dst)) in SPEC_FETCH
    assert is_legal_fetch_cast(src, dst) is expected


@pytest.mark.parametrize(("src", "dst"), [
    ("f8e4m3", "bf16"), ("f32", "f8e4m3"), ("i32", "i8"), ("u8", "i32"), ("i8", "i9"),
    ("i5", "i5"), ("i9", "i9"), ("f4e2m1", "f8e4m3"), ("i32", "i16"),
])
def test_fetch_cast_refusals_named_by_the_spec(src: str, dst: str) -> None:
    assert not is_legal_fetch_cast(DType.parse(src), DType.parse(dst))


def test_table_lookups() -> None:
    assert {(str(a), str(b)): v for (a, b), v in TABLE_LOOKUPS.items()} == SPEC_LUT


def test_cast_engine_and_commit_casts() -> None:
    assert set(CAST_ENGINE) == SPEC_CAST
    assert set(COMMIT_CASTS) == {(dt.f32, dt.bf16)}
    assert all(a != b for a, b in CAST_ENGINE)  # CAST-1: no identity cast


def test_zero_point_subs() -> None:
    assert dict(ZERO_POINT_SUBS) == {(dt.i4, dt.i5): (-8, 7), (dt.i8, dt.i9): (-128, 127)}


def test_only_zero_point_sub_produces_i5_i9() -> None:
    other = set(FETCH_CASTS) | set(TABLE_LOOKUPS) | CAST_ENGINE | COMMIT_CASTS
    assert all(b not in (dt.i5, dt.i9) and a not in (dt.i5, dt.i9) for a, b in other)


def test_tables_are_immutable() -> None:
    with pytest.raises(TypeError):
        FETCH_CASTS[(dt.u8, dt.i32)] = "X"  # type: ignore[index]
    with pytest.raises(AttributeError):
        CAST_ENGINE.add((dt.i32, dt.u8))  # type: ignore[attr-defined]


# docs/numerics.md, typed in row by row.
SPEC_CONTRACTION = {
    **{(a, b): "i32" for a in ("i4", "i5") for b in ("i4", "i5")},
    **{(a, b): "i32" for a in ("i8", "i9") for b in ("i8", "i9")},
    ("bf16", "bf16"): "f32", ("f8e4m3", "f8e4m3"): "f32", ("f8e5m2", "f8e5m2"): "f32",
}


@pytest.mark.parametrize(("s", "t"), PAIRS, ids=lambda d: str(d))
def test_contraction_pairs_exhaustive(s: DType, t: DType) -> None:
    expected = SPEC_CONTRACTION.get((str(s), str(t)))
    got = CONTRACTION_PAIRS.get((s, t))
    assert (str(got) if got else None) == expected


def test_trf_storage() -> None:
    assert TRF_STORAGE == frozenset(DType.parse(n) for n in ("i4", "i8", "f8e4m3", "f8e5m2", "bf16"))
    assert all(d.materializable for d in TRF_STORAGE)


@pytest.mark.parametrize(("name", "acc"), [
    ("i4", "i32"), ("i5", "i32"), ("i8", "i32"), ("i9", "i32"),
    ("bf16", "f32"), ("f8e4m3", "f32"), ("f8e5m2", "f32"),
])
def test_accumulator(name: str, acc: str) -> None:
    assert accumulator(DType.parse(name)) is DType.parse(acc)


@pytest.mark.parametrize("name", ["u8", "i16", "i32", "f32", "f4e2m1"])
def test_accumulator_refuses_non_operands(name: str) -> None:
    with pytest.raises(ValueError):
        accumulator(DType.parse(name))
