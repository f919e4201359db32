"""Transpose rules TRANSPOSE-1..18 and the engine parameters of accepted transposes (doubled
input packing: tests/ir/transpose/test_transpose_packing.py)."""

from __future__ import annotations

import pytest

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.mapping import m
from ir.switch.rule_titles import TRANSPOSE_RULES as RULES
from ir.transpose.rules import TransposeParams, check_transpose, check_transpose_params, engine_shape
from npu_opt import axes

axes(R=8, K=8, G=4, H=2, J=16, S=32, N=64, Q=4, U=3)

I4, I8, BF16, F32, I32, I5 = (DType.parse(x) for x in ("i4", "i8", "bf16", "f32", "i32", "i5"))

# name -> (dtype, time, packet, out_time, out_packet, (in_rows, in_cols, out_rows, packets_per_col))
ACCEPTED = {
    "i8_square": (I8, "G, R", "K # 32", "G, K", "R # 32", (8, 8, 8, 1)),
    "i8_two_packets_per_row": (I8, "R, H", "K # 32", "H, K", "R # 32", (8, 16, 16, 2)),
    "i8_four_packets_per_row": (I8, "H, R, G", "K # 32", "H, G, K", "R # 32", (8, 32, 32, 4)),
    "i8_trimmed_columns": (I8, "R", "U # 32", "U", "R # 32", (8, 8, 3, 1)),
    "i8_untrimmed_padding": (I8, "G", "H # 32", "H # 8", "G # 32", (4, 8, 8, 1)),
    "i8_split_axis_columns": (I8, "G, J / 8", "J % 8 # 32", "J", "G # 32", (4, 16, 16, 2)),
    "i8_padding_packets": (I8, "R, 1 # 2", "K # 32", "1 # 2, K", "R # 32", (8, 16, 16, 2)),
    "i8_all_padding": (I8, "1 # 2", "1 # 32", "1 # 16", "1 # 32", (1, 8, 8, 1)),
    "i8_padded_rows_outer_steps": (I8, "(G, H) # 16", "K # 32", "1 # 2, K", "(G, H) # 32", (8, 8, 8, 1)),
    "bf16_rows": (BF16, "H, G", "K # 16", "H, K", "G # 16", (4, 8, 8, 1)),
    "bf16_one_row_per_step": (BF16, "Q", "1 # 16", "Q / 2", "Q % 2 # 16", (2, 8, 1, 1)),
    "i4_wide_packet": (I4, "H, J", "G # 64", "H, G", "J # 64", (16, 16, 4, 1)),
    "f32_two_rows": (F32, "G, H", "K # 8", "G, K", "H # 8", (2, 8, 8, 1)),
    "i32_two_rows": (I32, "H", "R # 8", "R", "H # 8", (2, 8, 8, 1)),
}

