"""Doubled input packing of the Transpose Engine (furiosa-opt v0.7): an 8- or 16-bit packet
with live elements past the 8th is read 16 elements at a time (`fetch_in_width_shift=1`);
a 4-bit packet never is (TRANSPOSE-17), and the stated parameters say which packing they
use (TRANSPOSE-6, TRANSPOSE-18)."""

from __future__ import annotations

import pytest

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.mapping import m
from ir.transpose.params import DOUBLED_BITS, packing_widths
from ir.transpose.rules import TransposeParams, check_transpose, check_transpose_params
from npu_opt import axes

axes(R=8, G=4, H=2, J=16, S=32, W=12, V=24)

I4, I8, U8, BF16, I16, F32, I32, F8 = (DType.parse(x) for x in ("i4", "i8", "u8", "bf16", "i16", "f32", "i32",
                                                                "f8e4m3"))

# name -> (dtype, time, packet, out_time, out_packet, TransposeParams fields)
DOUBLED = {
    # 16 live i8 per packet: one packet is one 16-column row.
    "i8_one_packet_row": (I8, "R", "J # 32", "J", "R # 32", (8, 16, 16, 1, 16, 1)),
    # two doubled packets per row: 32 columns.
    "u8_two_packet_row": (U8, "G, H", "J # 32", "H, J", "G # 32", (4, 32, 32, 2, 16, 1)),
    # bf16: 16 live elements fill the whole flit; 4 rows per transposed packet.
    "bf16_full_flit": (BF16, "H, G", "J", "H, J", "G # 16", (4, 16, 16, 1, 16, 1)),
    "i16_trimmed_rows": (I16, "G", "W # 16", "W", "G # 16", (4, 16, 12, 1, 16, 1)),
    "f8_two_packet_row": (F8, "R, H", "J # 32", "J, H", "R # 32", None),  # columns out of order: refused
    # 12 live i8: past the 8th, so doubled; the 4 padding columns are trimmed.
    "i8_twelve_live": (I8, "R", "W # 32", "W", "R # 32", (8, 16, 12, 1, 16, 1)),
}

@pytest.mark.parametrize("name", sorted(n for n, c in DOUBLED.items() if c[5] is not None))
def test_doubled_packing_is_chosen_past_eight_live_elements(name: str) -> None:
    dtype, t, p, t2, p2, want = DOUBLED[name]
    got = check_transpose(m(t), m(p), m(t2), m(p2), dtype)
    assert got == TransposeParams(*want), got
    assert got.fetch_in_width_shift == 1 and got.valid_size_per_packet == 16
    assert check_transpose_params(got, m(t), m(p), dtype) is None


def test_doubled_columns_must_still_be_in_order() -> None:
    dtype, t, p, t2, p2, _ = DOUBLED["f8_two_packet_row"]
    got = check_transpose(m(t), m(p), m(t2), m(p2), dtype)
    assert isinstance(got, Violation) and got.code == "TRANSPOSE-12", got


@pytest.mark.parametrize("dtype,t,p,t2,p2,want", [
    (I8, "G, H", "R # 32", "G, R", "H # 32", (2, 8, 8, 1, 8, 0)),
    (BF16, "G", "R # 16", "R", "G # 16", (4, 8, 8, 1, 8, 0)),
    (I4, "H, J", "R # 64", "H, R", "J # 64", (16, 16, 8, 1, 16, 0)),
], ids=["i8", "bf16", "i4"])
def test_base_packing_up_to_eight_live_elements(dtype, t, p, t2, p2, want) -> None:
    """At most 8 live elements (16 for i4): the base packing, as before v0.7."""
    got = check_transpose(m(t), m(p), m(t2), m(p2), dtype)
    assert got == TransposeParams(*want), got


def test_packing_widths_table() -> None:
    """Base and doubled valid widths per element size (the book's parameter table)."""
    assert [packing_widths(d) for d in (I4, I8, U8, F8, BF16, I16, F32, I32)] == [
        (16,), (8, 16), (8, 16), (8, 16), (8, 16), (8, 16), (8,), (8,)]
    assert DOUBLED_BITS == (8, 16)
    assert packing_widths(DType.parse("i5")) == ()


@pytest.mark.parametrize("dtype,time,packet,out_time,out_packet,code", [
    (I4, "J", "S # 64", "S", "J # 64", "TRANSPOSE-17"),     # 32 live i4: doubled 4-bit packing
    (I4, "J", "(S, H) # 64", "S, H", "J # 64", "TRANSPOSE-4"),  # 64 live i4: past any packing
    (I8, "R", "V # 32", "V", "R # 32", "TRANSPOSE-4"),       # 24 live i8: past the doubled 16
    (BF16, "R", "J", "J", "R # 16", "TRANSPOSE-5"),          # 8 rows of bf16 exceed the 4 per packet
    (I8, "R, H, G", "J # 32", "H, G, J", "R # 32", "TRANSPOSE-14"),  # 8 doubled packets: 128 columns
], ids=["i4-doubled", "i4-full", "i8-24-live", "bf16-8-rows", "i8-128-columns"])
def test_refusals_around_doubled_packing(dtype, time, packet, out_time, out_packet, code) -> None:
    got = check_transpose(m(time), m(packet), m(out_time), m(out_packet), dtype)
    assert isinstance(got, Violation) and got.code == code, got
    assert got.message and got.help


@pytest.mark.parametrize("params,dtype,code", [
    (TransposeParams(8, 16, 16, 1, 16, 0), I8, "TRANSPOSE-6"),     # 16 valid without the shift
    (TransposeParams(8, 8, 8, 1, 8, 1), I8, "TRANSPOSE-6"),        # the shift with 8 valid
    (TransposeParams(8, 16, 16, 1, 16, 2), I8, "TRANSPOSE-18"),    # shift 2
    (TransposeParams(8, 16, 16, 1, 16, -1), I8, "TRANSPOSE-18"),   # shift -1
    (TransposeParams(16, 32, 32, 1, 32, 1), I4, "TRANSPOSE-18"),   # doubled i4
    (TransposeParams(2, 16, 16, 1, 16, 1), F32, "TRANSPOSE-18"),   # doubled f32
    (TransposeParams(8, 8, 8, 1, 16, 1), I8, "TRANSPOSE-7"),       # 8 columns cannot hold a doubled packet
], ids=["no-shift", "shift-8-valid", "shift-2", "shift-negative", "i4", "f32", "cols-8"])
def test_stated_packing_refused(params, dtype, code) -> None:
    packet = {I4: "S # 64", F32: "H, R"}.get(dtype, "J # 32")
    got = check_transpose_params(params, m("G, H"), m(packet), dtype)
    assert got is not None and got.code == code, got


def test_stated_doubled_params_accepted_for_each_doubled_dtype() -> None:
    for dtype, packet in ((I8, "J # 32"), (U8, "J # 32"), (F8, "J # 32"), (BF16, "J"), (I16, "J")):
        assert check_transpose_params(TransposeParams(4, 16, 16, 1, 16, 1), m("G, H"), m(packet), dtype) is None
