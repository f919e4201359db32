"""Constant operands, shift amounts and conversion widths."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from ir.vector import VectorRuleError
from ir.vector.scalars import f32_constant, f32_exact_int, i32_constant, int_width, scalar_constant, shift_amount


def code_of(fn, *args) -> str:
    with pytest.raises(VectorRuleError) as info:
        fn(*args)
    return info.value.code


def test_i32_constants():
    assert i32_constant(-(2**31)) == -(2**31) and i32_constant(np.int64(7)) == 7
    assert code_of(i32_constant, 2**31) == "VE-CONST-1"
    assert code_of(i32_constant, -(2**31) - 1) == "VE-CONST-1"
    assert code_of(i32_constant, 1.0) == "VE-CONST-3"
    assert code_of(i32_constant, True) == "VE-CONST-3"


def test_f32_constants():
    assert f32_constant(0.1) == np.float32(0.1) and isinstance(f32_constant(0.1), np.float32)
    assert f32_constant(2**24) == 2.0**24
    assert code_of(f32_constant, 2**24 + 1) == "VE-CONST-3"
    assert math.isinf(f32_constant(math.inf)) and math.isnan(f32_constant(math.nan))
    assert f32_constant(3.4028235e38) == np.float32(3.4028235e38)
    assert code_of(f32_constant, 1e39) == "VE-CONST-2"
    assert code_of(f32_constant, "1.0") == "VE-CONST-3"
    assert scalar_constant(3, "i32") == 3 and scalar_constant(3, "f32") == 3.0
    with pytest.raises(ValueError):
        scalar_constant(1, "i16")


def test_f32_exact_int_matches_a_round_trip():
    for v in [0, 1, 2**24 - 1, 2**24, 2**24 + 1, 2**24 + 2, 3 << 100, (1 << 128) - (1 << 104), 1 << 128, -(2**25 + 2)]:
        try:
            exact = struct.unpack("<f", struct.pack("<f", float(v)))[0] == v
        except OverflowError:
            exact = False
        assert f32_exact_int(v) == (exact and abs(v) < 2**128), v


def test_shift_amounts_and_int_widths():
    assert [shift_amount(s) for s in (0, 31)] == [0, 31]
    assert code_of(shift_amount, 32) == "VE-SHIFT-1"
    assert code_of(shift_amount, -1) == "VE-SHIFT-1"
    assert [int_width(w) for w in (0, 31)] == [0, 31]
    assert code_of(int_width, 32) == "VE-CONV-1"
    assert code_of(int_width, 3.0) == "VE-CONV-1"