REFUSED = {
    "i5_is_not_materialized": (I5, "R", "K # 64", "K", "R # 64", "TRANSPOSE-1"),
    "input_packet_half_flit": (I8, "R", "K # 16", "K", "R # 32", "TRANSPOSE-2"),
    "output_packet_two_flits": (BF16, "G", "K # 16", "K", "G # 32", "TRANSPOSE-3"),
    "input_packet_live_beyond_valid": (I8, "R", "S", "S", "R # 32", "TRANSPOSE-4"),
    "i4_packet_asks_doubled_packing": (I4, "J", "S # 64", "S", "J # 64", "TRANSPOSE-17"),
    "output_rows_beyond_limit": (BF16, "R", "K # 16", "K", "R # 16", "TRANSPOSE-5"),
    "rows_are_a_broadcast": (I8, "R", "K # 32", "K", "4 # 32", "TRANSPOSE-16"),
    "out_time_swapped": (I8, "G, R", "K # 32", "K, G", "R # 32", "TRANSPOSE-12"),
    "live_column_trimmed": (I8, "R", "K # 32", "K = 5", "R # 32", "TRANSPOSE-12"),
    "rows_not_from_time": (I8, "G, R", "K # 32", "G, K", "J % 8 # 32", "TRANSPOSE-13"),
    "rows_at_64_columns": (I8, "R, H, G", "K # 32", "H, G, K", "R # 32", "TRANSPOSE-14"),
    "row_digits_apart": (I8, "R / 2, G, R % 2", "K # 32", "G, K", "R # 32", "TRANSPOSE-15"),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted(name: str) -> None:
    dtype, t, p, t2, p2, (rows, cols, out_rows, ppc) = ACCEPTED[name]
    got = check_transpose(m(t), m(p), m(t2), m(p2), dtype)
    assert got == TransposeParams(rows, cols, out_rows, ppc, engine_shape(dtype).valid), got
    assert check_transpose_params(got, m(t), m(p), dtype) is None


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused(name: str) -> None:
    dtype, t, p, t2, p2, code = REFUSED[name]
    got = check_transpose(m(t), m(p), m(t2), m(p2), dtype)
    assert isinstance(got, Violation) and got.code == code, got
    assert got.message and got.help


def test_help_of_a_placement_failure_is_accepted() -> None:
    got = check_transpose(m("G, R"), m("K # 32"), m("K, G"), m("R # 32"), I8)
    out_time, out_packet = got.help.split("`")[1], got.help.split("`")[3]
    assert isinstance(check_transpose(m("G, R"), m("K # 32"), m(out_time), m(out_packet), I8), TransposeParams)


PARAMS_REFUSED = {
    "TRANSPOSE-6": TransposeParams(8, 16, 16, 1, 16),
    "TRANSPOSE-7": TransposeParams(8, 24, 16, 3, 8),
    "TRANSPOSE-8": TransposeParams(8, 8, 16, 1, 8),
    "TRANSPOSE-10": TransposeParams(1, 32, 32, 4, 8),
    "TRANSPOSE-11": TransposeParams(3, 8, 8, 1, 8),
    "TRANSPOSE-18": TransposeParams(2, 32, 32, 1, 32, 2),
}


@pytest.mark.parametrize("code", sorted(PARAMS_REFUSED))
def test_stated_params_refused(code: str) -> None:
    """Parameters stated for an i8 stream with Time `H` (2 steps) and packet `K # 32`."""
    got = check_transpose_params(PARAMS_REFUSED[code], m("H"), m("K # 32"), I8)
    assert got is not None and got.code == code, got


def test_stated_params_packet_padding() -> None:
    got = check_transpose_params(TransposeParams(2, 8, 8, 1, 8), m("H"), m("S"), I8)
    assert got is not None and got.code == "TRANSPOSE-9"


def test_every_transpose_rule_has_a_refusal() -> None:
    codes = {c[5] for c in REFUSED.values()} | set(PARAMS_REFUSED) | {"TRANSPOSE-9"}
    assert codes == set(RULES)


def test_engine_shape_table() -> None:
    """The book's parameter table: valid elements, max in_rows, legal in_cols."""
    assert engine_shape(I4) == engine_shape(DType.parse("i4")) and engine_shape(I4).valid == 16
    assert [(engine_shape(d).valid, engine_shape(d).max_rows, engine_shape(d).cols) for d in (I4, I8, BF16, F32)] == [
        (16, 16, (16, 32)), (8, 8, (8, 16, 32)), (8, 4, (8, 16, 32)), (8, 2, (8, 16, 32))]
    assert engine_shape(I5) is None


def test_the_transpose_op_replaces_time_and_packet_only() -> None:
    """The traced op's result type and engine parameters, and its rules' refusal."""
    from ir.data_movement_ops import Transpose
    from ir.ops import Value
    from ir.types import StreamType

    stream = StreamType(BF16, m("1"), m("1 # 2"), m("1 # 256"), m("H, G"), m("K # 16"))
    legal = Transpose(input=Value(0, stream), out_time=m("H, K"), out_packet=m("G # 16"))
    assert legal.check() is None
    assert legal.infer_type() == StreamType(BF16, m("1"), m("1 # 2"), m("1 # 256"), m("H, K"), m("G # 16"))
    assert legal.params() == TransposeParams(4, 8, 8, 1, 8)
    refused = Transpose(input=Value(0, stream), out_time=m("K, H"), out_packet=m("G # 16"))
    assert refused.check().code == "TRANSPOSE-12"


def test_ill_formed_mapping_is_a_coded_violation_not_a_traceback() -> None:
    got = check_transpose(m("G, G"), m("K # 32"), m("G, K"), m("R # 32"), I8)
    assert isinstance(got, Violation) and got.code.startswith("MAP-")
